package vswitchd

import (
	"fmt"
	"strings"
	"testing"
)

// groupPhases spread the UDP flows by select groups, which both switches
// hash in the datapath: hash(l4(0)) and a recirculation, then one flow
// per dp_hash value in use.
var groupPhases = []spreadPhase{
	{name: "select, no selection method", flows: []string{"table=0,priority=100,in_port=1,udp,actions=group:1"},
		sport: 5000, groups: []string{"group_id=1,type=select,bucket=output:2,bucket=output:3,bucket=output:4"}},
	{name: "select, dp_hash, weights 1 3 4", flows: []string{"table=0,priority=100,in_port=1,udp,actions=group:1"},
		sport: 6000, groups: []string{"group_id=1,type=select,selection_method=dp_hash,bucket=weight:1,output:2,bucket=weight:3,output:3,bucket=weight:4,output:4"}},
	{name: "select, watch_port 3 without link", flows: []string{"table=0,priority=100,in_port=1,udp,actions=group:1"},
		p3Off: true, sport: 5000, groups: []string{"group_id=1,type=select,bucket=output:2,bucket=watch_port:3,output:3,bucket=output:4"}},
}

// TestIntegrationSelectGroupDPHash: select groups spread real UDP flows
// as ovs-vswitchd 3.1 spreads them on the same kernel, in the same bed:
// each of 24 flows (two frames each) reaches the same receiver under both
// switches in every phase (no selection method, selection_method=dp_hash
// with weights, a dead watched bucket), the first-stage datapath flow
// hashes in the kernel (hash(l4(0)),recirc) with no L4 field in its
// mask, the second stage matches dp_hash under the group's table mask,
// and the datapath flows' keys and masks are the same for both.
func TestIntegrationSelectGroupDPHash(t *testing.T) {
	b := newSpreadBed(t)

	ovs, gov := b.runBoth(t, groupPhases, "--", "set", "Bridge", b.name, "protocols=OpenFlow10,OpenFlow13,OpenFlow15")

	for i, ph := range groupPhases {
		if fmt.Sprint(gov.arrivals[i]) != fmt.Sprint(ovs.arrivals[i]) {
			t.Errorf("%s: receivers per flow\n govswitchd   %v\n ovs-vswitchd %v", ph.name, gov.arrivals[i], ovs.arrivals[i])
		}
		hosts := map[int]bool{}
		for _, h := range gov.arrivals[i] {
			if h <= 0 {
				t.Errorf("%s: a flow was lost or duplicated: %v", ph.name, gov.arrivals[i])
				break
			}
			hosts[h] = true
		}
		if want := map[bool]int{true: 2, false: 3}[ph.p3Off]; len(hosts) != want {
			t.Errorf("%s: flows reached receivers %v, want %d of them", ph.name, hosts, want)
		}
		if gov.dumps[i] != ovs.dumps[i] {
			t.Errorf("%s: dump-flows\n govswitchd:\n%s\n ovs-vswitchd:\n%s", ph.name, gov.dumps[i], ovs.dumps[i])
		}
		for name, dump := range map[string]string{"govswitchd": gov.dpDumps[i], "ovs-vswitchd": ovs.dpDumps[i]} {
			if !strings.Contains(dump, "actions:hash(l4(0)),recirc(") || !strings.Contains(dump, "dp_hash(") {
				t.Errorf("%s: %s's datapath flows do not hash in the kernel:\n%s", ph.name, name, dump)
			}
		}
		if len(gov.dpKeys[i]) != 2 {
			t.Errorf("%s: datapath flows %v, want the two stages", ph.name, gov.dpKeys[i])
		}
		if fmt.Sprint(gov.dpKeys[i]) != fmt.Sprint(ovs.dpKeys[i]) {
			t.Errorf("%s: datapath flow keys\n govswitchd:\n %s\n ovs-vswitchd:\n %s", ph.name,
				strings.Join(gov.dpKeys[i], "\n "), strings.Join(ovs.dpKeys[i], "\n "))
		}
	}
}
