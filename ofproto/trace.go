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
// of ovs-vswitchd's ofproto/trace: the flow, the rules it matched table by
// table, the final flow, the megaflow and the datapath actions. The
// last two lines, "Megaflow: ..." and "Datapath actions: ...", are what
// scripts and OVS's tests read.
func (b *Bridge) Trace(key *flow.Key) string { return b.TraceLearn(key, false) }

// TraceLearn is Trace that lets NORMAL learn the source address when
// learn is set (ofproto/trace -generate), as a real packet would.
func (b *Bridge) TraceLearn(key *flow.Key, learn bool) string { return b.trace(key, learn, false) }

// TraceDatapath is TraceLearn for a flow given in the datapath's syntax
// (ofproto/trace's odp_flow). As ovs-vswitchd finds the bridge of such a
// flow, a recirculated one's OpenFlow in_port, which its Flow and
// Megaflow lines show, is the one its frozen state keeps (ANY after a
// bond's hash, which keeps none) rather than the datapath port's.
func (b *Bridge) TraceDatapath(key *flow.Key, learn bool) string { return b.trace(key, learn, true) }

func (b *Bridge) trace(key *flow.Key, learn, odp bool) string {
	var out Out
	out.trace = &traceLog{}
	b.X.Translate(key, time.Now(), learn, &out)
	ports := b.Ports.Snapshot()
	of := *key // the packet in OpenFlow numbering
	if p := ports.ByDP(key.InPort); p != nil {
		of.InPort = p.OFPort
	}
	if odp && key.RecircID != 0 {
		if s, ok := recircs.lookup(key.RecircID, time.Now()); ok && s.x == b.X {
			of.InPort = s.inPort
			if s.bond != nil {
				of.InPort = openflow.PortAny
			}
		}
	}
	var sb strings.Builder
	sb.WriteString("Flow: ")
	sb.Write(appendFlowText(nil, &of))
	fmt.Fprintf(&sb, "\n\nbridge(%q)\n%s\n", b.Name, strings.Repeat("-", len(b.Name)+10))
	lines := out.trace.lines
	if out.NRules == 0 && out.Dropped == "" && len(lines) == 0 {
		sb.WriteString(" 0. No match.\n    drop\n")
	}
	// The translation's own lines (trace_log.go) go after the rule they
	// followed: those before any rule (a thaw) first.
	printLines := func(upto int) {
		for len(lines) > 0 && lines[0].after <= upto {
			sb.WriteString(lines[0].text)
			sb.WriteByte('\n')
			lines = lines[1:]
		}
	}
	printLines(0)
	cur := b.X.ID
	for i := 0; i < out.NRules; i++ {
		b.traceRule(&sb, &out, i, &cur)
		printLines(i + 1)
	}
	printLines(len(out.Rules) + 1)
	if out.Dropped != "" && out.trace.failed == "" {
		// Indented as OVS indents an error under a rule: one level, and
		// the " >>>> " of its kind.
		fmt.Fprintf(&sb, "     >>>> %s <<<<\n", out.Dropped)
	}
	sb.WriteString("\nFinal flow: ")
	if final := out.ctx.flow; final == of {
		sb.WriteString("unchanged")
	} else {
		sb.Write(appendFlowText(nil, &final))
	}
	sb.WriteString("\nMegaflow: ")
	wc := out.WC
	// As ovs-vswitchd prints it: header bits of an absent header are not
	// shown (for an untagged packet the datapath matches "no tag" anyway).
	for i := range wc.VLANs {
		if key.VLANs[i].TCI&flow.VLANPresent == 0 {
			wc.VLANs[i] = flow.VLAN{}
		}
	}
	if key.EthType != flow.EthTypeMPLS && key.EthType != flow.EthTypeMPLSM {
		wc.MPLSLSE = 0
	}
	sb.Write(openflow.AppendMatchText(nil, &of, &wc, openflow.MatchText{Priority: openflow.DefaultPriority, Megaflow: true}))
	fmt.Fprintf(&sb, "\nDatapath actions: %s", datapath.FormatActions(out.Actions))
	if out.trace.failed != "" {
		fmt.Fprintf(&sb, "\nTranslation failed (%s), packet is dropped.", out.trace.failed)
	} else if out.Slow != 0 {
		// As ovs-vswitchd's explain_slow_path.
		sb.WriteString("\nThis flow is handled by the userspace slow path because it:")
		for _, why := range datapath.SlowPathExplanations(out.Slow) {
			sb.WriteString("\n  - " + why + ".")
		}
	}
	sb.WriteByte('\n')
	return sb.String()
}

