package vswitchd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

const traceUsage = "{[dp_name] odp_flow | bridge br_flow} [-generate]"

// trace is ofproto/trace. The flow is either in the datapath syntax
// ovs-dpctl prints (in_port(1),eth(...),..., in_port a datapath port
// number or a port name), optionally after the datapath's or bridge's
// name, or in ovs-ofctl's syntax after the bridge's name
// (in_port=p1,dl_src=...,tcp,tp_dst=80). -generate lets NORMAL learn
// from the traced packet, as a real one would. Tracing a given packet
// (a hex argument) and OVS's other options are refused.
func (d *Daemon) trace(args []string) (string, error) {
	learn := false
	var rest []string
	for _, a := range args {
		switch {
		case a == "-generate":
			learn = true
		case strings.HasPrefix(a, "-"):
			return "", fmt.Errorf("ofproto/trace: option %s is not supported (only -generate is)", a)
		default:
			rest = append(rest, a)
		}
	}
	var b *ofproto.Bridge
	var text string
	switch len(rest) {
	case 1:
		text = rest[0]
		if !isODPFlow(text) {
			return "", errors.New("ofproto/trace: an OpenFlow flow needs its bridge: ofproto/trace BRIDGE FLOW")
		}
		// The bridge is the input port's, as ovs-vswitchd finds it.
	case 2:
		text = rest[1]
		name := rest[0]
		bk := d.Backer()
		if _, dp, ok := strings.Cut(name, "@"); ok || bk != nil && name == bk.DP.Name() {
			// A datapath name: the flow's input port names the bridge.
			if !isODPFlow(text) {
				return "", errors.New("ofproto/trace: an OpenFlow flow needs its bridge: ofproto/trace BRIDGE FLOW")
			}
			if ok && (bk == nil || dp != bk.DP.Name()) {
				return "", fmt.Errorf("%s: unknown datapath", rest[0])
			}
		} else if b = d.Bridge(name); b == nil {
			return "", fmt.Errorf("%s: unknown bridge", rest[0])
		}
	case 0:
		return "", errors.New("ofproto/trace: no flow given")
	default:
		return "", errors.New("ofproto/trace: tracing a given packet is not supported; give the flow only")
	}
	var key flow.Key
	if isODPFlow(text) {
		bk := d.Backer()
		if bk == nil {
			return "", errors.New("ofproto/trace: no datapath exists")
		}
		byName := map[string]uint32{}
		if vps, err := bk.DP.Vports(); err == nil {
			for _, vp := range vps {
				byName[vp.Name] = vp.PortNo
			}
		}
		k, mask, err := flow.ParseWithPorts(text, byName)
		if err != nil {
			return "", fmt.Errorf("ofproto/trace: %v (give a datapath flow such as in_port(1),eth(src=..,dst=..),eth_type(0x0800),ipv4(...))", err)
		}
		if mask.InPort == 0 {
			return "", errors.New("ofproto/trace: the flow needs an in_port")
		}
		owner := bk.Owner(k.InPort)
		if owner == nil || b != nil && owner != b {
			return "", fmt.Errorf("ofproto/trace: in_port(%d) is no port of %s", k.InPort, or(rest[0], "any bridge"))
		}
		b = owner
		key = k
	} else {
		ports := b.Ports.Snapshot()
		byName := func(n string) (uint32, bool) {
			for _, p := range ports.List() {
				if p.Name == n {
					return p.OFPort, true
				}
			}
			return 0, false
		}
		k, err := openflow.ParseFlowText(text, byName)
		if err != nil {
			return "", fmt.Errorf("Bad openflow flow syntax: %v", err)
		}
		p := ports.ByOF(k.InPort)
		if p == nil {
			return "", fmt.Errorf("Bad openflow flow syntax: in_port=%d: the bridge has no such port (give in_port)", k.InPort)
		}
		k.InPort = p.DPPort
		key = k
	}
	if isODPFlow(text) {
		return b.TraceDatapath(&key, learn), nil
	}
	return b.TraceLearn(&key, learn), nil
}

// isODPFlow tells the datapath syntax (attributes with parentheses) from
// ovs-ofctl's (name=value).
func isODPFlow(s string) bool { return strings.Contains(s, "(") }
