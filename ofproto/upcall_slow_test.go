package ofproto

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// arpRequest is an ARP request from sha/spa for tpa, broadcast.
func arpRequest(sha [6]byte, spa, tpa [4]byte) []byte {
	b := make([]byte, 42)
	copy(b[0:], ones6[:])
	copy(b[6:], sha[:])
	binary.BigEndian.PutUint16(b[12:], flow.EthTypeARP)
	a := b[14:]
	binary.BigEndian.PutUint16(a[0:], 1)
	binary.BigEndian.PutUint16(a[2:], flow.EthTypeIPv4)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], 1)
	copy(a[8:], sha[:])
	copy(a[14:], spa[:])
	copy(a[24:], tpa[:])
	return b
}

// arpReply is the reply a responder for tpa at mac gives to arpRequest.
func arpReply(mac, sha [6]byte, spa, tpa [4]byte) []byte {
	b := make([]byte, 42)
	copy(b[0:], sha[:])
	copy(b[6:], mac[:])
	binary.BigEndian.PutUint16(b[12:], flow.EthTypeARP)
	a := b[14:]
	binary.BigEndian.PutUint16(a[0:], 1)
	binary.BigEndian.PutUint16(a[2:], flow.EthTypeIPv4)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], 2)
	copy(a[8:], mac[:])
	copy(a[14:], tpa[:])
	copy(a[18:], sha[:])
	copy(a[24:], spa[:])
	return b
}

// The ARP responder flow of the brief and of OVS's "simple SNAT" test,
// as ovn-controller writes its own.
const arpResponder = "priority=100,arp,arp_op=1,arp_tpa=10.0.0.9,actions=" +
	"move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:00:00:5e:00:00:09->eth_src," +
	"load:0x2->NXM_OF_ARP_OP[],move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],set_field:00:00:5e:00:00:09->arp_sha," +
	"move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],set_field:10.0.0.9->arp_spa,in_port"

// TestSlowPathARPResponder: an ARP responder flow is accepted; its
// request is answered on the input port, the first through the miss and
// later ones through the installed flow, which sends them to userspace
// with the slow-path cookie; the trace says why, as ovs-vswitchd's.
func TestSlowPathARPResponder(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	s.ofctl(t, []string{"-O", "OpenFlow13"}, "add-flow", arpResponder)
	s.ofctl(t, nil, "add-flow", "priority=0,actions=NORMAL")
	mac := [6]byte{0, 0, 0x5e, 0, 0, 9}
	sha := [6]byte{0x80, 0x88, 0x88, 0x88, 0x88, 0x88}
	spa, tpa := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 9}
	req, want := arpRequest(sha, spa, tpa), arpReply(mac, sha, spa, tpa)
	p1, p2 := s.devs["p1"], s.devs["p2"]
	for i := 0; i < 3; i++ {
		if err := p1.Send(req); err != nil {
			t.Fatal(err)
		}
		got, err := p1.Recv(10 * time.Second)
		if err != nil {
			t.Fatalf("request %d: no reply on p1: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("request %d: reply\n%x\nwant\n%x", i, got, want)
		}
		if f, err := p2.Recv(50 * time.Millisecond); err == nil {
			t.Fatalf("request %d reached p2: %x", i, f)
		}
	}
	var acts []string
	s.dp.DumpFlows(false, func(f *datapath.Flow) error {
		acts = append(acts, datapath.FormatActions(f.Actions))
		return nil
	})
	if len(acts) != 1 || !strings.HasPrefix(acts[0], "userspace(pid=") || !strings.HasSuffix(acts[0], ",slow_path(action))") {
		t.Fatalf("datapath flows' actions %q, want one userspace(pid=N,slow_path(action))", acts)
	}
	st := s.b.Udpif.Stats()
	if st.Misses != 1 || st.ActionUpcalls != 2 || st.ExecuteFailed != 0 {
		t.Errorf("misses %d, action upcalls %d, failed executes %d: want 1, 2, 0 (%s)", st.Misses, st.ActionUpcalls, st.ExecuteFailed, st.LastError)
	}

	key := flow.Extract(req, flow.Metadata{InPort: s.b.Ports.Snapshot().ByOF(1).DPPort})
	tr := s.b.Trace(&key)
	for _, w := range []string{
		"set(arp(sip=10.0.0.9,tip=10.0.0.1,op=2,sha=00:00:5e:00:00:09,tha=80:88:88:88:88:88))",
		"\nThis flow is handled by the userspace slow path because it:\n  - Uses action(s) not supported by datapath.\n",
	} {
		if !strings.Contains(tr, w) {
			t.Errorf("trace lacks %q:\n%s", w, tr)
		}
	}
}

