package ofproto

import (
	"bytes"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// controllerAction builds a Nicira controller action as the codec decodes
// it.
// parseActs decodes datapath actions for the tests.
func parseActs(t *testing.T, b []byte) []datapath.Action {
	t.Helper()
	var out []datapath.Action
	it := datapath.NewActionIter(b)
	for it.Next() {
		out = append(out, *it.Action())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func controllerAction(t testing.TB, c openflow.ControllerAction) openflow.Action {
	t.Helper()
	b, err := openflow.AppendController(nil, openflow.Version13, &c)
	if err != nil {
		t.Fatal(err)
	}
	acts, err := openflow.DecodeActions13(nil, b)
	if err != nil || len(acts) != 1 {
		t.Fatalf("decode controller action: %v", err)
	}
	return acts[0]
}

// TestXlateController2: controller(userdata) emits a userspace action
// whose userdata carries the metadata and userdata, and the megaflow
// matches what the metadata reports; pause stops the translation and
// freezes what is left; note does nothing.
func TestXlateController2(t *testing.T) {
	x := testBridge(t)
	x.ControllerPID.Store(77)
	ud := openflow.DefaultController
	ud.Userdata = []byte{1, 2, 3}
	pause := openflow.DefaultController
	pause.Pause = true
	note := openflow.Action{Type: openflow.ActVendor, Vendor: openflow.NXVendorID, Data: []byte{0, 8, 1, 2, 3, 4, 5, 6}}
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.InPort, m.InPort = 1, ^uint32(0) }, 1,
		apply(note, openflow.Action{Type: openflow.ActRegLoad, Field: openflow.FieldReg0, NBits: 32, Load: 9},
			controllerAction(t, ud), openflow.Output(2, 0)))
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.InPort, m.InPort = 2, ^uint32(0) }, 1,
		openflow.Instructions{Apply: []openflow.Action{controllerAction(t, pause), openflow.Output(1, 0)},
			Write: []openflow.Action{openflow.Output(3, 0)}, GotoTable: true, Table: 4})

	var out Out
	k := pkt(11)
	x.Translate(&k, t0, true, &out)
	acts := parseActs(t, out.Actions)
	if len(acts) != 2 || acts[0].Type != datapath.ActionUserspace || acts[0].Userspace.PID != 77 || acts[1].Port != 12 {
		t.Fatalf("actions %+v, want userspace then output to 12", acts)
	}
	ext := parsePacketInExt(acts[0].Userspace.Userdata)
	if ext == nil || !bytes.Equal(ext.Userdata, []byte{1, 2, 3}) || ext.Pause || len(ext.Continuation) != 0 {
		t.Fatalf("userdata %+v", ext)
	}
	var md openflow.Match
	if err := openflow.DecodeNXM(openflow.Version13, ext.Metadata, &md); err != nil || md.Key.Regs[0] != 9 || md.Key.InPort != 1 {
		t.Errorf("metadata %v: reg0 %d in_port %d", err, md.Key.Regs[0], md.Key.InPort)
	}
	if out.WC.Tunnel.ID != ^uint64(0) || out.WC.Mark != ^uint32(0) {
		t.Errorf("megaflow does not match the tunnel id and mark the metadata reports")
	}

	k = pkt(12)
	x.Translate(&k, t0, true, &out)
	acts = parseActs(t, out.Actions)
	if len(acts) != 1 || acts[0].Type != datapath.ActionUserspace {
		t.Fatalf("paused actions %+v, want only the userspace action", acts)
	}
	ext = parsePacketInExt(acts[0].Userspace.Userdata)
	if ext == nil || !ext.Pause {
		t.Fatalf("paused userdata %+v", ext)
	}
	cont, err := openflow.DecodeContinuation(openflow.Version13, ext.Continuation)
	if err != nil {
		t.Fatal(err)
	}
	if len(cont.Actions) != 2 || !cont.Actions[0].Equal(openflow.Output(1, 0)) ||
		!cont.Actions[1].Equal(openflow.Resubmit(openflow.PortInPort, 4)) ||
		len(cont.ActionSet) != 1 || !cont.ActionSet[0].Equal(openflow.Output(3, 0)) {
		t.Errorf("continuation %+v", cont)
	}
}

// TestXlateController2Allocs: a controller(userdata) flow translates
// without allocating once the Out has grown.
func TestXlateController2Allocs(t *testing.T) {
	x := testBridge(t)
	x.ControllerPID.Store(77)
	ud := openflow.DefaultController
	ud.Userdata = []byte{1, 2, 3}
	pause := openflow.DefaultController
	pause.Pause = true
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.InPort, m.InPort = 1, ^uint32(0) }, 1,
		apply(controllerAction(t, ud), openflow.Output(2, 0)))
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.InPort, m.InPort = 2, ^uint32(0) }, 1,
		apply(controllerAction(t, pause), openflow.Output(1, 0)))
	out := Out{Actions: make([]byte, 0, 1024)}
	for _, dp := range []uint32{11, 12} {
		k := pkt(dp)
		x.Translate(&k, t0, true, &out) // grow the buffers
		now := t0
		if n := testing.AllocsPerRun(500, func() {
			k.TpSrc++
			now = now.Add(time.Millisecond)
			x.Translate(&k, now, true, &out)
		}); n != 0 {
			t.Errorf("datapath port %d: Translate allocates %v per packet", dp, n)
		}
	}
}
