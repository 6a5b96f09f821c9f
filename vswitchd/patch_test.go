package vswitchd

import (
	"reflect"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// TestOVSDBPatchPorts: two bridges joined by a patch pair, configured
// with ovs-vsctl as users do, forward between a device on each; dpif/show
// lists the patch ports with no datapath number as ovs-vswitchd does, and
// interfaces with bad patch options carry ovs-vswitchd's error.
func TestOVSDBPatchPorts(t *testing.T) {
	s := startOVSDBSwitch(t, "p1", "p2")
	s.must(t, "add-br", "br0", "--", "add-port", "br0", "p1",
		"--", "add-port", "br0", "patch0", "--", "set", "Interface", "patch0", "type=patch", "options:peer=patch1")
	s.must(t, "add-br", "br1", "--", "add-port", "br1", "p2",
		"--", "add-port", "br1", "patch1", "--", "set", "Interface", "patch1", "type=patch", "options:peer=patch0")
	p1, p2 := s.prov.Netdev("p1"), s.prov.Netdev("p2")
	ab := tcpFrame(macA, macB, 1000, 80)
	p1.Send(ab)
	expectFrame(t, p2, ab)
	ba := tcpFrame(macB, macA, 80, 1000)
	p2.Send(ba)
	expectFrame(t, p1, ba)

	show := s.appctl(t, "dpif/show")
	for _, want := range []string{"dummy@ovs-system: hit:", "  br0:\n", "  br1:\n",
		"    patch0 2/none: (patch: peer=patch1)\n", "    patch1 2/none: (patch: peer=patch0)\n"} {
		if !strings.Contains(show, want) {
			t.Errorf("dpif/show lacks %q:\n%s", want, show)
		}
	}
	if n := strings.Count(show, "dummy@"); n != 1 {
		t.Errorf("dpif/show lists %d datapaths, want 1:\n%s", n, show)
	}
	if got := s.must(t, "get", "Interface", "patch0", "ofport"); strings.TrimSpace(got) != "2" {
		t.Errorf("patch0's ofport %q, want 2", got)
	}
	// dpif/dump-flows BRIDGE shows the flows whose input port is the
	// bridge's: A->B entered on br0, B->A on br1.
	f0, f1 := s.appctl(t, "dpif/dump-flows", "br0"), s.appctl(t, "dpif/dump-flows", "br1")
	if strings.Count(f0, "\n") != 1 || strings.Count(f1, "\n") != 1 || f0 == f1 {
		t.Errorf("dpif/dump-flows br0:\n%sbr1:\n%s", f0, f1)
	}

	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"pnopeer", []string{"type=patch"}, "pnopeer: patch type requires valid 'peer' argument"},
		{"pself", []string{"type=patch", "options:peer=pself"}, "pself: patch peer must not be self"},
		{"pextra", []string{"type=patch", "options:peer=patch1", "options:foo=bar"}, "pextra: patch type takes only a 'peer' argument"},
	} {
		out, _ := s.vsctl(t, append([]string{"add-port", "br0", tc.name, "--", "set", "Interface", tc.name}, tc.set...)...)
		if got := strings.Trim(strings.TrimSpace(s.must(t, "get", "Interface", tc.name, "error")), `"`); got != tc.want {
			t.Errorf("%s: error %q, want %q (ovs-vsctl said %q)", tc.name, got, tc.want, out)
		}
		s.must(t, "del-port", "br0", tc.name)
	}

	// Removing one end disconnects the pair: nothing crosses.
	s.must(t, "del-port", "br1", "patch1")
	p1.Send(ab)
	expectNoFrame(t, p2)
}

func (s *ovsdbSwitchUnderTest) appctl(t *testing.T, cmd string, args ...string) string {
	t.Helper()
	out, err := s.d.ctl.Run(cmd, args)
	if err != nil {
		t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return out
}

// TestOVSDBRestartAdoptsSharedDatapath: a restarted daemon reopens
// ovs-system and adopts both bridges' ports with their datapath numbers
// (so the kernel's flows stay valid), and the patch pair forwards again.
func TestOVSDBRestartAdoptsSharedDatapath(t *testing.T) {
	srv := ovsdbtest.Start(t)
	prov := dummy.New()
	for _, n := range []string{"p1", "p2"} {
		if _, err := prov.AddNetdev(n); err != nil {
			t.Fatal(err)
		}
	}
	s := &ovsdbSwitchUnderTest{srv: srv, prov: prov, dir: t.TempDir()}
	stop := s.startDaemon(t)
	s.must(t, "add-br", "br0", "--", "add-port", "br0", "p1",
		"--", "add-port", "br0", "patch0", "--", "set", "Interface", "patch0", "type=patch", "options:peer=patch1")
	s.must(t, "add-br", "br1", "--", "add-port", "br1", "p2",
		"--", "add-port", "br1", "patch1", "--", "set", "Interface", "patch1", "type=patch", "options:peer=patch0")
	dpPorts := func() map[string]uint32 {
		vps, err := s.d.Backer().DP.Vports()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]uint32{}
		for _, vp := range vps {
			m[vp.Name] = vp.PortNo
		}
		return m
	}
	before := dpPorts()
	stop()

	t.Cleanup(s.startDaemon(t))
	s.must(t, "set", "Open_vSwitch", ".", "external_ids:poke=1") // a reconfiguration to wait for
	if after := dpPorts(); !reflect.DeepEqual(after, before) {
		t.Errorf("datapath ports after restart %v, want %v", after, before)
	}
	if !strings.Contains(s.log.String(), "reattached=true") {
		t.Errorf("the restart did not reattach ovs-system:\n%s", s.log.String())
	}
	ab := tcpFrame(macA, macB, 1000, 80)
	s.prov.Netdev("p1").Send(ab)
	expectFrame(t, s.prov.Netdev("p2"), ab)
}

// TestStartPrunesUnclaimedPorts: a port an earlier run left in ovs-system
// that no bridge claims now is deleted at start, as ovs-vswitchd does.
func TestStartPrunesUnclaimedPorts(t *testing.T) {
	rundir := t.TempDir()
	s := startSwitch(t, nil, rundir)
	if _, err := s.prov.AddNetdev("p3"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.d.Bridge("br0").AddPort("p3", "system", 0); err != nil {
		t.Fatal(err)
	}
	s.d.Stop()
	s2 := startSwitch(t, s.prov, rundir) // br0 with p1 and p2 only
	defer s2.d.Stop()
	if _, err := s2.d.Backer().DP.Vport("p3"); err == nil {
		t.Errorf("p3 is still a port of ovs-system:\n%s", s2.log.String())
	}
	if !strings.Contains(s2.log.String(), "deleted a datapath port no bridge has") {
		t.Errorf("the deletion is not logged:\n%s", s2.log.String())
	}
	if _, err := s2.d.Backer().DP.Vport("p2"); err != nil {
		t.Errorf("p2 went too: %v", err)
	}
}