// responderActions is arpResponder's actions, built directly.
func responderActions(mac [6]byte, ip [4]byte) []openflow.Action {
	setEth := openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldEthSrc}
	copy(setEth.Value[:], mac[:])
	setSHA := openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldARPSHA}
	copy(setSHA.Value[:], mac[:])
	setSPA := openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldARPSPA}
	copy(setSPA.Value[:], ip[:])
	return []openflow.Action{
		{Type: openflow.ActRegMove, Src: openflow.FieldEthSrc, Field: openflow.FieldEthDst, NBits: 48},
		setEth,
		{Type: openflow.ActRegLoad, Field: openflow.FieldARPOp, NBits: 16, Load: 2},
		{Type: openflow.ActRegMove, Src: openflow.FieldARPSHA, Field: openflow.FieldARPTHA, NBits: 48},
		setSHA,
		{Type: openflow.ActRegMove, Src: openflow.FieldARPSPA, Field: openflow.FieldARPTPA, NBits: 32},
		setSPA,
		{Type: openflow.ActOutput, Port: openflow.PortInPort},
	}
}

// TestSlowPathAllocs: a batch of slow-pathed misses (translate, install
// the userspace flow, rewrite the ARP fields in userspace, execute) and a
// batch of slow-path upcalls allocate nothing in steady state.
func TestSlowPathAllocs(t *testing.T) {
	b, _ := dummyBridge(t, UpcallConfig{})
	mac, ip := [6]byte{0, 0, 0x5e, 0, 0, 9}, [4]byte{10, 0, 0, 9}
	mustAdd(t, b.X, 0, func(k *flow.Key, m *flow.Mask) {
		k.EthType, m.EthType = flow.EthTypeARP, 0xffff
		k.NwProto, m.NwProto = 1, 0xff
	}, 100, apply(responderActions(mac, ip)...))
	b.X.ControllerPID.Store(77)
	u := NewUdpif(nullOperate{b.DP}, b.X, UpcallConfig{})
	hd := u.newHandler(b.DP.Handlers()[0])
	ups := make([]datapath.Upcall, UpcallBatch)
	frames := make([][]byte, UpcallBatch)
	for i := range frames {
		frames[i] = arpRequest([6]byte{0x80, 0, 0, 0, byte(i >> 8), byte(i)}, [4]byte{10, 0, byte(i >> 8), byte(i)}, ip)
	}
	in := b.Ports.Snapshot().ByOF(1).DPPort
	var cookie [datapath.SlowPathCookieLen]byte
	datapath.PutSlowPathCookie(cookie[:], datapath.SlowAction, 1, &instanceUUID)
	fill := func(cmd datapath.UpcallCmd) {
		for i := range ups {
			ups[i] = datapath.Upcall{Cmd: cmd, Packet: frames[i]}
			if cmd == datapath.UpcallAction {
				ups[i].Userdata = cookie[:]
			}
			flow.ExtractInto(&ups[i].Key, frames[i], &flow.Metadata{InPort: in})
		}
	}
	recycle := func() {
		var ids [UpcallBatch * 2]datapath.UFID
		n := 0
		u.ukeys.Range(func(k *ukey) {
			if n < len(ids) {
				ids[n] = k.ufid
				n++
			}
		})
		for i := 0; i < n; i++ {
			u.ukeys.Remove(&ids[i])
		}
	}
	now := time.Now()
	for _, cmd := range []datapath.UpcallCmd{datapath.UpcallMiss, datapath.UpcallAction} {
		for i := 0; i < 20; i++ {
			fill(cmd)
			hd.handleBatch(ups, now)
			recycle()
		}
		allocs := testing.AllocsPerRun(50, func() {
			fill(cmd)
			hd.handleBatch(ups, now)
			recycle()
		})
		if allocs != 0 {
			t.Errorf("a batch of %d upcalls (cmd %d) allocates %v times", UpcallBatch, cmd, allocs)
		}
	}
	// The batch's executes carry the replies, the puts the slow-path flow.
	rec := &recordOperate{Datapath: b.DP}
	u.dp = rec
	fill(datapath.UpcallMiss)
	hd.handleBatch(ups, now)
	var puts, execs int
	for i, op := range rec.ops {
		switch op.Kind {
		case datapath.OpPut:
			puts++
			if a := datapath.FormatActions(op.Flow.Actions); a != slowFlowText(b) {
				t.Errorf("put actions %s", a)
			}
		case datapath.OpExecute:
			if want := arpReply(mac, [6]byte{0x80, 0, 0, 0, 0, byte(execs)}, [4]byte{10, 0, 0, byte(execs)}, ip); !bytes.Equal(op.Packet, want) {
				t.Errorf("execute %d (op %d): packet\n%x\nwant\n%x", execs, i, op.Packet, want)
			}
			if a := datapath.FormatActions(op.Flow.Actions); a != strconv.Itoa(int(in)) {
				t.Errorf("execute %d: actions %s, want the input port's", execs, a)
			}
			execs++
		}
	}
	if puts == 0 || execs != UpcallBatch || u.c.execFailed.Load() != 0 {
		t.Errorf("%d puts, %d executes, %d failed: want >0, %d, 0 (%s)", puts, execs, u.c.execFailed.Load(), UpcallBatch, u.Stats().LastError)
	}
}

