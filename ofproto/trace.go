package ofproto

import (
	"fmt"
	"strings"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Trace translates a packet with key (InPort in datapath numbering) as
// the upcall path would, without learning, and describes it in the shape
// of ovs-appctl ofproto/trace: the flow, the rules it matched table by
// table, the megaflow and the datapath actions.
func (b *Bridge) Trace(key *flow.Key) string {
	var out Out
	b.X.Translate(key, time.Now(), false, &out)
	var sb strings.Builder
	fmt.Fprintf(&sb, "Flow: %s\n\nbridge(%q)\n%s\n", key.String(), b.Name, strings.Repeat("-", len(b.Name)+10))
	if out.NRules == 0 && out.Dropped == "" {
		sb.WriteString(" 0. No match.\n    drop\n")
	}
	for i := 0; i < out.NRules; i++ {
		r := out.Rules[i]
		m := openflow.Match{Key: r.Match.Key, Mask: r.Match.Mask}
		match := m.String()
		if match == "any" {
			match = "" // OVS prints a catch-all rule's priority alone
		}
		if match != "" {
			match += ", "
		}
		fmt.Fprintf(&sb, " %d. %spriority %d", r.Value.Table, match, r.Priority)
		if r.Value.Cookie != 0 {
			fmt.Fprintf(&sb, ", cookie %#x", r.Value.Cookie)
		}
		fmt.Fprintf(&sb, "\n    %s\n", InstructionsString(&r.Value.Instructions))
	}
	if out.Dropped != "" {
		fmt.Fprintf(&sb, "    >>>> %s <<<<\n", out.Dropped)
	}
	wc := out.WC
	datapath.FitMask(key, &wc)
	fmt.Fprintf(&sb, "\nFinal flow: unchanged\nMegaflow: %s\nDatapath actions: %s\n",
		flow.Format(key, &wc), datapath.FormatActions(out.Actions))
	return sb.String()
}

// InstructionsString formats a rule's instructions roughly as ovs-ofctl
// prints actions, for traces and logs.
func InstructionsString(in *openflow.Instructions) string {
	var parts []string
	for i := range in.Apply {
		parts = append(parts, ActionString(&in.Apply[i]))
	}
	if in.Clear {
		parts = append(parts, "clear_actions")
	}
	if in.Write != nil {
		var w []string
		for i := range in.Write {
			w = append(w, ActionString(&in.Write[i]))
		}
		parts = append(parts, "write_actions("+strings.Join(w, ",")+")")
	}
	if in.WriteMetadata {
		parts = append(parts, fmt.Sprintf("write_metadata:%#x/%#x", in.Metadata, in.MetadataMask))
	}
	if in.GotoTable {
		parts = append(parts, fmt.Sprintf("goto_table:%d", in.Table))
	}
	if len(parts) == 0 {
		return "drop"
	}
	return strings.Join(parts, ",")
}

// ActionString formats one action as ovs-ofctl names it.
func ActionString(a *openflow.Action) string {
	switch a.Type {
	case openflow.ActOutput:
		switch a.Port {
		case openflow.PortInPort:
			return "IN_PORT"
		case openflow.PortNormal:
			return "NORMAL"
		case openflow.PortFlood:
			return "FLOOD"
		case openflow.PortAll:
			return "ALL"
		case openflow.PortController:
			return fmt.Sprintf("CONTROLLER:%d", a.MaxLen)
		case openflow.PortLocal:
			return "LOCAL"
		case openflow.PortTable:
			return "TABLE"
		}
		return fmt.Sprintf("output:%d", a.Port)
	case openflow.ActSetVLANVID:
		return fmt.Sprintf("mod_vlan_vid:%d", a.VLANVID)
	case openflow.ActSetVLANPCP:
		return fmt.Sprintf("mod_vlan_pcp:%d", a.VLANPCP)
	case openflow.ActStripVLAN:
		return "strip_vlan"
	case openflow.ActPushVLAN:
		return fmt.Sprintf("push_vlan:%#x", a.EthType)
	case openflow.ActSetField:
		var k flow.Key
		a.ApplySetField(&k)
		var buf [16]byte
		v, _ := a.Field.Value(buf[:0], &k)
		return fmt.Sprintf("set_field:%x->%s", v, a.Field)
	case openflow.ActResubmit:
		in := ""
		if a.Port != openflow.PortInPort {
			in = fmt.Sprint(a.Port)
		}
		if a.Table == openflow.TableAll {
			return fmt.Sprintf("resubmit:%s", in)
		}
		return fmt.Sprintf("resubmit(%s,%d)", in, a.Table)
	case openflow.ActSetNwTTL:
		return fmt.Sprintf("mod_nw_ttl:%d", a.TTL)
	}
	return a.Type.String()
}
