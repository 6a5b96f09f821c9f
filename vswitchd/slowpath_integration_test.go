package vswitchd

import (
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The userspace slow path in the kernel bed: h1 pings 10.0.0.99, an
// address nobody has, answered by the switch's own flows as OVN answers for
// a router port: an ARP responder (load/move/set_field into ARP fields,
// which the kernel cannot set) and an ICMP echo responder (icmp_type, which
// it cannot set either). Both switches run the same flows in the same boot.

const responderIP, responderMAC = "10.0.0.99", "00:00:5e:00:00:99"

var responderFlows = []string{
	"priority=100,arp,arp_op=1,arp_tpa=" + responderIP + ",actions=" +
		"move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:" + responderMAC + "->eth_src," +
		"load:0x2->NXM_OF_ARP_OP[],move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],set_field:" + responderMAC + "->arp_sha," +
		"move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],set_field:" + responderIP + "->arp_spa,in_port",
	"priority=100,icmp,nw_dst=" + responderIP + ",icmp_type=8,icmp_code=0,actions=" +
		"move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:" + responderMAC + "->eth_src," +
		"move:NXM_OF_IP_SRC[]->NXM_OF_IP_DST[],set_field:" + responderIP + "->ip_src,set_field:0->icmp_type,in_port",
	"priority=10,actions=NORMAL",
}

// slowRun is what one switch did with the responder's traffic.
type slowRun struct {
	loss     int
	neigh    string   // h1's neighbour entry for the responder
	dpflows  []string // the datapath flows of the responder's traffic, counters and pid masked
	arpTrace string   // ofproto/trace of an ARP request for the responder
	// dpctlSlow counts the flows ovs-dpctl dump-flows shows slow-pathed.
	dpctlSlow int
}

var (
	dpCountersRE = regexp.MustCompile(`packets:\d+, bytes:\d+, used:[^,]+, `)
	dpPIDRE      = regexp.MustCompile(`pid=\d+`)
	dpInPortRE   = regexp.MustCompile(`in_port\(\d+\)`)
	neighRE      = regexp.MustCompile(`lladdr ([0-9a-f:]+)`)
)

func (b *bed) responderTraffic(t *testing.T, appctl func(args ...string) string) slowRun {
	t.Helper()
	b.h1.Exec("ip", "neigh", "flush", "all")
	appctl("dpctl/del-flows")
	var r slowRun
	out, _ := b.h1.Exec("ping", "-c", "3", "-i", "0.3", "-W", "2", responderIP)
	r.loss = parseLoss(t, out)
	n, _ := b.h1.Exec("ip", "neigh", "show", responderIP)
	if m := neighRE.FindStringSubmatch(n); m != nil {
		r.neigh = m[1]
	}
	for _, l := range strings.Split(appctl("dpctl/dump-flows"), "\n") {
		if !strings.Contains(l, responderIP) && !strings.Contains(l, "slow_path") {
			continue
		}
		l = dpCountersRE.ReplaceAllString(l, "")
		l = dpPIDRE.ReplaceAllString(l, "pid=N")
		l = dpInPortRE.ReplaceAllString(l, "in_port(P)")
		r.dpflows = append(r.dpflows, strings.TrimSpace(l))
	}
	sort.Strings(r.dpflows)
	// The real ovs-dpctl reads the kernel's flows and decodes the
	// userspace action's cookie with OVS's own struct.
	if out, err := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput(); err != nil {
		t.Errorf("ovs-dpctl dump-flows: %v\n%s", err, out)
	} else {
		r.dpctlSlow = strings.Count(string(out), ",slow_path(action))")
	}
	r.arpTrace = appctl("ofproto/trace", b.name, "in_port=1,arp,arp_op=1,arp_spa=10.0.0.1,arp_tpa="+responderIP+
		",dl_src="+b.mac1.String()+",dl_dst=ff:ff:ff:ff:ff:ff,arp_sha="+b.mac1.String())
	// The reply goes back out h1's port, whose datapath number depends
	// on the ports earlier tests in the bed made and deleted: named.
	h1 := dpPort(t, b.v1)
	lines := strings.Split(r.arpTrace, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "Datapath actions:") && strings.HasSuffix(l, ","+h1) {
			lines[i] = strings.TrimSuffix(l, h1) + "h1"
		}
	}
	r.arpTrace = strings.Join(lines, "\n")
	return r
}

