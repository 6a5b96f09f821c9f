package ofproto

import (
	"strings"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
	"golang.org/x/sys/unix"
)

// failExec is a datapath whose Execute fails as Linux's does for a
// ct(commit) over its zone's connection limit.
type failExec struct{ datapath.Datapath }

func (failExec) Execute([]byte, *flow.Key, []byte) error { return unix.ENOMEM }

// TestPacketOutExecuteError: a packet-out the datapath refuses to execute
// comes back as an ExecuteError worded as ovs-vswitchd's dpif log line.
// (Building that text once took a nil mask and crashed the daemon on OVS
// suite test 108's sixth packet-out.)
func TestPacketOutExecuteError(t *testing.T) {
	b, _ := dummyBridge(t, UpcallConfig{})
	b.DP = failExec{b.DP}
	err := b.PacketOut(synFrame(1), 1, []openflow.Action{openflow.Output(2, 0)})
	xe, ok := err.(*ExecuteError)
	if !ok {
		t.Fatalf("error %v (%T), want an ExecuteError", err, err)
	}
	msg := xe.Error()
	for _, want := range []string{": execute ", " failed (Cannot allocate memory) on packet ", "in_port("} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
}
