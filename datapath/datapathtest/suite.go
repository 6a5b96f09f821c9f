package datapathtest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"golang.org/x/sys/unix"
)

// Run runs the contract suite against h's datapath, one subtest per
// behaviour.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h *Harness)
	}{
		{"Lifecycle", testLifecycle},
		{"Vports", testVports},
		{"TunnelVports", testTunnelVports},
		{"MissUpcall", func(t *testing.T, h *Harness) { testMissUpcall(t, h, datapath.Config{Handlers: 2}) }},
		{"MissUpcallPerVport", func(t *testing.T, h *Harness) {
			testMissUpcall(t, h, datapath.Config{Handlers: 2, NoPerCPU: true})
		}},
		{"OpenTakesOverUpcalls", testOpenTakesOver},
		{"FlowForwarding", testFlowForwarding},
		{"DeleteByKey", testDeleteByKey},
		{"Execute", testExecute},
		{"UserspaceAction", func(t *testing.T, h *Harness) { testUserspaceAction(t, h, datapath.Config{Handlers: 2}) }},
		{"UserspaceActionPerVport", func(t *testing.T, h *Harness) {
			testUserspaceAction(t, h, datapath.Config{Handlers: 2, NoPerCPU: true})
		}},
		{"Operate", testOperate},
		{"Flush", testFlush},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, &h) })
	}
}

var (
	macA  = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x0a}
	macB  = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x0b}
	ipA   = [4]byte{10, 9, 0, 1}
	ipB   = [4]byte{10, 9, 0, 2}
	ufids atomic.Uint32
)

// newUFID returns a UFID unique in the process.
func newUFID() datapath.UFID {
	var u datapath.UFID
	copy(u[:], "govswitch-test")
	n := ufids.Add(1)
	u[14], u[15] = byte(n>>8), byte(n)
	return u
}

// newDP creates a datapath that is closed and deleted in t.Cleanup.
func newDP(t *testing.T, h *Harness, cfg datapath.Config) datapath.Datapath {
	t.Helper()
	name := h.DPName(t)
	dp, err := h.Provider.Create(name, cfg)
	if err != nil {
		t.Fatalf("Create(%s): %v", name, err)
	}
	t.Cleanup(func() {
		dp.Close()
		if err := h.Provider.Delete(name); err != nil && !errors.Is(err, unix.ENOENT) {
			t.Errorf("Delete(%s): %v", name, err)
		}
	})
	return dp
}

// addLink makes a link and attaches it as a netdev vport.
func addLink(t *testing.T, h *Harness, dp datapath.Datapath) (Link, datapath.Vport) {
	t.Helper()
	l := h.NewLink(t)
	v, err := dp.AddVport(datapath.VportSpec{Name: l.Name(), Type: datapath.VportNetdev})
	if err != nil {
		t.Fatalf("AddVport(%s): %v", l.Name(), err)
	}
	return l, v
}

func wantErrno(t *testing.T, what string, err error, errnos ...unix.Errno) {
	t.Helper()
	for _, e := range errnos {
		if errors.Is(err, e) {
			return
		}
	}
	t.Errorf("%s: err = %v, want %v", what, err, errnos)
}

// upcalls collects the upcalls of every handler of a datapath, copied out
// of the receive buffers, until the datapath is closed.
type upcalls struct {
	ch   chan received
	wg   sync.WaitGroup
	pids []uint32
}

type received struct {
	up      datapath.Upcall
	handler int
}

func collect(t *testing.T, dp datapath.Datapath) *upcalls {
	u := &upcalls{ch: make(chan received, 1024)}
	for i, hd := range dp.Handlers() {
		u.pids = append(u.pids, hd.PID())
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			ups := make([]datapath.Upcall, 8)
			bufs := make([][]byte, 8)
			for j := range bufs {
				bufs[j] = make([]byte, 64<<10)
			}
			for {
				n, err := hd.Recv(ups, bufs)
				if err != nil {
					return
				}
				for _, up := range ups[:n] {
					c := up
					c.Packet = slices.Clone(up.Packet)
					c.Userdata = slices.Clone(up.Userdata)
					c.KeyAttrs = slices.Clone(up.KeyAttrs)
					c.Actions, c.EgressTunnel = nil, nil
					select {
					case u.ch <- received{c, i}:
					default:
					}
				}
			}
		}()
	}
	t.Cleanup(func() {
		dp.Close()
		u.wg.Wait()
	})
	return u
}

