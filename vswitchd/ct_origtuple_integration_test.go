package vswitchd

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/internal/testbed"
)

// ctOrigTupleFlows judge replies by the connection they belong to, as
// OVS's "conntrack - FTP SNAT orig tuple" tests do: a reply from h2 is
// looked up in the ACL table (3) by its connection's original-direction
// tuple (resubmit(,3,ct)), which accepts connections h1 opened to port
// 7000 only; the verdict table (4) forwards what was accepted.
var ctOrigTupleFlows = []string{
	"table=0,priority=100,arp,actions=NORMAL",
	"table=0,priority=1,ip,ct_state=-trk,actions=ct(table=1)",
	"table=1,priority=10,ip,in_port=1,ct_state=+trk+new,actions=ct(commit),output:2",
	"table=1,priority=10,ip,in_port=1,ct_state=+trk+est-rpl,actions=output:2",
	"table=1,priority=10,ip,in_port=2,ct_state=-rel+rpl+trk-inv,actions=resubmit(,3,ct),resubmit(,4)",
	"table=3,priority=10,tcp,nw_src=10.0.0.1,tp_dst=7000,actions=load:1->NXM_NX_REG2[]",
	"table=3,priority=0,actions=load:0->NXM_NX_REG2[]",
	"table=4,priority=10,reg2=1,actions=output:1",
	"table=4,priority=0,actions=drop",
}

// origTupleRun is what one switch did with the traffic.
type origTupleRun struct {
	accepted, refused bool   // the exchange to port 7000, to port 7001, succeeded
	dpflows           string // ovs-dpctl dump-flows after both
}

func (b *bed) origTupleTraffic(t *testing.T) origTupleRun {
	t.Helper()
	var r origTupleRun
	r.accepted = exchange(b.h1, "tcp", "10.0.0.2:7000") == nil
	r.refused = exchange(b.h1, "tcp", "10.0.0.2:7001") == nil
	out, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	r.dpflows = string(out)
	return r
}

// TestIntegrationVMConntrackOrigTuple: resubmit(,table,ct) in the vm bed,
// ovs-vswitchd 3.1 running the same flows and traffic first. With both
// switches the connection to 7000 gets its replies and the one to 7001
// does not, and the replies' datapath flows match the connection's tuple
// (ct_tuple4 with the original source and destination port), which is
// what the ACL read.
func TestIntegrationVMConntrackOrigTuple(t *testing.T) {
	testbed.RequireVM(t)
	b := newBed(t)
	serveEcho(t, b.h2, "tcp", "10.0.0.2:7000")
	serveEcho(t, b.h2, "tcp", "10.0.0.2:7001")
	var ovs origTupleRun
	b.withOVS(t, ctOrigTupleFlows, func(func(args ...string) string) { ovs = b.origTupleTraffic(t) })
	t.Logf("ovs-vswitchd: accepted %v refused-port %v\ndatapath flows:\n%s", ovs.accepted, ovs.refused, ovs.dpflows)

	appctl := b.startCt(t)
	b.addFlows(t, ctOrigTupleFlows)
	appctl("dpctl/flush-conntrack")
	gov := b.origTupleTraffic(t)
	t.Logf("govswitchd: accepted %v refused-port %v\ndatapath flows:\n%s", gov.accepted, gov.refused, gov.dpflows)
	t.Logf("dump-flows:\n%s", b.ofctl(t, "dump-flows"))

	for _, r := range []struct {
		who string
		run origTupleRun
	}{{"ovs-vswitchd", ovs}, {"govswitchd", gov}} {
		if !r.run.accepted {
			t.Errorf("%s: the connection to 7000 got no replies", r.who)
		}
		if r.run.refused {
			t.Errorf("%s: the connection to 7001 got its replies", r.who)
		}
		// The reply flow that forwards to h1: it matches the tuple's
		// source address and destination port.
		re := regexp.MustCompile(`(?m)^.*ct_tuple4\(src=10\.0\.0\.1[,/].*tp_dst=7000[,/)].*actions:\d+$`)
		if !re.MatchString(r.run.dpflows) {
			t.Errorf("%s: no reply flow on the connection's tuple (src 10.0.0.1, tp_dst 7000) forwarding to h1", r.who)
		}
		// The refused connection's replies: a drop on its tuple.
		drop := regexp.MustCompile(`(?m)^.*ct_tuple4\(src=10\.0\.0\.1[,/].*actions:drop$`)
		if !drop.MatchString(r.run.dpflows) {
			t.Errorf("%s: no dropping reply flow on a tuple", r.who)
		}
		if strings.Contains(r.run.dpflows, "resubmit") {
			t.Errorf("%s: datapath flows name an OpenFlow action", r.who)
		}
	}
}
