package vswitchd

import (
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// TestFlowRestoreWait: a daemon started with flow-restore-wait=true on a
// datapath an earlier run left flows in keeps those flows and handles no
// upcalls; removing the key flushes them and starts the handlers; setting
// it true again does nothing, as in ovs-vswitchd.
func TestFlowRestoreWait(t *testing.T) {
	srv := ovsdbtest.Start(t)
	prov := dummy.New()
	dp, err := prov.Create(ofproto.SharedDatapathName, datapath.Config{})
	if err != nil {
		t.Fatal(err)
	}
	old := datapath.Flow{UFID: datapath.UFID{1}, Key: flow.Key{EthType: flow.EthTypeIPv4}, Mask: flow.ExactMask()}
	if err := dp.PutFlow(&old, datapath.PutCreate); err != nil {
		t.Fatal(err)
	}
	dp.Close()
	if out, err := srv.Vsctl(5*time.Second, "--no-wait", "set", "Open_vSwitch", ".", "other_config:flow-restore-wait=true"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	s := &ovsdbSwitchUnderTest{srv: srv, prov: prov, dir: t.TempDir()}
	t.Cleanup(s.startDaemon(t))
	s.must(t, "add-br", "br0")

	flows := func() int {
		t.Helper()
		n := 0
		if err := s.d.Backer().DP.DumpFlows(true, func(*datapath.Flow) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	held := func() bool {
		s.d.bkMu.Lock()
		defer s.d.bkMu.Unlock()
		return s.d.frw.held
	}
	if !held() || !s.d.flowRestoreWaiting() {
		t.Fatalf("flow-restore-wait=true: backer held %v, waiting %v", held(), s.d.flowRestoreWaiting())
	}
	time.Sleep(200 * time.Millisecond)
	if n := flows(); n != 1 {
		t.Fatalf("while waiting: %d datapath flows, want the earlier run's 1", n)
	}

	s.must(t, "remove", "Open_vSwitch", ".", "other_config", "flow-restore-wait")
	if held() || s.d.flowRestoreWaiting() {
		t.Fatalf("key removed: backer still held (%v) or waiting (%v)", held(), s.d.flowRestoreWaiting())
	}
	if n := flows(); n != 0 {
		t.Errorf("key removed: %d datapath flows, want them flushed", n)
	}

	s.must(t, "set", "Open_vSwitch", ".", "other_config:flow-restore-wait=true")
	if s.d.flowRestoreWaiting() {
		t.Errorf("flow-restore-wait set true again after it was false: waiting, want it ignored")
	}
}
