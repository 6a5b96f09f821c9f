package ofproto

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// testSwitch is a Bridge over a dummy datapath with ports p1..pN and a
// ConnManager serving it.
type testSwitch struct {
	prov *dummy.Provider
	dp   datapath.Datapath
	b    *Bridge
	m    *ConnManager
	devs map[string]*dummy.Netdev
}

func quietLogger() *slog.Logger {
	if os.Getenv("CONN_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newTestSwitch builds bridge "br0" with nports system ports and starts
// its connection manager with cfg (Rundir defaults to a temp dir).
func newTestSwitch(t *testing.T, nports int, bcfg BridgeConfig, cfg ConnConfig) *testSwitch {
	t.Helper()
	prov := dummy.New()
	dp, err := prov.Create("br0", datapath.Config{})
	if err != nil {
		t.Fatal(err)
	}
	bcfg.Name = "br0"
	b, err := NewBridge(bcfg, dp)
	if err != nil {
		t.Fatal(err)
	}
	s := &testSwitch{prov: prov, dp: dp, b: b, devs: map[string]*dummy.Netdev{}}
	for i := 1; i <= nports; i++ {
		name := "p" + string(rune('0'+i))
		dev, err := prov.AddNetdev(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.AddPort(name, "system", 0); err != nil {
			t.Fatal(err)
		}
		s.devs[name] = dev
	}
	if cfg.Rundir == "" {
		cfg.Rundir = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	s.m, err = NewConnManager(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.m.Start(); err != nil {
		t.Fatal(err)
	}
	b.Start()
	t.Cleanup(func() {
		s.m.Close()
		b.Stop()
		dp.Close()
	})
	return s
}

// ofClient is the peer side of a connection in tests.
type ofClient struct {
	t   *testing.T
	nc  net.Conn
	fr  *openflow.Framer
	v   uint8
	xid uint32
}

func newClient(t *testing.T, nc net.Conn) *ofClient {
	t.Cleanup(func() { nc.Close() })
	return &ofClient{t: t, nc: nc, fr: openflow.NewFramer(0)}
}

// pipe connects a client to the switch over net.Pipe as kind.
func (s *testSwitch) pipe(t *testing.T, kind ConnKind) (*ofClient, *Conn) {
	t.Helper()
	a, b := net.Pipe()
	c := s.m.serveConn(a, kind, "pipe")
	if c == nil {
		t.Fatal("serveConn refused the connection")
	}
	return newClient(t, b), c
}

// dialMgmt connects to the mgmt socket.
func (s *testSwitch) dialMgmt(t *testing.T) *ofClient {
	t.Helper()
	nc, err := net.Dial("unix", s.m.MgmtPath())
	if err != nil {
		t.Fatal(err)
	}
	return newClient(t, nc)
}

func (c *ofClient) send(m openflow.Msg) uint32 {
	c.t.Helper()
	env := m.Env()
	if env.Version == 0 {
		env.Version = c.v
	}
	if env.Xid == 0 {
		c.xid++
		env.Xid = c.xid + 1000
	}
	b, err := m.Append(nil)
	if err != nil {
		c.t.Fatalf("encode %T: %v", m, err)
	}
	c.sendRaw(b)
	return env.Xid
}

func (c *ofClient) sendRaw(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// recvRaw returns the next message's bytes (a copy) within timeout.
func (c *ofClient) recvRaw(timeout time.Duration) ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	raw, err := c.fr.ReadMsg(c.nc)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), raw...), nil
}

// recv returns the next message, skipping echo requests (answered) and
// the asynchronous kinds listed in skip.
func (c *ofClient) recv(skip ...uint8) openflow.Msg {
	c.t.Helper()
	m, err := c.recvWithin(5*time.Second, skip...)
	if err != nil {
		c.t.Fatalf("recv: %v", err)
	}
	return m
}

// recvWithin is recv with an overall deadline, returning the read error.
func (c *ofClient) recvWithin(d time.Duration, skip ...uint8) (openflow.Msg, error) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		raw, err := c.recvRaw(time.Until(deadline))
		if err != nil {
			return nil, err
		}
		m, err := openflow.Decode(raw)
		if err != nil {
			c.t.Fatalf("decode % x: %v", raw, err)
		}
		if e, ok := m.(*openflow.EchoRequest); ok {
			c.send(&openflow.EchoReply{Envelope: openflow.Envelope{Version: c.v, Xid: e.Xid}, Data: e.Data})
			continue
		}
		if bytes.IndexByte(skip, raw[1]) >= 0 {
			continue
		}
		return m, nil
	}
}

// handshake exchanges hellos offering versions and checks the result.
func (c *ofClient) handshake(want uint8, versions ...uint8) {
	c.t.Helper()
	top := versions[len(versions)-1]
	c.send(&openflow.Hello{Envelope: openflow.Envelope{Version: top}, Versions: openflow.VersionBitmap(versions...)})
	m := c.recv()
	h, ok := m.(*openflow.Hello)
	if !ok {
		c.t.Fatalf("first message %T, want hello", m)
	}
	v, ok := openflow.Negotiate(openflow.VersionBitmap(versions...), h)
	if !ok || v != want {
		c.t.Fatalf("negotiated %d (ok %v), want %d", v, ok, want)
	}
	c.v = v
	// The switch sends its hello before reading ours: an echo round trip
	// makes sure it has negotiated too, and takes asynchronous messages.
	xid := c.send(&openflow.EchoRequest{Data: []byte("hs")})
	if r, ok := c.recv().(*openflow.EchoReply); !ok || r.Xid != xid {
		c.t.Fatalf("no echo reply after the handshake: %+v", r)
	}
}

// barrier sends a barrier and returns the messages received before its
// reply.
func (c *ofClient) barrier() []openflow.Msg {
	c.t.Helper()
	xid := c.send(&openflow.BarrierRequest{})
	var got []openflow.Msg
	for {
		m := c.recv()
		if br, ok := m.(*openflow.BarrierReply); ok && br.Xid == xid {
			return got
		}
		got = append(got, m)
	}
}

func output(ports ...uint32) openflow.Instructions {
	var in openflow.Instructions
	for _, p := range ports {
		in.Apply = append(in.Apply, openflow.Output(p, 0xffff))
	}
	return in
}

func inPortMatch(p uint32) openflow.Match {
	var m openflow.Match
	m.Key.InPort, m.Mask.InPort = p, ^uint32(0)
	return m
}

// frame builds an Ethernet/IPv4/UDP frame from src to dst.
func frame(src, dst byte) []byte {
	f := make([]byte, 60)
	copy(f, []byte{0x02, 0, 0, 0, 0, dst, 0x02, 0, 0, 0, 0, src, 0x08, 0x00})
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], 46)
	copy(ip[12:], []byte{10, 0, 0, src, 10, 0, 0, dst})
	binary.BigEndian.PutUint16(ip[20:], 1000)
	binary.BigEndian.PutUint16(ip[22:], 2000)
	binary.BigEndian.PutUint16(ip[24:], 26)
	return f
}

