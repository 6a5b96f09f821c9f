package vswitchd

import (
	"os"
	"path/filepath"
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
// upcalls, nor serves its controller target; removing the key flushes
// them, starts the handlers and the controller's listener; setting it true
// again does nothing, as in ovs-vswitchd.
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
	ctlSock := filepath.Join(s.dir, "br0.ctl.sock")
	s.must(t, "add-br", "br0", "--", "set-controller", "br0", "punix:"+ctlSock)
	listening := func() bool { _, err := os.Stat(ctlSock); return err == nil }

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
	if listening() {
		t.Errorf("while waiting: the bridge listens on its controller target %s", ctlSock)
	}

	s.must(t, "remove", "Open_vSwitch", ".", "other_config", "flow-restore-wait")
	if held() || s.d.flowRestoreWaiting() {
		t.Fatalf("key removed: backer still held (%v) or waiting (%v)", held(), s.d.flowRestoreWaiting())
	}
	if n := flows(); n != 0 {
		t.Errorf("key removed: %d datapath flows, want them flushed", n)
	}
	for deadline := time.Now().Add(5 * time.Second); !listening(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("key removed: no listener on the controller target %s after 5 s", ctlSock)
		}
	}

	s.must(t, "set", "Open_vSwitch", ".", "other_config:flow-restore-wait=true")
	if s.d.flowRestoreWaiting() {
		t.Errorf("flow-restore-wait set true again after it was false: waiting, want it ignored")
	}
}