// wait returns the first upcall whose packet match accepts.
func (u *upcalls) wait(t *testing.T, h *Harness, match func([]byte) bool) received {
	t.Helper()
	deadline := time.After(h.timeout())
	for {
		select {
		case r := <-u.ch:
			if match(r.up.Packet) {
				return r
			}
		case <-deadline:
			t.Fatalf("no upcall within %v", h.timeout())
		}
	}
}

func testLifecycle(t *testing.T, h *Harness) {
	p := h.Provider
	name := h.DPName(t)
	dp, err := p.Create(name, datapath.Config{})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	deleted := false
	t.Cleanup(func() {
		dp.Close()
		if !deleted {
			p.Delete(name)
		}
	})
	if dp.Name() != name || dp.Index() <= 0 {
		t.Errorf("Name, Index = %q, %d; want %q, > 0", dp.Name(), dp.Index(), name)
	}
	f := dp.Features()
	if !f.UFID {
		t.Errorf("features %+v: no UFID", f)
	}
	if h.WantPerCPU && !f.PerCPUDispatch {
		t.Errorf("features %+v: per-CPU dispatch not negotiated", f)
	}
	if f.PerCPUDispatch != (f.Raw&datapath.DPFeaturePerCPUDispatch != 0) {
		t.Errorf("features %+v: PerCPUDispatch disagrees with Raw", f)
	}
	if len(dp.Handlers()) != 1 {
		t.Errorf("%d handlers, want 1 for the zero Config", len(dp.Handlers()))
	}
	ports, err := dp.Vports()
	if err != nil || len(ports) != 1 || ports[0].PortNo != 0 || ports[0].Name != name || ports[0].Type != datapath.VportInternal {
		t.Errorf("Vports = %+v, %v; want only internal port 0 named %s", ports, err, name)
	}
	st, err := dp.Stats()
	if err != nil || st.Flows != 0 {
		t.Errorf("Stats = %+v, %v; want no flows", st, err)
	}

	_, err = p.Create(name, datapath.Config{})
	wantErrno(t, "Create twice", err, unix.EEXIST)

	dp2, err := p.Open(name, datapath.Config{Handlers: 2})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if dp2.Index() != dp.Index() || len(dp2.Handlers()) != 2 {
		t.Errorf("Open: index %d, %d handlers; want %d, 2", dp2.Index(), len(dp2.Handlers()), dp.Index())
	}
	dp2.Close()
	dp.Close()

	if err := p.Delete(name); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	deleted = true
	_, err = p.Open(name, datapath.Config{})
	wantErrno(t, "Open after Delete", err, unix.ENOENT)
	wantErrno(t, "Delete twice", p.Delete(name), unix.ENOENT)
}