// traceRule writes rule i of out as OVS's trace heads a table's match,
// with its actions; cur is the bridge the trace is in, which a rule of
// another (through a patch port) changes, under a heading of its own.
// Counters (a patch port's, a group's, a bucket's) write nothing.
func (b *Bridge) traceRule(sb *strings.Builder, out *Out, i int, cur *uint16) {
	r := out.Rules[i]
	if isPatchCounter(r) || isCounter(r) {
		return
	}
	if id := out.RuleBridges[i]; id != *cur {
		// Through a patch port into another bridge, as OVS's trace
		// heads the peer's part.
		*cur = id
		if pb := b.Backer.set.Load().byID[id]; pb != nil {
			fmt.Fprintf(sb, "\n    bridge(%q)\n    %s\n", pb.Name, strings.Repeat("-", len(pb.Name)+10))
		}
	}
	match := openflow.AppendMatchText(nil, &r.Match.Key, &r.Match.Mask, openflow.MatchText{Priority: openflow.DefaultPriority})
	if len(match) > 0 {
		match = append(match, ", "...)
	}
	fmt.Fprintf(sb, "%2d. %spriority %d", r.Value.Table, match, r.Priority)
	if r.Value.Cookie != 0 {
		fmt.Fprintf(sb, ", cookie %#x", r.Value.Cookie)
	}
	sb.WriteByte('\n')
	acts := instructionList(&r.Value.Instructions)
	if t := out.trace; t != nil && t.cutRule == i+1 && t.cutActs < len(acts) {
		acts = acts[:t.cutActs]
	}
	for _, a := range acts {
		fmt.Fprintf(sb, "    %s\n", a)
	}
}

// InstructionsString formats a rule's instructions roughly as ovs-ofctl
// prints actions, for traces and logs.
func InstructionsString(in *openflow.Instructions) string {
	parts := instructionList(in)
	if len(parts) == 0 {
		return "drop"
	}
	return strings.Join(parts, ",")
}

// instructionList returns a rule's actions and instructions one by one,
// as ovs-ofctl names them; none means drop.
func instructionList(in *openflow.Instructions) []string {
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
		return []string{"drop"}
	}
	return parts
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
		if a.Masked {
			return fmt.Sprintf("set_field:%x/%x->%s", v, a.Mask[:len(v)], a.Field)
		}
		return fmt.Sprintf("set_field:%x->%s", v, a.Field)
	case openflow.ActResubmit:
		in := ""
		if a.Port != openflow.PortInPort {
			in = fmt.Sprint(a.Port)
		}
		ct := ""
		if a.CtOrig {
			ct = ",ct"
		}
		if a.Table == openflow.TableAll {
			if ct == "" {
				return fmt.Sprintf("resubmit:%s", in)
			}
			return fmt.Sprintf("resubmit(%s,%s)", in, ct)
		}
		return fmt.Sprintf("resubmit(%s,%d%s)", in, a.Table, ct)
	case openflow.ActGroup:
		return fmt.Sprintf("group:%d", a.Group)
	case openflow.ActSetNwTTL:
		return fmt.Sprintf("mod_nw_ttl:%d", a.TTL)
	case openflow.ActDeleteField:
		return "delete_field:" + a.Field.String()
	case openflow.ActFinTimeout:
		// As ovs-ofctl's format_FIN_TIMEOUT: only the timeouts set.
		var parts []string
		idle, hard := a.FinTimeouts()
		if idle != 0 {
			parts = append(parts, fmt.Sprintf("idle_timeout=%d", idle))
		}
		if hard != 0 {
			parts = append(parts, fmt.Sprintf("hard_timeout=%d", hard))
		}
		return "fin_timeout(" + strings.Join(parts, ",") + ")"
	}
	return a.Type.String()
}

// appendFlowText appends packet k, every field it has, as ovs-ofctl
// writes a match: the trace's "Flow:" and "Final flow:" lines.
func appendFlowText(b []byte, k *flow.Key) []byte {
	m := openflow.FlowMask(k)
	// A packet's flow has its packet type, which OVS prints once the
	// packet has a recirc_id (as in a megaflow).
	return openflow.AppendMatchText(b, k, &m, openflow.MatchText{Priority: openflow.DefaultPriority, Megaflow: true})
}