func TestConnHello(t *testing.T) {
	tests := []struct {
		name     string
		allowed  []uint8
		offer    []uint8
		want     uint8
		rejected bool
	}{
		{name: "1.0 client", offer: []uint8{1}, want: 1},
		{name: "1.3 client", offer: []uint8{1, 4}, want: 4},
		{name: "1.3 only switch, 1.0 client", allowed: []uint8{4}, offer: []uint8{1}, rejected: true},
		{name: "1.0 only switch, 1.3 client", allowed: []uint8{1}, offer: []uint8{1, 4}, want: 1},
		{name: "unknown version", offer: []uint8{7}, rejected: true},
		{name: "1.5 client", offer: []uint8{1, 4, 5, 6}, want: 6},
		{name: "1.4 client", offer: []uint8{4, 5}, want: 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestSwitch(t, 1, BridgeConfig{}, ConnConfig{Protocols: tc.allowed})
			cl, _ := s.pipe(t, ConnService)
			if !tc.rejected {
				cl.handshake(tc.want, tc.offer...)
				cl.send(&openflow.EchoRequest{Data: []byte("ping")})
				if r, ok := cl.recv().(*openflow.EchoReply); !ok || string(r.Data) != "ping" {
					t.Fatalf("echo reply %+v", r)
				}
				return
			}
			top := tc.offer[len(tc.offer)-1]
			cl.send(&openflow.Hello{Envelope: openflow.Envelope{Version: top}, Versions: openflow.VersionBitmap(tc.offer...)})
			if _, ok := cl.recv().(*openflow.Hello); !ok {
				t.Fatal("no hello")
			}
			em, ok := cl.recv().(*openflow.ErrorMsg)
			if !ok || em.Type != openflow.ErrTypeHelloFailed || em.Code != openflow.HelloFailedIncompatible {
				t.Fatalf("got %+v, want hello_failed/incompatible", em)
			}
			if _, err := cl.recvRaw(2 * time.Second); err == nil {
				t.Fatal("connection stayed open after a failed hello")
			}
		})
	}
}

func TestConnFeaturesAndConfig(t *testing.T) {
	for _, v := range []uint8{openflow.Version10, openflow.Version13} {
		t.Run(map[uint8]string{1: "1.0", 4: "1.3"}[v], func(t *testing.T) {
			s := newTestSwitch(t, 2, BridgeConfig{}, ConnConfig{})
			cl, _ := s.pipe(t, ConnService)
			cl.handshake(v, v)
			cl.send(&openflow.FeaturesRequest{})
			fr, ok := cl.recv().(*openflow.FeaturesReply)
			if !ok {
				t.Fatal("no features reply")
			}
			if fr.DatapathID != s.b.DatapathID() || fr.NTables != NumTables || fr.NBuffers != 0 || fr.AuxiliaryID != 0 {
				t.Errorf("features %+v", fr)
			}
			wantPorts := 0
			if v == openflow.Version10 {
				wantPorts = 3 // p1, p2, LOCAL
			}
			if len(fr.Ports) != wantPorts {
				t.Errorf("%d ports in features, want %d", len(fr.Ports), wantPorts)
			}
			cl.send(&openflow.SetConfig{MissSendLen: 200})
			cl.send(&openflow.GetConfigRequest{})
			if gc, ok := cl.recv().(*openflow.GetConfigReply); !ok || gc.MissSendLen != 200 {
				t.Errorf("get config %+v, want miss_send_len 200", gc)
			}
			cl.send(&openflow.PortDescRequest{})
			pd, ok := cl.recv().(*openflow.PortDescReply)
			if !ok || len(pd.Ports) != 3 || pd.Ports[0].Name != "p1" || pd.Ports[2].PortNo != openflow.PortLocal {
				t.Errorf("port desc %+v", pd)
			}
		})
	}
}

// TestConnErrors checks the error replies: right type and code per
// version, the first 64 bytes of the request quoted, and the connection
// still up afterwards.
func TestConnErrors(t *testing.T) {
	long := make([]byte, 100)
	tests := []struct {
		name      string
		v         uint8
		raw       []byte
		typ, code uint16
	}{
		{name: "unknown type 1.0", v: 1, raw: append([]byte{1, 30, 0, 108, 0, 0, 0, 7}, long...),
			typ: openflow.ErrTypeBadRequest, code: openflow.BadRequestBadType},
		{name: "unknown type 1.3", v: 4, raw: []byte{4, 40, 0, 8, 0, 0, 0, 7},
			typ: openflow.ErrTypeBadRequest, code: openflow.BadRequestBadType},
		{name: "wrong version", v: 4, raw: []byte{1, 2, 0, 8, 0, 0, 0, 7},
			typ: openflow.ErrTypeBadRequest, code: openflow.BadRequestBadVersion},
		{name: "unknown vendor", v: 1, raw: []byte{1, 4, 0, 16, 0, 0, 0, 7, 0, 0, 0x12, 0x34, 0, 0, 0, 1},
			typ: openflow.ErrTypeBadRequest, code: openflow.BadRequestBadVendor},
		{name: "unknown nicira subtype", v: 1, raw: []byte{1, 4, 0, 16, 0, 0, 0, 7, 0, 0, 0x23, 0x20, 0, 0, 0, 99},
			typ: openflow.ErrTypeBadRequest, code: openflow.BadRequestBadSubtype},
		{name: "switch-only message", v: 1, raw: []byte{1, 6, 0, 32, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			typ: openflow.ErrTypeBadRequest, code: openflow.BadRequestBadType},
		{name: "buffered packet out", v: 1, raw: mustAppend(t, &openflow.PacketOut{Envelope: openflow.Envelope{Version: 1, Xid: 7},
			BufferID: 5, InPort: openflow.PortController, Actions: []openflow.Action{openflow.Output(1, 0)}}),
			typ: openflow.ErrTypeBadRequest, code: openflow.BadRequestBufferUnknown},
		{name: "table features set", v: 4, raw: mustAppend(t, &openflow.TableFeaturesRequest{Envelope: openflow.Envelope{Version: 4, Xid: 7},
			Tables: []openflow.TableFeatures{{TableID: 0, Name: "x"}}}),
			typ: openflow.Err13TypeTableFeatFailed, code: openflow.TableFeaturesFailed13EPerm},
		{name: "goto backwards 1.3", v: 4, raw: mustAppend(t, &openflow.FlowMod{Envelope: openflow.Envelope{Version: 4, Xid: 7},
			TableID: 3, Command: openflow.FlowAdd, BufferID: openflow.NoBuffer, OutPort: openflow.PortAny, OutGroup: openflow.GroupAny,
			Instructions: openflow.Instructions{GotoTable: true, Table: 1}}),
			// An invalid goto_table is an instruction error (OFPBIC_BAD_TABLE_ID), as in OVS.
			typ: openflow.Err13TypeBadInstruction, code: openflow.BadInst13BadTableID},
		{name: "emerg flag 1.0", v: 1, raw: mustAppend(t, &openflow.FlowMod{Envelope: openflow.Envelope{Version: 1, Xid: 7},
			Command: openflow.FlowAdd, BufferID: openflow.NoBuffer, OutPort: openflow.PortAny, Flags: openflow.Flow10Emerg}),
			typ: openflow.Err10TypeFlowModFail, code: openflow.FlowModFailed10Unsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestSwitch(t, 1, BridgeConfig{}, ConnConfig{})
			cl, _ := s.pipe(t, ConnService)
			cl.handshake(tc.v, tc.v)
			cl.sendRaw(tc.raw)
			em, ok := cl.recv().(*openflow.ErrorMsg)
			if !ok {
				t.Fatal("no error reply")
			}
			if em.Type != tc.typ || em.Code != tc.code || em.Xid != 7 || em.Version != tc.v {
				t.Errorf("error v%d type %d code %d xid %d, want v%d %d/%d xid 7", em.Version, em.Type, em.Code, em.Xid, tc.v, tc.typ, tc.code)
			}
			want := tc.raw[:min(64, len(tc.raw))]
			if !bytes.Equal(em.Data, want) {
				t.Errorf("error data % x, want the request's first 64 bytes % x", em.Data, want)
			}
			if got := cl.barrier(); len(got) != 0 {
				t.Errorf("messages before the barrier reply: %v", got)
			}
		})
	}
}