func testVports(t *testing.T, h *Harness) {
	dp := newDP(t, h, datapath.Config{})
	var mu sync.Mutex
	var events []datapath.VportEvent
	stop, err := dp.WatchVports(func(ev datapath.VportEvent) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	})
	if err != nil {
		t.Fatalf("WatchVports: %v", err)
	}
	defer stop()

	l, v := addLink(t, h, dp)
	if v.PortNo == 0 || v.Name != l.Name() || v.Type != datapath.VportNetdev || len(v.UpcallPIDs) == 0 {
		t.Errorf("AddVport = %+v; want a netdev port numbered > 0 with upcall PIDs", v)
	}
	got, err := dp.Vport(l.Name())
	if err != nil || got.PortNo != v.PortNo || got.Type != v.Type {
		t.Errorf("Vport(%s) = %+v, %v; want port %d", l.Name(), got, err, v.PortNo)
	}
	all, err := dp.Vports()
	if err != nil || len(all) != 2 || all[0].PortNo != 0 || all[1].PortNo != v.PortNo {
		t.Errorf("Vports = %+v, %v; want ports 0 and %d", all, err, v.PortNo)
	}
	_, err = dp.AddVport(datapath.VportSpec{Name: l.Name(), Type: datapath.VportNetdev})
	wantErrno(t, "AddVport twice", err, unix.EEXIST, unix.EBUSY)

	internal := dp.Name() + "i"
	if len(internal) > 15 {
		internal = internal[len(internal)-15:]
	}
	iv, err := dp.AddVport(datapath.VportSpec{Name: internal, Type: datapath.VportInternal})
	if err != nil || iv.Type != datapath.VportInternal || iv.PortNo == 0 || iv.PortNo == v.PortNo {
		t.Fatalf("AddVport internal = %+v, %v", iv, err)
	}
	if err := dp.DeleteVport(iv.PortNo); err != nil {
		t.Errorf("DeleteVport(%d): %v", iv.PortNo, err)
	}
	_, err = dp.Vport(internal)
	wantErrno(t, "Vport after delete", err, unix.ENODEV)
	wantErrno(t, "DeleteVport twice", dp.DeleteVport(iv.PortNo), unix.ENODEV)

	// Notifications arrive asynchronously.
	want := []string{"added " + l.Name(), "added " + internal, "deleted " + internal}
	deadline := time.Now().Add(h.timeout())
	for {
		mu.Lock()
		var seen []string
		for _, ev := range events {
			kind := map[datapath.VportEventKind]string{datapath.VportAdded: "added", datapath.VportDeleted: "deleted", datapath.VportChanged: "changed"}[ev.Kind]
			if ev.Index != dp.Index() {
				t.Errorf("event %+v of datapath %d, want %d", ev, ev.Index, dp.Index())
			}
			seen = append(seen, kind+" "+ev.Vport.Name)
		}
		mu.Unlock()
		missing := false
		for _, w := range want {
			missing = missing || !slices.Contains(seen, w)
		}
		if !missing {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("vport events %v; want %v among them", seen, want)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testTunnelVports adds and removes one port of each tunnel type, with the
// UDP port of VXLAN and Geneve given or defaulted.
func testTunnelVports(t *testing.T, h *Harness) {
	dp := newDP(t, h, datapath.Config{})
	suffix := dp.Name()
	if len(suffix) > 11 {
		suffix = suffix[len(suffix)-11:]
	}
	tests := []struct {
		name     string
		typ      datapath.VportType
		dstPort  uint16
		wantPort uint16
	}{
		{"vx" + suffix, datapath.VportVXLAN, 4790, 4790},
		{"gn" + suffix, datapath.VportGeneve, 0, 6081},
		{"gr" + suffix, datapath.VportGRE, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.typ.String(), func(t *testing.T) {
			v, err := dp.AddVport(datapath.VportSpec{Name: tt.name, Type: tt.typ, DstPort: tt.dstPort})
			if err != nil {
				t.Fatalf("AddVport(%s %s): %v", tt.typ, tt.name, err)
			}
			if v.Type != tt.typ || v.Name != tt.name || v.PortNo == 0 || v.DstPort != tt.wantPort {
				t.Errorf("AddVport = %+v; want type %s, dst port %d", v, tt.typ, tt.wantPort)
			}
			got, err := dp.Vport(tt.name)
			if err != nil || got.PortNo != v.PortNo || got.DstPort != tt.wantPort {
				t.Errorf("Vport(%s) = %+v, %v", tt.name, got, err)
			}
			if err := dp.DeleteVport(v.PortNo); err != nil {
				t.Errorf("DeleteVport: %v", err)
			}
		})
	}
}

func testMissUpcall(t *testing.T, h *Harness, cfg datapath.Config) {
	dp := newDP(t, h, cfg)
	if cfg.NoPerCPU && dp.Features().PerCPUDispatch {
		t.Errorf("NoPerCPU: per-CPU dispatch negotiated anyway")
	}
	if !cfg.NoPerCPU && h.WantPerCPU && !dp.Features().PerCPUDispatch {
		t.Errorf("per-CPU dispatch not negotiated")
	}
	l, v := addLink(t, h, dp)
	ups := collect(t, dp)
	tag := []byte(fmt.Sprintf("miss-%v", cfg.NoPerCPU))
	frame := udpFrame(macA, macB, ipA, ipB, 1234, 80, tag)
	if err := l.Send(frame); err != nil {
		t.Fatal(err)
	}
	r := ups.wait(t, h, hasTag(tag))
	up := r.up
	if up.Cmd != datapath.UpcallMiss {
		t.Errorf("Cmd = %v, want miss", up.Cmd)
	}
	if !bytes.Equal(up.Packet, frame) {
		t.Errorf("packet differs:\n got % x\nwant % x", up.Packet, frame)
	}
	want := flow.Extract(frame, flow.Metadata{InPort: v.PortNo})
	if up.Key != want {
		exact := flow.ExactMask()
		t.Errorf("upcall key differs from flow.Extract:\n got %s\nwant %s", flow.Format(&up.Key, &exact), flow.Format(&want, &exact))
	}
	if up.Userdata != nil {
		t.Errorf("miss with userdata % x", up.Userdata)
	}
	if r.handler < 0 || r.handler >= len(ups.pids) {
		t.Errorf("upcall on handler %d of %d", r.handler, len(ups.pids))
	}
	st, err := dp.Stats()
	if err != nil || st.Missed < 1 {
		t.Errorf("Stats = %+v, %v; want a miss counted", st, err)
	}
}

// testOpenTakesOver: opening a datapath again moves its upcalls to the new
// handlers, under per-vport dispatch where each port names its handler.
func testOpenTakesOver(t *testing.T, h *Harness) {
	cfg := datapath.Config{NoPerCPU: true}
	dp := newDP(t, h, cfg)
	l, _ := addLink(t, h, dp)
	dp2, err := h.Provider.Open(dp.Name(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	ups := collect(t, dp2)
	dp.Close()
	tag := []byte("takeover")
	if err := l.Send(udpFrame(macA, macB, ipA, ipB, 3, 3, tag)); err != nil {
		t.Fatal(err)
	}
	r := ups.wait(t, h, hasTag(tag))
	if r.up.Cmd != datapath.UpcallMiss {
		t.Errorf("upcall %v, want miss", r.up.Cmd)
	}
	v, err := dp2.Vport(l.Name())
	if err != nil || len(v.UpcallPIDs) != 1 || v.UpcallPIDs[0] != ups.pids[0] {
		t.Errorf("port upcall PIDs %v (%v); want the new handler's %v", v.UpcallPIDs, err, ups.pids)
	}
}

// twoPorts makes a datapath with links A and B attached.
func twoPorts(t *testing.T, h *Harness, cfg datapath.Config) (datapath.Datapath, Link, Link, datapath.Vport, datapath.Vport) {
	dp := newDP(t, h, cfg)
	la, va := addLink(t, h, dp)
	lb, vb := addLink(t, h, dp)
	return dp, la, lb, va, vb
}

// dstMask matches in_port, ethertype, IP protocol and destination
// address: a megaflow every frame from A to ipB hits, whatever its ports.
func dstMask() flow.Mask {
	var m flow.Mask
	m.InPort = ^uint32(0)
	m.EthType = 0xffff
	m.NwProto = 0xff
	m.IPv4Dst = [4]byte{0xff, 0xff, 0xff, 0xff}
	return m
}

func testFlowForwarding(t *testing.T, h *Harness) {
	dp, la, lb, va, vb := twoPorts(t, h, datapath.Config{})
	ups := collect(t, dp)
	_ = ups
	frames := [][]byte{
		udpFrame(macA, macB, ipA, ipB, 1000, 53, []byte("fwd-0")),
		udpFrame(macA, macB, ipA, ipB, 1001, 53, []byte("fwd-1")),
		udpFrame(macA, macB, ipA, ipB, 1002, 54, []byte("fwd-2")),
	}
	key := flow.Extract(frames[0], flow.Metadata{InPort: va.PortNo})
	mask := dstMask()
	ufid := newUFID()
	f := datapath.Flow{UFID: ufid, Key: key, Mask: mask, Actions: datapath.AppendOutput(nil, vb.PortNo)}
	if err := dp.PutFlow(&f, datapath.PutCreate); err != nil {
		t.Fatalf("PutFlow: %v", err)
	}
	var bytesSent uint64
	for i, fr := range frames {
		if err := la.Send(fr); err != nil {
			t.Fatal(err)
		}
		bytesSent += uint64(len(fr))
		got, err := lb.Recv(h.timeout(), hasTag([]byte(fmt.Sprintf("fwd-%d", i))))
		if err != nil {
			t.Fatalf("frame %d not forwarded: %v", i, err)
		}
		if !bytes.Equal(got, fr) {
			t.Errorf("frame %d changed:\n got % x\nwant % x", i, got, fr)
		}
	}

	fitted := mask
	datapath.FitMask(&key, &fitted)
	var g datapath.Flow
	if err := dp.GetFlow(ufid, nil, &g); err != nil {
		t.Fatalf("GetFlow: %v", err)
	}
	if g.UFID != ufid || g.Mask != fitted || g.Key.Apply(&fitted) != key.Apply(&fitted) || !bytes.Equal(g.Actions, f.Actions) {
		t.Errorf("GetFlow = %s %s actions:%s\nwant %s %s actions:%s", g.UFID, flow.Format(&g.Key, &g.Mask),
			datapath.FormatActions(g.Actions), ufid, flow.Format(&key, &fitted), datapath.FormatActions(f.Actions))
	}
	if g.Stats.Packets != 3 || g.Stats.Bytes != bytesSent || g.Stats.Used == 0 {
		t.Errorf("flow stats = %+v; want 3 packets, %d bytes, used", g.Stats, bytesSent)
	}
	st, err := dp.Stats()
	if err != nil || st.Hit < 3 || st.Flows != 1 || st.Masks != 1 {
		t.Errorf("Stats = %+v, %v; want >= 3 hits, 1 flow, 1 mask", st, err)
	}

	var dumped []datapath.Flow
	collectDump := func(terse bool) {
		dumped = dumped[:0]
		err := dp.DumpFlows(terse, func(f *datapath.Flow) error {
			c := *f
			c.Actions = slices.Clone(f.Actions)
			dumped = append(dumped, c)
			return nil
		})
		if err != nil {
			t.Fatalf("DumpFlows(%v): %v", terse, err)
		}
	}
	collectDump(false)
	if len(dumped) != 1 || dumped[0].UFID != ufid || dumped[0].Mask != fitted || !bytes.Equal(dumped[0].Actions, f.Actions) || dumped[0].Terse {
		t.Errorf("full dump = %+v; want the flow put", dumped)
	}
	collectDump(true)
	if len(dumped) != 1 || dumped[0].UFID != ufid || !dumped[0].Terse || dumped[0].Stats.Packets != 3 || len(dumped[0].Actions) != 0 {
		t.Errorf("terse dump = %+v; want UFID and stats only", dumped)
	}

	if h.DumpFlowsTool != nil {
		checkTool(t, h, dp, ufid, &key, &fitted, f.Actions)
	}

	err = dp.PutFlow(&f, datapath.PutCreate)
	wantErrno(t, "PutFlow create twice", err, unix.EEXIST)
	other := f
	other.UFID = newUFID()
	err = dp.PutFlow(&other, datapath.PutModify)
	wantErrno(t, "PutFlow modify missing", err, unix.ENOENT)

	// Modify to drop: the next frame no longer comes out on B.
	f.Actions = nil
	if err := dp.PutFlow(&f, datapath.PutModify); err != nil {
		t.Fatalf("PutFlow modify: %v", err)
	}
	if err := dp.GetFlow(ufid, nil, &g); err != nil || len(g.Actions) != 0 {
		t.Errorf("after modify: actions %s, %v; want drop", datapath.FormatActions(g.Actions), err)
	}
	if err := la.Send(udpFrame(macA, macB, ipA, ipB, 1003, 53, []byte("fwd-dropped"))); err != nil {
		t.Fatal(err)
	}
	if got, err := lb.Recv(h.timeout()/10, hasTag([]byte("fwd-dropped"))); err == nil {
		t.Errorf("dropped frame came out: % x", got)
	}

	fs, err := dp.DeleteFlow(ufid, nil)
	if err != nil || fs.Packets != 4 {
		t.Errorf("DeleteFlow = %+v, %v; want 4 packets", fs, err)
	}
	_, err = dp.DeleteFlow(ufid, nil)
	wantErrno(t, "DeleteFlow twice", err, unix.ENOENT)
	wantErrno(t, "GetFlow deleted", dp.GetFlow(ufid, nil, &g), unix.ENOENT)
}

// checkTool compares what the real tool prints with what was dumped.
func checkTool(t *testing.T, h *Harness, dp datapath.Datapath, ufid datapath.UFID, key *flow.Key, mask *flow.Mask, actions []byte) {
	t.Helper()
	lines := h.DumpFlowsTool(t, dp.Name())
	ports := map[string]uint32{}
	if vs, err := dp.Vports(); err == nil {
		for _, v := range vs {
			ports[v.Name] = v.PortNo
		}
	}
	var found bool
	for _, line := range lines {
		d, err := flow.ParseDumpLine(line, ports)
		if err != nil {
			t.Errorf("tool line %q: %v", line, err)
			continue
		}
		if !d.HasUFID || fmt.Sprintf("ufid:%x-%x-%x-%x-%x", d.UFID[0:4], d.UFID[4:6], d.UFID[6:8], d.UFID[8:10], d.UFID[10:16]) != ufid.String() {
			continue
		}
		found = true
		if d.Mask != *mask || d.Key.Apply(&d.Mask) != key.Apply(mask) {
			t.Errorf("tool shows %s\n      want %s", flow.Format(&d.Key, &d.Mask), flow.Format(key, mask))
		}
		acts, err := datapath.ParseActions(d.Actions)
		if err != nil || !bytes.Equal(acts, actions) {
			t.Errorf("tool actions %q (%v); want %s", d.Actions, err, datapath.FormatActions(actions))
		}
		if d.Packets != 3 {
			t.Errorf("tool packets = %d, want 3", d.Packets)
		}
	}
	if !found {
		t.Errorf("tool does not show %s; it printed:\n%s", ufid, strings.Join(lines, "\n"))
	}
}

func testDeleteByKey(t *testing.T, h *Harness) {
	dp, _, _, va, vb := twoPorts(t, h, datapath.Config{})
	frame := udpFrame(macA, macB, ipA, ipB, 7, 7, []byte("bykey"))
	key := flow.Extract(frame, flow.Metadata{InPort: va.PortNo})
	// An exact mask, as a switch with megaflows disabled puts: it masks
	// the conntrack fields too, which the key must then carry.
	f := datapath.Flow{Key: key, Mask: flow.ExactMask(), Actions: datapath.AppendOutput(nil, vb.PortNo)}
	if err := dp.PutFlow(&f, 0); err != nil {
		t.Fatalf("PutFlow without UFID: %v", err)
	}
	var g datapath.Flow
	if err := dp.GetFlow(datapath.UFID{}, &key, &g); err != nil || g.Key != key || !bytes.Equal(g.Actions, f.Actions) {
		t.Errorf("GetFlow by key = %s, %v", flow.Format(&g.Key, &g.Mask), err)
	}
	err := dp.PutFlow(&f, datapath.PutCreate)
	wantErrno(t, "create twice by key", err, unix.EEXIST)
	if _, err := dp.DeleteFlow(datapath.UFID{}, &key); err != nil {
		t.Errorf("DeleteFlow by key: %v", err)
	}
	_, err = dp.DeleteFlow(datapath.UFID{}, &key)
	wantErrno(t, "DeleteFlow by key twice", err, unix.ENOENT)
}

func testExecute(t *testing.T, h *Harness) {
	dp, _, lb, va, vb := twoPorts(t, h, datapath.Config{})
	frame := udpFrame(macA, macB, ipA, ipB, 9, 9, []byte("exec"))
	md := flow.Key{InPort: va.PortNo}
	if err := dp.Execute(frame, &md, datapath.AppendOutput(nil, vb.PortNo)); err != nil {
		t.Fatalf("Execute: %v", err)
	}
	got, err := lb.Recv(h.timeout(), hasTag([]byte("exec")))
	if err != nil || !bytes.Equal(got, frame) {
		t.Errorf("executed frame: % x, %v", got, err)
	}
	// Rewrite the destination MAC's last byte on the way out. (Not a VLAN
	// push: a veth hands the tag to a packet socket out of band.)
	var sk flow.Key
	var sm flow.Mask
	sk.EthDst[5], sm.EthDst[5] = 0xee, 0xff
	if err := dp.Execute(frame, &md, datapath.AppendOutput(datapath.AppendSetMasked(nil, datapath.KeyAttrEthernet, &sk, &sm), vb.PortNo)); err != nil {
		t.Fatalf("Execute set_masked: %v", err)
	}
	got, err = lb.Recv(h.timeout(), hasTag([]byte("exec")))
	want := slices.Clone(frame)
	want[5] = 0xee
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("set_masked frame:\n got % x (%v)\nwant % x", got, err, want)
	}
	err = dp.Execute(frame, &md, []byte{3, 0, 1})
	wantErrno(t, "Execute malformed actions", err, unix.EINVAL, unix.ERANGE)
}

// testUserspaceAction checks a userspace action's upcall. Under per-vport
// dispatch it goes to the socket the action names; under per-CPU dispatch
// the kernel ignores that PID and uses the handler of the CPU.
func testUserspaceAction(t *testing.T, h *Harness, cfg datapath.Config) {
	dp, la, _, va, _ := twoPorts(t, h, cfg)
	ups := collect(t, dp)
	frame := udpFrame(macA, macB, ipA, ipB, 5, 5, []byte("userspace"))
	key := flow.Extract(frame, flow.Metadata{InPort: va.PortNo})
	userdata := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	pid := dp.Handlers()[1].PID()
	f := datapath.Flow{UFID: newUFID(), Key: key, Mask: dstMask(), Actions: datapath.AppendUserspace(nil, pid, userdata)}
	if err := dp.PutFlow(&f, 0); err != nil {
		t.Fatalf("PutFlow: %v", err)
	}
	if err := la.Send(frame); err != nil {
		t.Fatal(err)
	}
	r := ups.wait(t, h, hasTag([]byte("userspace")))
	if r.up.Cmd != datapath.UpcallAction || !bytes.Equal(r.up.Userdata, userdata) || !bytes.Equal(r.up.Packet, frame) {
		t.Errorf("upcall %v userdata % x; want action with % x", r.up.Cmd, r.up.Userdata, userdata)
	}
	if !dp.Features().PerCPUDispatch && r.handler != 1 {
		t.Errorf("action upcall on handler %d, want 1 (pid %d)", r.handler, pid)
	}
	if r.up.Key.InPort != va.PortNo {
		t.Errorf("upcall key in_port %d, want %d", r.up.Key.InPort, va.PortNo)
	}
}

func testOperate(t *testing.T, h *Harness) {
	dp, _, lb, va, vb := twoPorts(t, h, datapath.Config{})
	const n = 40 // several sendmsg batches on the kernel
	var ops []datapath.Op
	for i := range n {
		frame := udpFrame(macA, macB, ipA, [4]byte{10, 9, 1, byte(i)}, 1, 1, nil)
		ops = append(ops, datapath.Op{
			Kind:  datapath.OpPut,
			Flow:  datapath.Flow{UFID: newUFID(), Key: flow.Extract(frame, flow.Metadata{InPort: va.PortNo}), Mask: dstMask(), Actions: datapath.AppendOutput(nil, vb.PortNo)},
			Flags: datapath.PutCreate,
		})
	}
	dup := ops[0]
	dup.Flow.UFID = newUFID() // overlapping key: the kernel says EEXIST
	missing := datapath.Op{Kind: datapath.OpDelete, Flow: datapath.Flow{UFID: newUFID()}}
	frame := udpFrame(macA, macB, ipA, ipB, 2, 2, []byte("operate"))
	exec := datapath.Op{Kind: datapath.OpExecute, Packet: frame, Flow: datapath.Flow{Key: flow.Key{InPort: va.PortNo}, Actions: datapath.AppendOutput(nil, vb.PortNo)}}
	ops = append(ops, dup, missing, exec)
	if err := dp.Operate(ops); err != nil {
		t.Fatalf("Operate: %v", err)
	}
	for i := range n {
		if ops[i].Err != nil {
			t.Errorf("put %d: %v", i, ops[i].Err)
		}
	}
	wantErrno(t, "duplicate put", ops[n].Err, unix.EEXIST)
	wantErrno(t, "delete missing", ops[n+1].Err, unix.ENOENT)
	if ops[n+2].Err != nil {
		t.Errorf("execute: %v", ops[n+2].Err)
	}
	if _, err := lb.Recv(h.timeout(), hasTag([]byte("operate"))); err != nil {
		t.Errorf("executed frame: %v", err)
	}
	for _, terse := range []bool{true, false} {
		// A full dump of this many flows spans several kernel dump parts.
		count := 0
		seen := map[datapath.UFID]bool{}
		err := dp.DumpFlows(terse, func(f *datapath.Flow) error {
			count++
			seen[f.UFID] = true
			if !terse && !bytes.Equal(f.Actions, ops[0].Flow.Actions) {
				return fmt.Errorf("flow %s actions %s", f.UFID, datapath.FormatActions(f.Actions))
			}
			return nil
		})
		if err != nil || count != n || len(seen) != n {
			t.Errorf("dump (terse %v): %d flows, %d UFIDs, %v; want %d", terse, count, len(seen), err, n)
		}
	}

	// Delete them all in one batch, with stats.
	del := make([]datapath.Op, n)
	for i := range del {
		del[i] = datapath.Op{Kind: datapath.OpDelete, Flow: datapath.Flow{UFID: ops[i].Flow.UFID}, WantStats: true}
	}
	if err := dp.Operate(del); err != nil {
		t.Fatalf("Operate deletes: %v", err)
	}
	for i := range del {
		if del[i].Err != nil {
			t.Errorf("delete %d: %v", i, del[i].Err)
		}
	}
	if st, err := dp.Stats(); err != nil || st.Flows != 0 {
		t.Errorf("Stats after deletes = %+v, %v", st, err)
	}
}

func testFlush(t *testing.T, h *Harness) {
	dp, _, _, va, vb := twoPorts(t, h, datapath.Config{})
	var ufid datapath.UFID
	for i := range 3 {
		frame := udpFrame(macA, macB, ipA, [4]byte{10, 9, 2, byte(i)}, 1, 1, nil)
		ufid = newUFID()
		f := datapath.Flow{UFID: ufid, Key: flow.Extract(frame, flow.Metadata{InPort: va.PortNo}), Mask: dstMask(), Actions: datapath.AppendOutput(nil, vb.PortNo)}
		if err := dp.PutFlow(&f, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := dp.FlushFlows(); err != nil {
		t.Fatalf("FlushFlows: %v", err)
	}
	count := 0
	if err := dp.DumpFlows(false, func(*datapath.Flow) error { count++; return nil }); err != nil || count != 0 {
		t.Errorf("dump after flush: %d flows, %v", count, err)
	}
	var g datapath.Flow
	wantErrno(t, "GetFlow after flush", dp.GetFlow(ufid, nil, &g), unix.ENOENT)
}