// recordOperate keeps copies of the ops it is given, and does nothing.
type recordOperate struct {
	datapath.Datapath
	ops []datapath.Op
}

func (r *recordOperate) Operate(ops []datapath.Op) error {
	for _, op := range ops {
		op.Packet = append([]byte(nil), op.Packet...)
		op.Flow.Actions = append([]byte(nil), op.Flow.Actions...)
		r.ops = append(r.ops, op)
	}
	return nil
}

func (*recordOperate) Stats() (datapath.Stats, error) { return datapath.Stats{}, nil }

// TestSlowPathTruncOff: with the truncate feature turned off (as
// dpif/set-dp-features trunc false), output(port,max_len) still
// translates to trunc, the flow is slow-pathed, and the truncation and
// every output run in userspace: one execute per output, the packet cut.
func TestSlowPathTruncOff(t *testing.T) {
	b, _ := dummyBridge(t, UpcallConfig{})
	mustAdd(t, b.X, 0, func(k *flow.Key, m *flow.Mask) {}, 100, apply(
		openflow.Action{Type: openflow.ActOutputTrunc, Port: 2, TruncLen: 20},
		openflow.Action{Type: openflow.ActOutput, Port: 2}))
	b.X.ControllerPID.Store(77)
	rec := &recordOperate{Datapath: b.DP}
	u := NewUdpif(rec, b.X, UpcallConfig{})
	hd := u.newHandler(b.DP.Handlers()[0])
	frame := synFrame(1)
	in, out := b.Ports.Snapshot().ByOF(1).DPPort, b.Ports.Snapshot().ByOF(2).DPPort
	up := []datapath.Upcall{{Cmd: datapath.UpcallMiss, Packet: frame}}
	flow.ExtractInto(&up[0].Key, frame, &flow.Metadata{InPort: in})

	hd.handleBatch(up, time.Now())
	if n := len(rec.ops); n != 2 || rec.ops[0].Kind != datapath.OpPut || rec.ops[1].Kind != datapath.OpExecute {
		t.Fatalf("with truncation on: %d ops, want a put and an execute", n)
	}
	if a := datapath.FormatActions(rec.ops[0].Flow.Actions); a != "trunc(20),"+strconv.Itoa(int(out))+","+strconv.Itoa(int(out)) {
		t.Errorf("with truncation on, the flow's actions are %s", a)
	}

	b.Backer.SetFeatureOff(FeatureTrunc, true)
	rec.ops = nil
	u.ukeys = newUkeyTable(16)
	hd.handleBatch(up, time.Now())
	var lens []int
	for _, op := range rec.ops {
		switch op.Kind {
		case datapath.OpPut:
			if a := datapath.FormatActions(op.Flow.Actions); a != slowFlowText(b) {
				t.Errorf("with truncation off, the flow's actions are %s", a)
			}
		case datapath.OpExecute:
			if a := datapath.FormatActions(op.Flow.Actions); a != strconv.Itoa(int(out)) {
				t.Errorf("execute actions %s, want one output", a)
			}
			lens = append(lens, len(op.Packet))
		}
	}
	if len(lens) != 2 || lens[0] != 20 || lens[1] != len(frame) {
		t.Errorf("executed packets of %v bytes, want [20 %d]", lens, len(frame))
	}
}