func mustAppend(t *testing.T, m openflow.Msg) []byte {
	t.Helper()
	b, err := m.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConnFlowModAndStats drives flow mods of each version and reads
// them back with flow, aggregate and table stats, in order behind
// barriers.
func TestConnFlowModAndStats(t *testing.T) {
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	c10, _ := s.pipe(t, ConnService)
	c10.handshake(1, 1)
	c13, _ := s.pipe(t, ConnService)
	c13.handshake(4, 1, 4)

	// 1.0 add without the table-id extension goes to table 0; with it,
	// to the table named.
	c10.send(&openflow.FlowMod{Command: openflow.FlowAdd, Priority: 100, Cookie: 0x11, BufferID: openflow.NoBuffer,
		OutPort: openflow.PortAny, Match: inPortMatch(1), Instructions: output(2)})
	c10.send(&openflow.NXFlowModTableID{Enable: true})
	c10.send(&openflow.FlowMod{Command: openflow.FlowAdd, TableID: 1, Priority: 50, Cookie: 0x22, BufferID: openflow.NoBuffer,
		OutPort: openflow.PortAny, Match: inPortMatch(2), Instructions: output(1)})
	// 1.3 add with goto_table and a flag.
	c13.send(&openflow.FlowMod{Command: openflow.FlowAdd, TableID: 0, Priority: 10, Cookie: 0x33, BufferID: openflow.NoBuffer,
		OutPort: openflow.PortAny, OutGroup: openflow.GroupAny, Flags: openflow.FlowSendFlowRem,
		Instructions: openflow.Instructions{GotoTable: true, Table: 1}})
	if got := c10.barrier(); len(got) != 0 {
		t.Fatalf("1.0 flow mods answered %v", got)
	}
	if got := c13.barrier(); len(got) != 0 {
		t.Fatalf("1.3 flow mod answered %v", got)
	}
	if n := s.b.Tables.Len(); n != 3 {
		t.Fatalf("%d flows, want 3", n)
	}

	// 1.3 flow stats list all three with their tables, cookies, flags.
	c13.send(&openflow.FlowStatsRequest{TableID: openflow.TableAll, OutPort: openflow.PortAny, OutGroup: openflow.GroupAny})
	fs, ok := c13.recv().(*openflow.FlowStatsReply)
	if !ok || len(fs.Stats) != 3 {
		t.Fatalf("1.3 flow stats %+v", fs)
	}
	byCookie := map[uint64]openflow.FlowStats{}
	for _, st := range fs.Stats {
		byCookie[st.Cookie] = st
	}
	if st := byCookie[0x22]; st.TableID != 1 || st.Priority != 50 {
		t.Errorf("cookie 0x22: %+v", st)
	}
	if st := byCookie[0x33]; !st.Instructions.GotoTable || st.Flags != openflow.FlowSendFlowRem {
		t.Errorf("cookie 0x33: %+v", st)
	}
	// 1.0 flow stats cannot express goto_table: that flow is left out.
	c10.send(&openflow.FlowStatsRequest{TableID: openflow.TableAll, OutPort: openflow.PortAny})
	fs10, ok := c10.recv().(*openflow.FlowStatsReply)
	if !ok || len(fs10.Stats) != 2 {
		t.Fatalf("1.0 flow stats %+v", fs10)
	}
	// Cookie-masked 1.3 aggregate.
	c13.send(&openflow.AggregateStatsRequest{TableID: openflow.TableAll, OutPort: openflow.PortAny,
		OutGroup: openflow.GroupAny, Cookie: 0x22, CookieMask: ^uint64(0)})
	if ag, ok := c13.recv().(*openflow.AggregateStatsReply); !ok || ag.FlowCount != 1 {
		t.Errorf("aggregate %+v, want 1 flow", ag)
	}
	// 1.0 modify that matches nothing adds (in table 0, the extension
	// names it), and sets the cookie.
	c10.send(&openflow.FlowMod{Command: openflow.FlowModify, Priority: 7, Cookie: 0x44, BufferID: openflow.NoBuffer,
		OutPort: openflow.PortAny, Match: inPortMatch(3), Instructions: output(1)})
	c10.barrier()
	if n := s.b.Tables.Len(); n != 4 {
		t.Fatalf("%d flows after a 1.0 modify of nothing, want 4", n)
	}
	// A 1.3 delete with an out_port filter removes only the flow that
	// outputs there, and sends a flow removed to who asked... none here.
	c13.send(&openflow.FlowMod{Command: openflow.FlowDelete, TableID: openflow.TableAll, BufferID: openflow.NoBuffer,
		OutPort: 2, OutGroup: openflow.GroupAny})
	c13.barrier()
	if n := s.b.Tables.Len(); n != 3 {
		t.Fatalf("%d flows after delete out_port=2, want 3", n)
	}
	// Delete of the flagged flow sends flow_removed to both connections.
	c13.send(&openflow.FlowMod{Command: openflow.FlowDeleteStrict, TableID: 0, Priority: 10, BufferID: openflow.NoBuffer,
		OutPort: openflow.PortAny, OutGroup: openflow.GroupAny})
	var fr *openflow.FlowRemoved
	for _, m := range c13.barrier() {
		if r, ok := m.(*openflow.FlowRemoved); ok {
			fr = r
		}
	}
	if fr == nil {
		// The removal travels through the dispatcher: it may come after
		// the barrier reply.
		fr, _ = c13.recv().(*openflow.FlowRemoved)
	}
	if fr == nil || fr.Cookie != 0x33 || fr.Reason != openflow.FlowRemovedDelete || fr.Priority != 10 {
		t.Fatalf("flow removed %+v", fr)
	}
	// Table stats count the flows per table.
	c10.send(&openflow.TableStatsRequest{})
	ts, ok := c10.recv(openflow.TypeFlowRemoved).(*openflow.TableStatsReply)
	if !ok || len(ts.Stats) != NumTables {
		t.Fatalf("table stats: %+v", ts)
	}
	if ts.Stats[0].ActiveCount != 1 || ts.Stats[1].ActiveCount != 1 || ts.Stats[0].Name != "classifier" {
		t.Errorf("table stats 0: %+v, 1: %+v", ts.Stats[0], ts.Stats[1])
	}
}

// TestConnBarrierOrder checks that replies come in request order.
func TestConnBarrierOrder(t *testing.T) {
	s := newTestSwitch(t, 1, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	cl, _ := s.pipe(t, ConnService)
	cl.handshake(1, 1)
	var stream []byte
	for i := 0; i < 50; i++ {
		fm := &openflow.FlowMod{Envelope: openflow.Envelope{Version: 1, Xid: uint32(i)}, Command: openflow.FlowAdd,
			Priority: uint16(i), BufferID: openflow.NoBuffer, OutPort: openflow.PortAny, Instructions: output(1)}
		stream = append(stream, mustAppend(t, fm)...)
	}
	stream = append(stream, mustAppend(t, &openflow.AggregateStatsRequest{Envelope: openflow.Envelope{Version: 1, Xid: 100},
		TableID: openflow.TableAll, OutPort: openflow.PortAny})...)
	stream = append(stream, mustAppend(t, &openflow.BarrierRequest{Envelope: openflow.Envelope{Version: 1, Xid: 101}})...)
	cl.sendRaw(stream)
	ag, ok := cl.recv().(*openflow.AggregateStatsReply)
	if !ok || ag.Xid != 100 || ag.FlowCount != 50 {
		t.Fatalf("aggregate %+v, want 50 flows counted before it", ag)
	}
	if br, ok := cl.recv().(*openflow.BarrierReply); !ok || br.Xid != 101 {
		t.Fatalf("barrier reply %+v", br)
	}
}

// TestConnMultipartSplit checks that a flow stats reply longer than 64 KiB
// is split with REPLY_MORE on all parts but the last.
func TestConnMultipartSplit(t *testing.T) {
	s := newTestSwitch(t, 1, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	for i := 0; i < 1200; i++ {
		fm := FlowMod{Command: CmdAdd, Priority: uint16(i), OutPort: openflow.PortAny, Instructions: output(1)}
		fm.Match.Key.InPort, fm.Match.Mask.InPort = uint32(i+1), ^uint32(0)
		if err := s.b.Tables.Apply(&fm, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	cl, _ := s.pipe(t, ConnService)
	cl.handshake(1, 1)
	cl.send(&openflow.FlowStatsRequest{TableID: openflow.TableAll, OutPort: openflow.PortAny})
	total, parts := 0, 0
	for {
		fs, ok := cl.recv().(*openflow.FlowStatsReply)
		if !ok {
			t.Fatal("not a flow stats reply")
		}
		parts++
		total += len(fs.Stats)
		if fs.Flags&openflow.StatsReplyMore == 0 {
			break
		}
	}
	if total != 1200 || parts < 2 {
		t.Fatalf("%d flows in %d parts, want 1200 in several", total, parts)
	}
}

// TestConnPacketOut checks that a packet-out leaves on the port its
// actions name.
func TestConnPacketOut(t *testing.T) {
	for _, v := range []uint8{openflow.Version10, openflow.Version13} {
		t.Run(map[uint8]string{1: "1.0", 4: "1.3"}[v], func(t *testing.T) {
			s := newTestSwitch(t, 2, BridgeConfig{}, ConnConfig{})
			cl, _ := s.pipe(t, ConnService)
			cl.handshake(v, v)
			f := frame(1, 2)
			cl.send(&openflow.PacketOut{BufferID: openflow.NoBuffer, InPort: openflow.PortController,
				Actions: []openflow.Action{openflow.Output(2, 0)}, Data: f})
			if got := cl.barrier(); len(got) != 0 {
				t.Fatalf("packet-out answered %v", got)
			}
			out, err := s.devs["p2"].Recv(2 * time.Second)
			if err != nil || !bytes.Equal(out, f) {
				t.Fatalf("p2 got % x (%v), want the frame", out, err)
			}
			// A packet-out from a port the switch lacks is refused.
			cl.send(&openflow.PacketOut{BufferID: openflow.NoBuffer, InPort: 77,
				Actions: []openflow.Action{openflow.Output(2, 0)}, Data: f})
			if _, ok := cl.recv().(*openflow.ErrorMsg); !ok {
				t.Fatal("no error for an unknown in_port")
			}
		})
	}
}

// TestConnPacketIn injects a table miss and reads the packet-in on
// controller connections of both versions; service connections get none.
func TestConnPacketIn(t *testing.T) {
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	c10, _ := s.pipe(t, ConnController)
	c10.handshake(1, 1)
	c13, _ := s.pipe(t, ConnController)
	c13.handshake(4, 4)
	nx, _ := s.pipe(t, ConnController)
	nx.handshake(1, 1)
	nx.send(&openflow.NXSetPacketInFormat{Format: openflow.NXPacketInNXM})
	nx.barrier()
	svc, _ := s.pipe(t, ConnService)
	svc.handshake(1, 1)
	waitFor(t, "miss to controller", func() bool { return s.b.X.MissToController.Load() })

	f := frame(1, 2)
	if err := s.devs["p1"].Send(f); err != nil {
		t.Fatal(err)
	}
	for name, cl := range map[string]*ofClient{"1.0": c10, "nx": nx} {
		pi, ok := cl.recv().(*openflow.PacketIn)
		if !ok {
			t.Fatalf("%s: no packet-in", name)
		}
		if pi.InPort != 1 || pi.Reason != openflow.PacketInNoMatch || !bytes.Equal(pi.Data, f) ||
			pi.BufferID != openflow.NoBuffer || int(pi.TotalLen) != len(f) {
			t.Errorf("%s: packet-in %+v", name, pi)
		}
		if name != "1.0" && (pi.Match.Mask.InPort != ^uint32(0) || pi.Match.Key.InPort != 1 || pi.Cookie != ^uint64(0)) {
			t.Errorf("%s: match %+v cookie %#x", name, pi.Match.Key.InPort, pi.Cookie)
		}
	}
	// OpenFlow 1.3 drops a miss without a table-miss flow entry.
	if got := c13.barrier(); len(got) != 0 {
		t.Errorf("1.3 controller got %v for an implicit miss", got)
	}
	if got := svc.barrier(); len(got) != 0 {
		t.Errorf("service connection got %v", got)
	}
	// With a table-miss flow entry (priority 0, CONTROLLER), 1.3 gets
	// the packet as a miss and 1.0 as an action.
	c13.send(&openflow.FlowMod{Command: openflow.FlowAdd, Cookie: 0x55, BufferID: openflow.NoBuffer,
		OutPort: openflow.PortAny, OutGroup: openflow.GroupAny, Instructions: output(openflow.PortController)})
	c13.barrier()
	deadline := time.Now().Add(5 * time.Second)
	var pi *openflow.PacketIn
	for pi == nil {
		if err := s.devs["p1"].Send(f); err != nil {
			t.Fatal(err)
		}
		m, _ := c13.recvWithin(200 * time.Millisecond)
		pi, _ = m.(*openflow.PacketIn)
		if time.Now().After(deadline) {
			t.Fatal("no packet-in from the table-miss flow entry")
		}
	}
	if pi.Reason != openflow.PacketInNoMatch || pi.Cookie != 0x55 || pi.InPort != 1 {
		t.Errorf("1.3 packet-in from a table-miss entry: reason %d cookie %#x in_port %d", pi.Reason, pi.Cookie, pi.InPort)
	}
	for {
		m, err := c10.recvWithin(2 * time.Second)
		if err != nil {
			t.Fatal("1.0 controller got no packet-in from the table-miss entry")
		}
		if p, ok := m.(*openflow.PacketIn); ok && p.Reason == openflow.PacketInAction {
			break
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestConnSlowReader: a controller that never reads neither blocks the
// packet-in hook nor another controller; its packet-ins are dropped and
// counted.
func TestConnSlowReader(t *testing.T) {
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{PacketInRate: -1})
	fast, _ := s.pipe(t, ConnController)
	fast.handshake(1, 1)
	slow, slowConn := s.pipe(t, ConnController)
	slow.handshake(1, 1)
	// slow never reads again: net.Pipe has no buffer, so its writer
	// blocks on the first message and its queue fills.
	const n = connQueueLen + 300
	pin := PacketIn{Packet: frame(1, 2), Reason: ReasonNoMatch}
	pin.Key.InPort = s.b.Ports.Snapshot().ByOF(1).DPPort
	start := time.Now()
	got := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for got < n {
			if _, ok := fast.recv().(*openflow.PacketIn); ok {
				got++
			}
		}
	}()
	for i := 0; i < n; i++ {
		s.m.packetIn(pin)
		if i%100 == 99 {
			time.Sleep(10 * time.Millisecond) // let the dispatcher keep up
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("packet-in hook took %v for %d packets", d, n)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("fast controller got %d of %d packet-ins", got, n)
	}
	if d := slowConn.pinDrop.Load(); d < n-connQueueLen-1 {
		t.Errorf("slow controller: %d packet-ins dropped (%d queued), want at least %d", d, slowConn.pinSent.Load(), n-connQueueLen-1)
	}
}

// TestConnPacketInHookAllocs: the upcall side of packet-ins allocates
// nothing.
func TestConnPacketInHookAllocs(t *testing.T) {
	s := newTestSwitch(t, 1, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	pin := PacketIn{Packet: frame(1, 2)}
	for _, connected := range []int32{0, 1} {
		s.m.nCtrl.Store(connected)
		if a := testing.AllocsPerRun(1000, func() { s.m.packetIn(pin) }); a != 0 {
			t.Errorf("controllers %d: %v allocations per packet-in", connected, a)
		}
	}
	s.m.nCtrl.Store(0)
}

func BenchmarkConnPacketInHook(b *testing.B) {
	prov := dummy.New()
	dp, _ := prov.Create("br0", datapath.Config{})
	br, _ := NewBridge(BridgeConfig{Name: "br0"}, dp)
	m, _ := NewConnManager(br, ConnConfig{NoMgmt: true, Logger: quietLogger()})
	m.nCtrl.Store(1)
	pin := PacketIn{Packet: frame(1, 2)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.packetIn(pin)
		select {
		case <-m.events:
		default:
		}
	}
}

func TestConnTokenBucket(t *testing.T) {
	tests := []struct {
		name        string
		rate, burst int
		gap         time.Duration
		n, want     int
	}{
		{name: "burst then dry", rate: 10, burst: 5, gap: 0, n: 20, want: 5},
		{name: "refill at rate", rate: 1000, burst: 1, gap: time.Millisecond, n: 50, want: 50},
		{name: "half rate", rate: 500, burst: 1, gap: time.Millisecond, n: 100, want: 50},
		{name: "unlimited", rate: -1, burst: 1, gap: 0, n: 30, want: 30},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &Conn{tokens: float64(tc.burst)}
			now := time.Unix(1000, 0)
			got := 0
			for i := 0; i < tc.n; i++ {
				if c.allowPacketIn(now, tc.rate, tc.burst) {
					got++
				}
				now = now.Add(tc.gap)
			}
			if got != tc.want {
				t.Errorf("%d allowed, want %d", got, tc.want)
			}
		})
	}
}

// TestConnRoles covers master/slave with generation ids: one master, stale
// generations refused, slaves cannot modify and get no packet-ins.
func TestConnRoles(t *testing.T) {
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	a, ac := s.pipe(t, ConnController)
	a.handshake(4, 4)
	b, bc := s.pipe(t, ConnController)
	b.handshake(4, 4)
	role := func(cl *ofClient, r uint32, gen uint64) openflow.Msg {
		cl.send(&openflow.RoleRequest{Role: r, GenerationID: gen})
		return cl.recv(openflow.TypePacketIn)
	}
	if rr, ok := role(a, openflow.RoleMaster, 5).(*openflow.RoleReply); !ok || rr.Role != openflow.RoleMaster || rr.GenerationID != 5 {
		t.Fatalf("a master: %+v", rr)
	}
	if rr, ok := role(b, openflow.RoleMaster, 6).(*openflow.RoleReply); !ok || rr.Role != openflow.RoleMaster {
		t.Fatalf("b master: %+v", rr)
	}
	if ac.Role() != openflow.RoleSlave || bc.Role() != openflow.RoleMaster {
		t.Fatalf("roles a %d b %d, want slave master", ac.Role(), bc.Role())
	}
	// As ovs-vswitchd, the switch tells a 1.3 master it was demoted (the
	// ONF role status extension).
	if st, ok := a.recv(openflow.TypePacketIn).(*openflow.RoleStatus); !ok || st.Role != openflow.RoleSlave || st.GenerationID != 6 {
		t.Fatalf("a's role status: %+v", st)
	}
	if em, ok := role(a, openflow.RoleMaster, 4).(*openflow.ErrorMsg); !ok || em.Type != openflow.Err13TypeRoleRequestFail ||
		em.Code != openflow.RoleRequestFailed13Stale {
		t.Fatalf("stale generation: %+v", em)
	}
	if em, ok := role(a, 9, 7).(*openflow.ErrorMsg); !ok || em.Code != openflow.RoleRequestFailed13BadRole {
		t.Fatalf("bad role: %+v", em)
	}
	if rr, ok := role(a, openflow.RoleNoChange, 0).(*openflow.RoleReply); !ok || rr.Role != openflow.RoleSlave || rr.GenerationID != 6 {
		t.Fatalf("no-change: %+v", rr)
	}
	a.send(&openflow.FlowMod{Command: openflow.FlowAdd, BufferID: openflow.NoBuffer, OutPort: openflow.PortAny,
		OutGroup: openflow.GroupAny, Instructions: output(1)})
	if em, ok := a.recv(openflow.TypePacketIn).(*openflow.ErrorMsg); !ok || em.Code != openflow.BadRequest13IsSlave {
		t.Fatalf("slave flow mod: %+v", em)
	}
	// A table-miss flow entry sends misses to the controllers.
	tm := FlowMod{Command: CmdAdd, OutPort: openflow.PortAny, Instructions: output(openflow.PortController)}
	if err := s.b.Tables.Apply(&tm, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Async config: the slave gets no packet-in; the master does.
	a.send(&openflow.GetAsyncRequest{})
	if ga, ok := a.recv(openflow.TypePacketIn).(*openflow.GetAsyncReply); !ok || ga.PacketInMask[1] != 0 || ga.PacketInMask[0] != 3 {
		t.Fatalf("get async %+v", ga)
	}
	if err := s.devs["p1"].Send(frame(1, 2)); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.recv().(*openflow.PacketIn); !ok {
		t.Fatal("master got no packet-in")
	}
	if got := a.barrier(); len(got) != 0 {
		t.Fatalf("slave got %v", got)
	}
	// A slave that asks for packet-ins through set_async gets them.
	a.send(&openflow.SetAsync{AsyncConfig: openflow.AsyncConfig{PacketInMask: [2]uint32{3, 1}}})
	a.barrier()
	if err := s.devs["p1"].Send(frame(1, 2)); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.recv().(*openflow.PacketIn); !ok {
		t.Fatal("slave with set_async got no packet-in")
	}
}

// TestConnPortStatus: adding and removing a port reaches connections.
func TestConnPortStatus(t *testing.T) {
	s := newTestSwitch(t, 1, BridgeConfig{}, ConnConfig{})
	cl, _ := s.pipe(t, ConnService)
	cl.handshake(4, 4)
	if _, err := s.prov.AddNetdev("p9"); err != nil {
		t.Fatal(err)
	}
	p, err := s.b.AddPort("p9", "system", 9)
	if err != nil {
		t.Fatal(err)
	}
	ps, ok := cl.recv().(*openflow.PortStatus)
	if !ok || ps.Reason != openflow.PortReasonAdd || ps.Port.PortNo != p.OFPort || ps.Port.Name != "p9" {
		t.Fatalf("port status %+v", ps)
	}
	if err := s.b.DeletePort("p9"); err != nil {
		t.Fatal(err)
	}
	if ps, ok := cl.recv().(*openflow.PortStatus); !ok || ps.Reason != openflow.PortReasonDelete {
		t.Fatalf("port status %+v", ps)
	}
}

// TestConnProbe: a peer that answers nothing is closed after two probes.
func TestConnProbe(t *testing.T) {
	s := newTestSwitch(t, 1, BridgeConfig{}, ConnConfig{ProbeInterval: 50 * time.Millisecond})
	cl, c := s.pipe(t, ConnController)
	cl.handshake(1, 1)
	echoes := 0
	for {
		raw, err := cl.recvRaw(3 * time.Second)
		if err != nil {
			break
		}
		if raw[1] == openflow.TypeEchoRequest {
			echoes++
		}
	}
	if echoes != 2 {
		t.Errorf("%d echo probes before closing, want 2", echoes)
	}
	if !c.isClosed() {
		t.Error("connection not closed")
	}
	// A peer that answers stays up.
	cl2, c2 := s.pipe(t, ConnController)
	cl2.handshake(1, 1)
	deadline := time.Now().Add(400 * time.Millisecond)
	for time.Now().Before(deadline) {
		raw, err := cl2.recvRaw(200 * time.Millisecond)
		if err == nil && raw[1] == openflow.TypeEchoRequest {
			cl2.send(&openflow.EchoReply{Envelope: openflow.Envelope{Version: 1, Xid: binary.BigEndian.Uint32(raw[4:])}})
		}
	}
	if c2.isClosed() {
		t.Error("a connection that answers probes was closed")
	}
}

// TestConnActiveControllerAndFailOpen: with an unreachable controller the
// bridge fails open after 3 probe intervals (hidden from flow stats);
// when the controller comes up, the switch connects (backoff) and the
// fail-open flow goes.
func TestConnActiveControllerAndFailOpen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens yet
	s := newTestSwitch(t, 2, BridgeConfig{HasControllers: true}, ConnConfig{
		Controllers: []string{"tcp:" + addr}, ProbeInterval: 100 * time.Millisecond, MaxBackoff: time.Second})
	waitFor(t, "fail open", s.m.FailOpen)
	if st := s.m.Controllers(); len(st) != 1 || st[0].IsConnected || st[0].LastError == "" {
		t.Errorf("controller status %+v", st)
	}
	// Traffic is switched by NORMAL: p1 → flood to p2.
	if err := s.devs["p1"].Send(frame(1, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.devs["p2"].Recv(2 * time.Second); err != nil {
		t.Fatalf("fail-open did not forward: %v", err)
	}
	svc, _ := s.pipe(t, ConnService)
	svc.handshake(4, 4)
	svc.send(&openflow.FlowStatsRequest{TableID: openflow.TableAll, OutPort: openflow.PortAny, OutGroup: openflow.GroupAny})
	if fs, ok := svc.recv().(*openflow.FlowStatsReply); !ok || len(fs.Stats) != 0 {
		t.Fatalf("flow stats show %+v, want the fail-open flow hidden", fs)
	}
	// A delete of everything leaves it alone, and the flow count right.
	svc.send(&openflow.FlowMod{Command: openflow.FlowDelete, TableID: openflow.TableAll, BufferID: openflow.NoBuffer,
		OutPort: openflow.PortAny, OutGroup: openflow.GroupAny})
	svc.barrier()
	if !s.m.FailOpen() || s.b.Tables.Len() != 0 {
		t.Fatalf("after delete-all: fail-open %v, %d flows counted", s.m.FailOpen(), s.b.Tables.Len())
	}

	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
	nc, err := ln.Accept()
	if err != nil {
		t.Fatalf("switch did not reconnect: %v", err)
	}
	cl := newClient(t, nc)
	cl.handshake(1, 1)
	waitFor(t, "fail-open removed", func() bool { return !s.m.FailOpen() })
	if st := s.m.Controllers(); !st[0].IsConnected || st[0].Version != 1 {
		t.Errorf("controller status %+v", st)
	}
	// Table misses now go to the controller, once the revalidator has
	// re-translated the flows cached while failing open.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := s.devs["p1"].Send(frame(1, 2)); err != nil {
			t.Fatal(err)
		}
		m, err := cl.recvWithin(200 * time.Millisecond)
		if _, ok := m.(*openflow.PacketIn); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no packet-in after the controller connected (last: %T, %v)", m, err)
		}
	}
	// Close the controller: the switch reconnects.
	nc.Close()
	nc, err = ln.Accept()
	if err != nil {
		t.Fatalf("no reconnect after the controller closed: %v", err)
	}
	nc.Close()
}

// TestConnSecureNoFailOpen: fail-mode secure never adds the flow.
func TestConnSecureNoFailOpen(t *testing.T) {
	s := newTestSwitch(t, 1, BridgeConfig{FailMode: FailSecure, HasControllers: true}, ConnConfig{
		Controllers: []string{"tcp:127.0.0.1:1"}, ProbeInterval: 20 * time.Millisecond})
	time.Sleep(200 * time.Millisecond)
	if s.m.FailOpen() {
		t.Fatal("secure bridge failed open")
	}
}

func TestConnMgmtSocket(t *testing.T) {
	s := newTestSwitch(t, 1, BridgeConfig{}, ConnConfig{MaxConns: 2})
	fi, err := os.Stat(s.m.MgmtPath())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("mgmt socket mode %v, want socket 0600", fi.Mode())
	}
	if filepath.Base(s.m.MgmtPath()) != "br0.mgmt" {
		t.Errorf("mgmt path %s", s.m.MgmtPath())
	}
	a := s.dialMgmt(t)
	a.handshake(1, 1)
	b := s.dialMgmt(t)
	b.handshake(4, 4)
	// The third connection is over MaxConns: closed at once.
	c := s.dialMgmt(t)
	if _, err := c.recvRaw(2 * time.Second); err == nil {
		t.Error("third connection got a message, want it closed")
	}
	if n := len(s.m.Status()); n != 2 {
		t.Errorf("%d connections in Status, want 2", n)
	}
}

func TestConnTargets(t *testing.T) {
	tests := []struct {
		name, target, network, addr string
		active, bad                 bool
	}{
		{name: "tcp default port", target: "tcp:127.0.0.1", network: "tcp", addr: "127.0.0.1:6653", active: true},
		{name: "tcp port", target: "tcp:10.0.0.1:6633", network: "tcp", addr: "10.0.0.1:6633", active: true},
		{name: "tcp ipv6", target: "tcp:[::1]:6633", network: "tcp", addr: "[::1]:6633", active: true},
		{name: "tcp hostname", target: "tcp:example.com", active: true, bad: true},
		{name: "unix", target: "unix:/run/c.sock", network: "unix", addr: "/run/c.sock", active: true},
		{name: "ssl", target: "ssl:1.2.3.4", network: "tcp", addr: "1.2.3.4:6653", active: true},
		{name: "ptcp empty", target: "ptcp:", network: "tcp", addr: ":6653"},
		{name: "ptcp port ip", target: "ptcp:6634:127.0.0.1", network: "tcp", addr: "127.0.0.1:6634"},
		{name: "ptcp bad port", target: "ptcp:x", bad: true},
		{name: "punix", target: "punix:/tmp/x", network: "unix", addr: "/tmp/x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parse := parsePassive
			if tc.active {
				parse = parseActive
			}
			n, a, err := parse(tc.target)
			if (err != nil) != tc.bad {
				t.Fatalf("err %v, want bad=%v", err, tc.bad)
			}
			if !tc.bad && (n != tc.network || a != tc.addr) {
				t.Errorf("got %s %s, want %s %s", n, a, tc.network, tc.addr)
			}
		})
	}
}

// TestConnCloseLeavesNothing: Close ends every goroutine and removes the
// mgmt socket.
func TestConnCloseLeavesNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	s := newTestSwitch(t, 1, BridgeConfig{HasControllers: true}, ConnConfig{Listeners: []string{"ptcp:0:127.0.0.1"},
		Controllers: []string{"tcp:127.0.0.1:1", "unix:" + filepath.Join(t.TempDir(), "nothing")}})
	cl := s.dialMgmt(t)
	cl.handshake(1, 1)
	cl2, _ := s.pipe(t, ConnController)
	cl2.handshake(4, 4)
	if err := s.m.Close(); err != nil {
		t.Fatal(err)
	}
	s.b.Stop()
	cl.nc.Close()
	cl2.nc.Close()
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	if _, err := os.Stat(s.m.MgmtPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("mgmt socket still there: %v", err)
	}
}

// TestConnEncodePacketInAllocs: encoding a packet-in for a connection
// allocates nothing once the buffer has grown (the dispatcher reuses
// pooled buffers).
func TestConnEncodePacketInAllocs(t *testing.T) {
	s := newTestSwitch(t, 1, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	pin := PacketIn{Packet: frame(1, 2), Reason: ReasonAction, Cookie: 7}
	pin.Key.InPort = s.b.Ports.Snapshot().ByOF(1).DPPort
	ev := asyncEvent{kind: asyncPacketIn, pin: pin}
	for _, v := range []uint8{openflow.Version10, openflow.Version13} {
		a, _ := net.Pipe()
		defer a.Close()
		c := newConn(s.m, a, ConnController, "bench")
		c.version.Store(uint32(v))
		buf := make([]byte, 0, 2048)
		now := time.Now()
		allocs := testing.AllocsPerRun(1000, func() {
			var err error
			if buf, err = s.m.encodeAsync(c, &ev, now, buf[:0]); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("version %d: %v allocations per packet-in encoding", v, allocs)
		}
		if m, err := openflow.Decode(buf); err != nil || !bytes.Equal(m.(*openflow.PacketIn).Data, pin.Packet) {
			t.Errorf("version %d: encoded packet-in does not decode: %v", v, err)
		}
	}
}

func BenchmarkConnEncodePacketIn(b *testing.B) {
	prov := dummy.New()
	dp, _ := prov.Create("br0", datapath.Config{})
	prov.AddNetdev("p1")
	br, _ := NewBridge(BridgeConfig{Name: "br0", FailMode: FailSecure}, dp)
	br.AddPort("p1", "system", 1)
	m, _ := NewConnManager(br, ConnConfig{NoMgmt: true, Logger: quietLogger()})
	for _, v := range []uint8{openflow.Version10, openflow.Version13} {
		b.Run(map[uint8]string{1: "1.0", 4: "1.3"}[v], func(b *testing.B) {
			a, _ := net.Pipe()
			defer a.Close()
			c := newConn(m, a, ConnController, "bench")
			c.version.Store(uint32(v))
			pin := PacketIn{Packet: frame(1, 2), Reason: ReasonNoMatch}
			pin.Key.InPort = br.Ports.Snapshot().ByOF(1).DPPort
			ev := asyncEvent{kind: asyncPacketIn, pin: pin}
			buf := make([]byte, 0, 2048)
			now := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				buf, _ = m.encodeAsync(c, &ev, now, buf[:0])
			}
		})
	}
}

// TestConnListenersAndUnixController: a ptcp listener and a punix one
// accept service connections; a unix: controller is dialled.
func TestConnListenersAndUnixController(t *testing.T) {
	dir := t.TempDir()
	ctrlPath := filepath.Join(dir, "ctrl.sock")
	ctrlLn, err := net.Listen("unix", ctrlPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ctrlLn.Close()
	s := newTestSwitch(t, 1, BridgeConfig{FailMode: FailSecure, HasControllers: true}, ConnConfig{
		Listeners:   []string{"ptcp:0:127.0.0.1", "punix:" + filepath.Join(dir, "extra.sock")},
		Controllers: []string{"unix:" + ctrlPath}})
	addrs := s.m.ListenerAddrs()
	if len(addrs) != 3 {
		t.Fatalf("listener addresses %v, want mgmt, ptcp and punix", addrs)
	}
	for _, a := range addrs[1:] {
		nc, err := net.Dial(a.Network(), a.String())
		if err != nil {
			t.Fatalf("dial %s: %v", a, err)
		}
		cl := newClient(t, nc)
		cl.handshake(4, 1, 4)
		cl.send(&openflow.FeaturesRequest{})
		if _, ok := cl.recv().(*openflow.FeaturesReply); !ok {
			t.Errorf("%s: no features reply", a)
		}
	}
	ctrlLn.(*net.UnixListener).SetDeadline(time.Now().Add(5 * time.Second))
	nc, err := ctrlLn.Accept()
	if err != nil {
		t.Fatalf("the switch did not dial its unix: controller: %v", err)
	}
	cl := newClient(t, nc)
	cl.handshake(1, 1)
	waitFor(t, "controller status", func() bool { return s.m.Controllers()[0].IsConnected })
	st := s.m.Status()
	if len(st) != 3 || st[0].Kind != ConnController || st[1].Kind != ConnService {
		t.Errorf("status %+v", st)
	}
}

// TestConnPacketInRateLimit: a controller's packet-ins beyond its token
// bucket are dropped and counted.
func TestConnPacketInRateLimit(t *testing.T) {
	s := newTestSwitch(t, 1, BridgeConfig{FailMode: FailSecure}, ConnConfig{PacketInRate: 10, PacketInBurst: 5})
	cl, c := s.pipe(t, ConnController)
	cl.handshake(1, 1)
	pin := PacketIn{Packet: frame(1, 2), Reason: ReasonAction}
	pin.Key.InPort = s.b.Ports.Snapshot().ByOF(1).DPPort
	for i := 0; i < 50; i++ {
		s.m.packetIn(pin)
	}
	got := 0
	for {
		m, err := cl.recvWithin(300 * time.Millisecond)
		if err != nil {
			break
		}
		if _, ok := m.(*openflow.PacketIn); ok {
			got++
		}
	}
	// 5 from the burst, and at most a few refilled at 10/s meanwhile.
	if got < 5 || got > 9 {
		t.Errorf("%d packet-ins passed the 10/s burst-5 limit, want 5..9", got)
	}
	if d := c.pinDrop.Load(); int(d) != 50-got {
		t.Errorf("%d dropped, want %d", d, 50-got)
	}
}

// FuzzConnHandle feeds arbitrary messages to a connection's handler, in
// both versions: whatever a peer sends, the switch answers or closes the
// connection, and never panics. The seeds are every message ovs-ofctl
// 3.1 sent in the codec's recorded sessions.
func FuzzConnHandle(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("openflow", "testdata", "ovs-ofctl", "*.hex"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(line) == 0 || line[0] == '#' {
				continue
			}
			raw := make([]byte, len(line)/2)
			if _, err := hex.Decode(raw, line); err == nil && len(raw) >= openflow.HeaderLen {
				f.Add(raw)
			}
		}
	}
	prov := dummy.New()
	dp, err := prov.Create("br0", datapath.Config{})
	if err != nil {
		f.Fatal(err)
	}
	defer dp.Close()
	b, err := NewBridge(BridgeConfig{Name: "br0", FailMode: FailSecure, MaxFlows: 10000}, dp)
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range []string{"p1", "p2"} {
		prov.AddNetdev(name)
		if _, err := b.AddPort(name, "system", 0); err != nil {
			f.Fatal(err)
		}
	}
	m, err := NewConnManager(b, ConnConfig{NoMgmt: true, Logger: quietLogger()})
	if err != nil {
		f.Fatal(err)
	}
	conns := map[uint8]*Conn{}
	for _, v := range []uint8{openflow.Version10, openflow.Version13} {
		a, peer := net.Pipe()
		defer a.Close()
		defer peer.Close()
		go io.Copy(io.Discard, peer)
		c := newConn(m, a, ConnService, "fuzz")
		c.version.Store(uint32(v))
		go func() { // drain the send queue as the writer would
			for {
				select {
				case buf := <-c.send:
					m.putBuf(buf)
				case <-c.closed:
					return
				}
			}
		}()
		conns[v] = c
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) < openflow.HeaderLen || len(raw) > openflow.MaxMessageLen {
			return
		}
		msg := append([]byte(nil), raw...)
		binary.BigEndian.PutUint16(msg[2:], uint16(len(msg)))
		for _, v := range []uint8{openflow.Version10, openflow.Version13} {
			msg[0] = v
			conns[v].handle(msg)
		}
	})
}