// TestIntegrationARPResponder: h1 resolves and pings an address answered
// by ARP and ICMP responder flows, through govswitchd as through
// ovs-vswitchd 3.1: the same loss (none), the same neighbour entry, the
// same slow-pathed datapath flows in dpctl/dump-flows
// (userspace(pid=N,slow_path(action))) and a trace that says so.
func TestIntegrationARPResponder(t *testing.T) {
	b := newBed(t)
	var ovs slowRun
	b.withOVS(t, responderFlows, func(appctl func(args ...string) string) { ovs = b.responderTraffic(t, appctl) })
	t.Logf("ovs-vswitchd: loss %d, neighbour %s, datapath flows:\n%s\ntrace:\n%s", ovs.loss, ovs.neigh,
		strings.Join(ovs.dpflows, "\n"), ovs.arpTrace)

	appctl := b.startCt(t)
	b.addFlows(t, responderFlows)
	gov := b.responderTraffic(t, appctl)
	t.Logf("govswitchd: loss %d, neighbour %s, datapath flows:\n%s\ntrace:\n%s", gov.loss, gov.neigh,
		strings.Join(gov.dpflows, "\n"), gov.arpTrace)

	if gov.loss != 0 || gov.neigh != responderMAC {
		t.Errorf("govswitchd: %d of 3 pings lost, neighbour entry %q, want 0 and %s", gov.loss, gov.neigh, responderMAC)
	}
	if gov.loss != ovs.loss || gov.neigh != ovs.neigh {
		t.Errorf("govswitchd lost %d pings and resolved %q; ovs-vswitchd %d and %q", gov.loss, gov.neigh, ovs.loss, ovs.neigh)
	}
	if strings.Join(gov.dpflows, "\n") != strings.Join(ovs.dpflows, "\n") {
		t.Errorf("datapath flows differ:\ngovswitchd:\n%s\novs-vswitchd:\n%s", strings.Join(gov.dpflows, "\n"), strings.Join(ovs.dpflows, "\n"))
	}
	slow := 0
	for _, f := range gov.dpflows {
		if strings.HasSuffix(f, "actions:userspace(pid=N,slow_path(action))") {
			slow++
		}
	}
	if gov.dpctlSlow != slow || ovs.dpctlSlow != gov.dpctlSlow {
		t.Errorf("ovs-dpctl dump-flows shows %d slow-pathed flows under govswitchd, %d under ovs-vswitchd; dpctl/dump-flows %d",
			gov.dpctlSlow, ovs.dpctlSlow, slow)
	}
	if slow < 2 {
		t.Errorf("%d slow-pathed datapath flows, want the ARP and the ICMP responder's", slow)
	}
	// The trace's last lines (megaflow, datapath actions, why) are OVS's.
	tail := func(tr string) string {
		if i := strings.Index(tr, "Megaflow:"); i >= 0 {
			return strings.TrimSpace(tr[i:])
		}
		return tr
	}
	if tail(gov.arpTrace) != tail(ovs.arpTrace) {
		t.Errorf("ofproto/trace ends differ:\ngovswitchd:\n%s\novs-vswitchd:\n%s", tail(gov.arpTrace), tail(ovs.arpTrace))
	}
	const why = "This flow is handled by the userspace slow path because it:\n  - Uses action(s) not supported by datapath."
	for name, tr := range map[string]string{"govswitchd": gov.arpTrace, "ovs-vswitchd": ovs.arpTrace} {
		if !strings.Contains(tr, why) {
			t.Errorf("%s's trace does not explain the slow path:\n%s", name, tr)
		}
	}
}