// TestSlowPathAddMPLSOff: with add_mpls turned off (OVS test 45), OVS
// test 33's encapsulation is slow-pathed and done in userspace: the
// execute carries the encapsulated frame and only the output.
func TestSlowPathAddMPLSOff(t *testing.T) {
	b, _ := dummyBridge(t, UpcallConfig{})
	dst, src := setEthDst([6]byte{0, 0, 0, 0, 0, 2}), openflow.Action{Type: openflow.ActSetField, Field: openflow.FieldEthSrc}
	src.Value[5] = 1
	mustAdd(t, b.X, 0, func(k *flow.Key, m *flow.Mask) {}, 100, apply(
		openflow.Action{Type: openflow.ActEncap, Load: uint64(openflow.PacketTypeMPLS)},
		openflow.Action{Type: openflow.ActSetMPLSLabel, Load: 2},
		openflow.Action{Type: openflow.ActEncap, Load: uint64(openflow.PacketTypeEthernet)},
		dst, src, openflow.Output(2, 0)))
	b.X.ControllerPID.Store(77)
	b.Backer.SetFeatureOff(FeatureAddMPLS, true)
	rec := &recordOperate{Datapath: b.DP}
	u := NewUdpif(rec, b.X, UpcallConfig{})
	hd := u.newHandler(b.DP.Handlers()[0])
	frame := synFrame(1)
	in, out := b.Ports.Snapshot().ByOF(1).DPPort, b.Ports.Snapshot().ByOF(2).DPPort
	up := []datapath.Upcall{{Cmd: datapath.UpcallMiss, Packet: frame}}
	flow.ExtractInto(&up[0].Key, frame, &flow.Metadata{InPort: in})
	hd.handleBatch(up, time.Now())
	if len(rec.ops) != 2 {
		t.Fatalf("%d ops, want a put and an execute (%s)", len(rec.ops), u.Stats().LastError)
	}
	if a := datapath.FormatActions(rec.ops[0].Flow.Actions); a != slowFlowText(b) {
		t.Errorf("the flow's actions are %s", a)
	}
	ex := rec.ops[1]
	if a := datapath.FormatActions(ex.Flow.Actions); a != strconv.Itoa(int(out)) {
		t.Errorf("execute actions %s, want the output alone", a)
	}
	want := append([]byte{0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x88, 0x47, 0, 0, 0x21, 0x40}, frame...)
	if !bytes.Equal(ex.Packet, want) {
		t.Errorf("executed\n%x\nwant\n%x", ex.Packet, want)
	}
}

// TestIsSlowPathCookie: only our own cookie is one; a controller action's
// userdata of the same size and first bytes is not.
func TestIsSlowPathCookie(t *testing.T) {
	var ours [datapath.SlowPathCookieLen]byte
	u := instanceUUID
	u[15] = 3
	datapath.PutSlowPathCookie(ours[:], datapath.SlowAction, 1, &u)
	if !isSlowPathCookie(ours[:]) {
		t.Error("our cookie is not recognised")
	}
	ctrl := make([]byte, datapath.SlowPathCookieLen)
	ctrl[0], ctrl[1] = UserdataController2, ReasonNoMatch
	if isSlowPathCookie(ctrl) {
		t.Error("a controller userdata is taken for a slow-path cookie")
	}
	if isSlowPathCookie(ours[:40]) {
		t.Error("a short cookie is taken for one")
	}
}

// slowFlowText is the slow-pathed flow's actions on b's datapath: pid 77
// (the tests' controller pid), or OVS's per-CPU pid under per-CPU dispatch.
func slowFlowText(b *Bridge) string {
	if b.DP.Features().PerCPUDispatch {
		return "userspace(pid=4294967295,slow_path(action))"
	}
	return "userspace(pid=77,slow_path(action))"
}

// TestSlowPathTruncToTunnel: with truncation off, a truncated output to a
// tunnel (OVS test 40) runs in userspace; the kernel drops an execute's
// tunnel key, so the execute sets the tunnel again before the output, and
// carries the truncated packet.
func TestSlowPathTruncToTunnel(t *testing.T) {
	var k flow.Key
	k.Tunnel.IPv4Src, k.Tunnel.IPv4Dst = [4]byte{172, 31, 1, 100}, [4]byte{172, 31, 1, 1}
	k.Tunnel.TTL = 64
	acts := datapath.AppendTrunc(nil, 100)
	acts = datapath.AppendSet(acts, datapath.KeyAttrTunnel, &k)
	acts = datapath.AppendOutput(acts, 7)
	type exec struct {
		n       int
		actions string
	}
	var got []exec
	r := newSlowRunner(func(pkt []byte, md *flow.Key, actions []byte) {
		got = append(got, exec{len(pkt), datapath.FormatActions(actions)})
	})
	var in flow.Key
	in.InPort = 2
	if err := r.run(make([]byte, 242), &in, acts, FeatureTrunc); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].n != 100 || !strings.HasPrefix(got[0].actions, "set(tunnel(") ||
		!strings.Contains(got[0].actions, "dst=172.31.1.1") || !strings.HasSuffix(got[0].actions, "),7") {
		t.Errorf("executes %+v, want one of 100 bytes with set(tunnel(...dst=172.31.1.1...)),7", got)
	}
	// A packet with no tunnel in its metadata gets no set.
	got = nil
	if err := r.run(make([]byte, 242), &in, datapath.AppendOutput(datapath.AppendTrunc(nil, 100), 7), FeatureTrunc); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].actions != "7" {
		t.Errorf("executes %+v, want one with the output alone", got)
	}
}
