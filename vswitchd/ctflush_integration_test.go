package vswitchd

import (
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
)

// ctFlushFlows are OVS suite test 53's ("conntrack - ct flush"): UDP from
// port 1 is committed in zone 0, UDP from port 2 in zone 5.
var ctFlushFlows = []string{
	"priority=1,actions=drop",
	"priority=10,arp,actions=NORMAL",
	"priority=100,in_port=1,udp,actions=ct(commit),2",
	"priority=100,in_port=2,udp,actions=ct(zone=5,commit),1",
}

// ctFlushSwitch is how the steps reach one switch: ovs-appctl and
// ovs-ofctl against its bridge.
type ctFlushSwitch struct {
	appctl func(args ...string) appctlResult
	ofctl  func(args ...string) (string, error)
}

// ctFlushConns is what the steps send: h1's source ports to h2's port
// 7001 (zone 0), h2's to h1's port 7002 (zone 5).
var ctFlushConns = struct{ h1, h2 []int }{[]int{5001, 5002, 5003}, []int{6001, 6002}}

// ctFlushSteps sends the connections and flushes them one way after
// another, and returns a transcript: each command, how it exited, what it
// printed on error, and the bed's connections after it.
func (b *bed) ctFlushSteps(t *testing.T, s ctFlushSwitch) []string {
	t.Helper()
	send := func(ns *testbed.Netns, sport int, dst string) {
		t.Helper()
		err := ns.Do(func() error {
			c, err := net.DialUDP("udp", &net.UDPAddr{Port: sport}, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(dst)))
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.Write([]byte("ct flush"))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	dump := func() []string {
		r := s.appctl("dpctl/dump-conntrack")
		var out []string
		for _, l := range strings.Split(r.out, "\n") {
			if strings.HasPrefix(l, "udp,orig=(src=10.0.0.") {
				out = append(out, l)
			}
		}
		sort.Strings(out)
		return out
	}
	for _, p := range ctFlushConns.h1 {
		send(b.h1, p, "10.0.0.2:7001")
	}
	for _, p := range ctFlushConns.h2 {
		send(b.h2, p, "10.0.0.1:7002")
	}
	want := len(ctFlushConns.h1) + len(ctFlushConns.h2)
	var got []string
	// The first datagram of each host waits for ARP; poll generously.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got = dump(); len(got) == want {
			break
		}
	}
	if len(got) != want {
		t.Fatalf("after %d datagrams the kernel tracks %d connections:\n%s", want, len(got), strings.Join(got, "\n"))
	}
	tr := []string{"before: " + strings.Join(got, " ")}
	step := func(what string, code int, errText string) {
		tr = append(tr, fmt.Sprintf("%s: exit %d %q: %s", what, code, errText, strings.Join(dump(), " ")))
	}
	flush := func(args ...string) {
		r := s.appctl(append([]string{"dpctl/flush-conntrack"}, args...)...)
		// The server's error; ovs-appctl's own line after it names the
		// socket, which differs.
		msg, _, _ := strings.Cut(r.err, "\n")
		step(fmt.Sprintf("flush-conntrack %q", args), r.code, msg)
	}
	ctFlush := func(args ...string) {
		out, err := s.ofctl(append([]string{"ct-flush"}, args...)...)
		code := 0
		if err != nil {
			code = 1
		}
		step(fmt.Sprintf("ovs-ofctl ct-flush %q", args), code, strings.TrimSpace(out))
	}
	// One connection by its five-tuple, zone 0 by default.
	flush("ct_nw_src=10.0.0.1,ct_nw_dst=10.0.0.2,ct_nw_proto=17,ct_tp_src=5001,ct_tp_dst=7001")
	// One in zone 5 by the tuple of its reply direction.
	flush("zone=5", "ct_nw_src=10.0.0.1,ct_nw_dst=10.0.0.2,ct_nw_proto=17,ct_tp_src=7002,ct_tp_dst=6001")
	// A five-tuple that is gone: the kernel's ENOENT.
	flush("ct_nw_src=10.0.0.1,ct_nw_dst=10.0.0.2,ct_nw_proto=17,ct_tp_src=5001,ct_tp_dst=7001")
	// A partial tuple, every zone.
	flush("ct_nw_proto=17,ct_tp_src=5002")
	// Bad arguments.
	flush("ct_tp_src=1")
	flush("zone=x")
	// Over OpenFlow: a reply tuple only, in zone 5; then a five-tuple.
	ctFlush("zone=5", "", "ct_nw_src=10.0.0.1")
	ctFlush("ct_nw_src=10.0.0.1,ct_nw_dst=10.0.0.2,ct_nw_proto=17,ct_tp_src=5003,ct_tp_dst=7001")
	return tr
}

// TestIntegrationVMConntrackFlushTuple: dpctl/flush-conntrack and
// ovs-ofctl ct-flush delete connections by five-tuple (either direction's,
// in a zone), by partial original or reply tuple, and refuse bad tuples,
// exactly as ovs-vswitchd 3.1 does with the same steps in the same bed:
// the connections left after each step, the exit codes and the error
// texts are compared. Zones need the vm bed's kernel.
func TestIntegrationVMConntrackFlushTuple(t *testing.T) {
	testbed.RequireVM(t)
	b := newBed(t)
	var ovs []string
	b.withOVSSwitch(t, ctFlushFlows, func(o *ovsSwitch) {
		ovs = b.ctFlushSteps(t, ctFlushSwitch{
			appctl: func(args ...string) appctlResult { return appctlAt(t, o.ctl, args...) },
			ofctl: func(args ...string) (string, error) {
				out, err := o.cmd("ovs-ofctl", append([]string{args[0], b.name}, args[1:]...)...).CombinedOutput()
				return string(out), err
			},
		})
	})
	b.startCt(t)
	ctl := b.rundir + "/govswitchd.ctl"
	b.addFlows(t, ctFlushFlows)
	appctlAt(t, ctl, "dpctl/flush-conntrack")
	gov := b.ctFlushSteps(t, ctFlushSwitch{
		appctl: func(args ...string) appctlResult { return appctlAt(t, ctl, args...) },
		ofctl: func(args ...string) (string, error) {
			full := append([]string{args[0], "unix:" + b.rundir + "/" + b.name + ".mgmt"}, args[1:]...)
			out, err := exec.Command("ovs-ofctl", full...).CombinedOutput()
			return string(out), err
		},
	})
	if len(ovs) != len(gov) {
		t.Fatalf("transcripts of %d and %d steps:\novs-vswitchd:\n%s\ngovswitchd:\n%s", len(ovs), len(gov),
			strings.Join(ovs, "\n"), strings.Join(gov, "\n"))
	}
	for i := range ovs {
		if ovs[i] != gov[i] {
			t.Errorf("step %d differs:\novs-vswitchd: %s\ngovswitchd:   %s", i, ovs[i], gov[i])
		} else {
			t.Logf("both: %s", gov[i])
		}
	}
	// The steps must have done something: the last one empties the table,
	// and the first removed exactly one connection.
	if last := gov[len(gov)-1]; !strings.HasSuffix(last, ": ") {
		t.Errorf("connections left after the last flush: %s", last)
	}
	if n := strings.Count(gov[1], "udp,"); n != len(ctFlushConns.h1)+len(ctFlushConns.h2)-1 {
		t.Errorf("the five-tuple flush left %d connections: %s", n, gov[1])
	}
}
