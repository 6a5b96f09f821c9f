package vswitchd

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/conntrack"
	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
	"golang.org/x/sys/unix"
)

// TestIntegrationConntrackZoneLimitsAndTimeouts: per-zone connection
// limits (dpctl/ct-set-limits, ct-get-limits, ct-del-limits through the
// real ovs-appctl) hold the kernel to its limit, and a zone timeout policy
// from the database (ovs-vsctl add-zone-tp) gives the connections
// committed in the zone its timeout. UML's kernel has no zones but 0, so
// zone 0 it is; OVS suite tests 101 and 108 do the same for other zones
// in the vm bed.
func TestIntegrationConntrackZoneLimitsAndTimeouts(t *testing.T) {
	b := newBed(t)
	if out, err := exec.Command("modprobe", "nfnetlink_cttimeout").CombinedOutput(); err != nil {
		t.Fatalf("modprobe nfnetlink_cttimeout: %v: %s", err, out)
	}
	srv := ovsdbtest.Start(t)
	ctl := b.rundir + "/govswitchd.ctl"
	d, err := NewForOVSDB(Config{Datapath: "system", Rundir: b.rundir, Pidfile: "-", Handlers: 1, Unixctl: ctl}, nil, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	defer runOVSDB(t, d, srv.Remote, 15*time.Second)()
	must := func(args ...string) string {
		t.Helper()
		out, err := srv.Vsctl(20*time.Second, args...)
		if err != nil {
			t.Fatalf("ovs-vsctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	appctl := func(args ...string) string {
		t.Helper()
		r := appctlAt(t, ctl, args...)
		if r.code != 0 {
			t.Fatalf("ovs-appctl %v: exit %d: %s", args, r.code, r.err)
		}
		return r.out
	}
	must("add-br", b.name, "--", "set-fail-mode", b.name, "secure")
	must("add-port", b.name, b.v1, "--", "set", "Interface", b.v1, "ofport_request=1")
	must("add-port", b.name, b.v2, "--", "set", "Interface", b.v2, "ofport_request=2")
	b.addFlows(t, []string{"priority=10,arp,actions=NORMAL", "priority=10,in_port=1,udp,actions=ct(commit),2"})
	appctl("dpctl/flush-conntrack")

	// send sends one UDP datagram from h1 to h2's port; nothing listens
	// there, and h2's port unreachable goes nowhere (no flow for it).
	send := func(port int) {
		t.Helper()
		err := b.h1.Do(func() error {
			c, err := net.Dial("udp", fmt.Sprintf("10.0.0.2:%d", port))
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.Write([]byte("zone limit"))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	udpEntries := func() []conntrack.Entry {
		t.Helper()
		all, err := conntrack.Dump()
		if err != nil {
			t.Fatal(err)
		}
		var out []conntrack.Entry
		for _, e := range all {
			if e.Orig.Proto == unix.IPPROTO_UDP && e.Orig.Src.String() == "10.0.0.1" {
				out = append(out, e)
			}
		}
		return out
	}

	// Limits.
	appctl("dpctl/ct-set-limits", "default=10", "zone=0,limit=3")
	if got, want := appctl("dpctl/ct-get-limits", "zone=0"), "default limit=10\nzone=0,limit=3,count=0\n"; got != want {
		t.Fatalf("ct-get-limits: %q, want %q", got, want)
	}
	for p := 9001; p <= 9006; p++ {
		send(p)
	}
	deadline := time.Now().Add(10 * time.Second)
	got := ""
	for time.Now().Before(deadline) {
		if got = appctl("dpctl/ct-get-limits", "zone=0"); got == "default limit=10\nzone=0,limit=3,count=3\n" {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got != "default limit=10\nzone=0,limit=3,count=3\n" {
		t.Errorf("after 6 connections in zone 0 limited to 3: %q", got)
	}
	if n := len(udpEntries()); n != 3 {
		t.Errorf("the kernel holds %d UDP connections, want the limit, 3", n)
	}
	if got, want := appctl("dpctl/ct-get-limits"), "default limit=10\nzone=0,limit=3,count=3\n"; got != want {
		t.Errorf("ct-get-limits of every zone: %q, want %q", got, want)
	}
	appctl("dpctl/ct-del-limits", "zone=0")
	if got, want := appctl("dpctl/ct-get-limits"), "default limit=10\n"; got != want {
		t.Errorf("after ct-del-limits: %q, want %q", got, want)
	}
	appctl("dpctl/ct-set-limits", "default=0")
	for _, bad := range [][]string{{"dpctl/ct-set-limits", "zone=1"}, {"dpctl/ct-del-limits", "zones=1"}, {"dpctl/ct-get-limits", "zone=x"}} {
		if r := appctlAt(t, ctl, bad...); r.code == 0 {
			t.Errorf("ovs-appctl %v succeeded", bad)
		}
	}

	// A timeout policy for zone 0: UDP connections committed there
	// expire after udp_single seconds, where the kernel's default is 30.
	appctl("dpctl/flush-conntrack")
	must("--", "--id=@m", "create", "Datapath", "datapath_version=0", "--", "set", "Open_vSwitch", ".", "datapaths:system=@m")
	must("add-zone-tp", "system", "zone=0", "udp_single=2", "udp_first=7", "icmp_first=3")
	send(9100)
	var es []conntrack.Entry
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if es = udpEntries(); len(es) > 0 {
			break
		}
	}
	if len(es) != 1 || es[0].Timeout > 2 {
		t.Fatalf("with udp_single=2 the connection is %+v, want one of at most 2 s", es)
	}
	flows, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	if !strings.Contains(string(flows), "ct(commit,timeout=ovs_tp_1_udp4)") || !strings.Contains(string(flows), "proto=17") {
		t.Errorf("the datapath flow does not name the policy with the protocol matched:\n%s", flows)
	}
	gone := false
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end) && !gone; time.Sleep(250 * time.Millisecond) {
		gone = len(udpEntries()) == 0
	}
	if !gone {
		t.Errorf("the connection outlived its 2 s timeout: %+v", udpEntries())
	}
	// Without the policy (del-zone-tp), new connections get the default
	// again: the datapath flow is retranslated.
	must("del-zone-tp", "system", "zone=0")
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		flows, _ = exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
		if !strings.Contains(string(flows), "timeout=") {
			break
		}
	}
	send(9101)
	es = nil
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && len(es) == 0; time.Sleep(100 * time.Millisecond) {
		es = udpEntries()
	}
	if len(es) != 1 || es[0].Timeout <= 5 {
		t.Errorf("after del-zone-tp the connection is %+v, want one with the kernel's default timeout (30 s)", es)
	}
	names, err := conntrack.TimeoutPolicyNames()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "ovs_tp_1_") && n != "ovs_tp_1_udp4" {
			t.Errorf("policy %s outlived its zone (only udp4 is still used by a connection)", n)
		}
	}
	appctl("dpctl/flush-conntrack")
}
