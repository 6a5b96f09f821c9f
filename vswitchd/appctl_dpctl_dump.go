package vswitchd

import (
	"fmt"
	"strings"

	"github.com/govswitch/govswitch/ofproto"
)

// dpctlDumpOpts are dpctl/dump-flows' arguments, as ovs-vswitchd takes
// them: -m (--more) prints UFIDs and, unless --no-names follows, names
// ports; --names names the input port and the output actions' ports (OVS's
// test suite compares "in_port(ovs-p1)...actions:br0,ovs-p2"); an optional
// datapath, as system@NAME or NAME.
type dpctlDumpOpts struct {
	verbose, names bool
	dp             string
}

func parseDpctlDumpArgs(args []string) (dpctlDumpOpts, error) {
	var o dpctlDumpOpts
	namesSet := false
	for _, a := range args {
		switch {
		case a == "-m" || a == "--more":
			o.verbose = true
		case a == "--names":
			o.names, namesSet = true, true
		case a == "--no-names":
			o.names, namesSet = false, true
		case strings.HasPrefix(a, "filter=") || strings.HasPrefix(a, "type=") || strings.HasPrefix(a, "pmd="):
			return o, fmt.Errorf("dpctl/dump-flows: %s is not supported by govswitchd (-m, --names, --no-names and a datapath are)", a)
		case strings.HasPrefix(a, "-"):
			return o, fmt.Errorf("dpctl/dump-flows: unknown option %s", a)
		case o.dp == "":
			o.dp = a
		default:
			return o, fmt.Errorf("dpctl/dump-flows: one datapath at most (%s and %s given)", o.dp, a)
		}
	}
	if o.verbose && !namesSet {
		o.names = true // as ovs-vswitchd's -m does
	}
	return o, nil
}

// portNames maps b's datapath port numbers to port names, or is nil when
// ports go by number.
// backerPortNames is portNames for every bridge on the datapath bk.
func (o *dpctlDumpOpts) backerPortNames(bk *ofproto.Backer) map[uint32]string {
	if !o.names {
		return nil
	}
	names := map[uint32]string{}
	for _, b := range bk.Bridges() {
		for dp, n := range o.portNames(b) {
			names[dp] = n
		}
	}
	return names
}

func (o *dpctlDumpOpts) portNames(b *ofproto.Bridge) map[uint32]string {
	if !o.names {
		return nil
	}
	names := map[uint32]string{}
	for _, p := range b.Ports.Snapshot().List() {
		names[p.DPPort] = p.Name
	}
	return names
}
