package ofproto

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestConnRoles14: over 1.4 (and 1.3, as the ONF extension) a master
// that another controller displaces hears OFPT_ROLE_STATUS, and a
// property-based set-async changes only the masks it names.
func TestConnRoles14(t *testing.T) {
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	a, _ := s.pipe(t, ConnController)
	a.handshake(openflow.Version14, openflow.Version14)
	c, _ := s.pipe(t, ConnController)
	c.handshake(openflow.Version13, openflow.Version13)
	c.send(&openflow.RoleRequest{Role: openflow.RoleMaster, GenerationID: 4})
	if rr, ok := c.recv(openflow.TypePacketIn).(*openflow.RoleReply); !ok || rr.Role != openflow.RoleMaster {
		t.Fatalf("c master: %+v", rr)
	}
	b, _ := s.pipe(t, ConnController)
	b.handshake(openflow.Version15, openflow.Version15)
	a.send(&openflow.RoleRequest{Role: openflow.RoleMaster, GenerationID: 5})
	if rr, ok := a.recv(openflow.TypePacketIn).(*openflow.RoleReply); !ok || rr.Role != openflow.RoleMaster {
		t.Fatalf("a master: %+v", rr)
	}
	b.send(&openflow.RoleRequest{Role: openflow.RoleMaster, GenerationID: 6})
	if rr, ok := b.recv(openflow.TypePacketIn).(*openflow.RoleReply); !ok || rr.Role != openflow.RoleMaster {
		t.Fatalf("b master: %+v", rr)
	}
	st, ok := a.recv(openflow.TypePacketIn).(*openflow.RoleStatus)
	if !ok || st.Role != openflow.RoleSlave || st.Reason != openflow.RoleReasonMasterRequest || st.GenerationID != 6 {
		t.Fatalf("a's role status: %+v", st)
	}
	if st, ok := c.recv(openflow.TypePacketIn).(*openflow.RoleStatus); !ok || st.Version != openflow.Version13 || st.GenerationID != 5 {
		t.Fatalf("c's (1.3, ONF) role status: %+v", st)
	}

	b.send(&openflow.SetAsync{AsyncConfig: openflow.AsyncConfig{PacketInMask: [2]uint32{0, 1}},
		Props: 1 << openflow.AsyncPropPacketInSlave})
	b.send(&openflow.GetAsyncRequest{})
	ga, ok := b.recv(openflow.TypePacketIn).(*openflow.GetAsyncReply)
	if !ok {
		t.Fatalf("get async: %+v", ga)
	}
	want := defaultAsync
	want.PacketInMask[1] = 1
	if ga.AsyncConfig != want {
		t.Errorf("async config %+v, want %+v (only packet-in slave changed)", ga.AsyncConfig, want)
	}
}

// TestConnBundleErrors holds the bundle state machine to ovs-vswitchd's
// (ofproto/bundles.c): which OFPBFC error each misuse gets, over 1.3's
// ONF extension, 1.4 and 1.5.
func TestConnBundleErrors(t *testing.T) {
	for _, v := range []uint8{openflow.Version13, openflow.Version14, openflow.Version15} {
		t.Run(fmt.Sprintf("version %#x", v), func(t *testing.T) {
			s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
			cl, _ := s.pipe(t, ConnService)
			cl.handshake(v, v)
			ctl := func(id uint32, typ, flags uint16) openflow.Msg {
				cl.send(&openflow.BundleControl{BundleID: id, Type: typ, Flags: flags})
				return cl.recv(openflow.TypePortStatus)
			}
			wantErr := func(m openflow.Msg, code uint16) {
				t.Helper()
				e := openflow.BundleError(v, code, "")
				em, ok := m.(*openflow.ErrorMsg)
				if !ok || em.Type != e.Type || em.Code != e.Code || em.Experimenter != e.Experimenter {
					t.Fatalf("got %+v, want bundle error %d", m, code)
				}
			}
			wantReply := func(m openflow.Msg, typ uint16) {
				t.Helper()
				if r, ok := m.(*openflow.BundleControl); !ok || r.Type != typ {
					t.Fatalf("got %+v, want bundle control type %d", m, typ)
				}
			}
			const af = openflow.BundleAtomic | openflow.BundleOrdered
			wantReply(ctl(1, openflow.BundleOpenRequest, af), openflow.BundleOpenReply)
			wantErr(ctl(1, openflow.BundleOpenRequest, af), openflow.BundleFailedBadID) // and bundle 1 is gone
			wantErr(ctl(1, openflow.BundleCommitRequest, af), openflow.BundleFailedBadID)
			wantErr(ctl(2, openflow.BundleCloseRequest, af), openflow.BundleFailedBadID)
			wantErr(ctl(2, openflow.BundleDiscardRequest, 0), openflow.BundleFailedBadID)
			wantErr(ctl(2, openflow.BundleOpenReply, 0), openflow.BundleFailedBadType)

			add := func(id uint32, flags uint16, inner openflow.Msg, xid uint32) openflow.Msg {
				inner.Env().Version, inner.Env().Xid = v, xid
				raw, err := inner.Append(nil)
				if err != nil {
					t.Fatal(err)
				}
				cl.send(&openflow.BundleAdd{Envelope: openflow.Envelope{Xid: 77}, BundleID: id, Flags: flags, Message: raw})
				m, err := cl.recvWithin(200 * time.Millisecond)
				if err != nil {
					return nil // no answer: accepted
				}
				return m
			}
			fm := func(port uint32) *openflow.FlowMod {
				return &openflow.FlowMod{Command: openflow.FlowAdd, Priority: uint16(port), BufferID: openflow.NoBuffer,
					OutPort: openflow.PortAny, OutGroup: openflow.GroupAny, Match: inPortMatch(port), Instructions: output(2)}
			}
			wantErr(add(3, af, fm(1), 78), openflow.BundleFailedMsgBadXid)
			wantErr(add(3, af, &openflow.BarrierRequest{}, 77), openflow.BundleFailedMsgUnsup)
			if m := add(3, af, fm(1), 77); m != nil {
				t.Fatalf("add to a new bundle: %+v", m)
			}
			wantErr(add(3, openflow.BundleOrdered, fm(2), 77), openflow.BundleFailedBadFlags) // drops bundle 3
			wantErr(ctl(3, openflow.BundleCommitRequest, af), openflow.BundleFailedBadID)

			// Close, then adding is refused; a commit with other flags fails.
			add(4, af, fm(1), 77)
			wantReply(ctl(4, openflow.BundleCloseRequest, af), openflow.BundleCloseReply)
			wantErr(add(4, af, fm(2), 77), openflow.BundleFailedBundleClosed)
			add(5, af, fm(1), 77)
			wantErr(ctl(5, openflow.BundleCommitRequest, openflow.BundleOrdered), openflow.BundleFailedBadFlags)
			wantErr(ctl(5, openflow.BundleCommitRequest, af), openflow.BundleFailedBadID)

			// Discard forgets; commit applies.
			add(6, af, fm(1), 77)
			wantReply(ctl(6, openflow.BundleDiscardRequest, af), openflow.BundleDiscardReply)
			if s.b.Tables.Len() != 0 {
				t.Fatalf("%d flows before any commit", s.b.Tables.Len())
			}
			add(7, af, fm(1), 77)
			add(7, af, fm(2), 77)
			wantReply(ctl(7, openflow.BundleCommitRequest, af), openflow.BundleCommitReply)
			if s.b.Tables.Len() != 2 {
				t.Fatalf("%d flows after the commit, want 2", s.b.Tables.Len())
			}

			// A port mod in an atomic bundle fails at commit, as in
			// ovs-vswitchd; in a non-atomic one it is applied.
			p1 := s.b.Ports.Snapshot().ByOF(1)
			pm := &openflow.PortMod{PortNo: 1, HWAddr: p1.HWAddr, Config: openflow.PortConfigDown, Mask: openflow.PortConfigDown}
			add(8, af, fm(3), 77)
			add(8, af, pm, 77)
			wantErr(cl.recvAfter(func() { cl.send(&openflow.BundleControl{BundleID: 8, Type: openflow.BundleCommitRequest, Flags: af}) }),
				openflow.BundleFailedMsgFailed) // for the port mod
			wantErr(cl.recv(), openflow.BundleFailedMsgFailed) // for the commit
			if s.b.Tables.Len() != 2 || s.b.Ports.Snapshot().ByOF(1).Down {
				t.Fatal("a failed bundle changed the switch")
			}
			add(9, openflow.BundleOrdered, fm(3), 77)
			add(9, openflow.BundleOrdered, pm, 77)
			wantReply(ctl(9, openflow.BundleCommitRequest, openflow.BundleOrdered), openflow.BundleCommitReply)
			if s.b.Tables.Len() != 3 || !s.b.Ports.Snapshot().ByOF(1).Down {
				t.Fatal("a non-atomic bundle's flow mod and port mod did not both apply")
			}

			// A slave may not bundle.
			cl.send(&openflow.RoleRequest{Role: openflow.RoleSlave, GenerationID: 1})
			if rr, ok := cl.recv(openflow.TypePortStatus).(*openflow.RoleReply); !ok || rr.Role != openflow.RoleSlave {
				t.Fatalf("role reply %+v", rr)
			}
			if m := ctl(10, openflow.BundleOpenRequest, af); !isErr(m, openflow.ErrTypeBadRequest, openflow.BadRequest13IsSlave) {
				t.Fatalf("slave bundle open: %#v", m)
			}
		})
	}
}

// recvAfter runs send and returns the next message.
func (c *ofClient) recvAfter(send func()) openflow.Msg {
	c.t.Helper()
	send()
	return c.recv()
}

// TestTablesApplyAllAtomic: readers of a View never see part of an
// ApplyAll, across tables, while bundles commit and fail concurrently.
// Each bundle adds flow i to table 0 and its partner to table 1; every
// other bundle also carries a flow mod that fails, and must leave nothing.
func TestTablesApplyAllAtomic(t *testing.T) {
	ts := NewTables()
	const n = 300
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads, torn atomic.Int64
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				v := ts.View()
				n0, n1 := v.Table(0).Len(), v.Table(1).Len()
				if n0 != n1 {
					torn.Add(1)
				}
				// Translation's view: a packet that hits flow i in table
				// 0 finds its partner in table 1.
				for i := 0; i < n0; i += 37 {
					var k flow.Key
					k.InPort = uint32(i + 1)
					var wc flow.Mask
					if v.Lookup(0, &k, &wc) != nil && v.Lookup(1, &k, &wc) == nil {
						torn.Add(1)
					}
				}
				reads.Add(1)
			}
		}()
	}
	now := time.Now()
	for i := 0; i < n; i++ {
		mk := func(table uint8) *FlowMod {
			fm := &FlowMod{Command: CmdAdd, Table: table, Priority: 10, OutPort: openflow.PortAny,
				Instructions: openflow.Instructions{Apply: []openflow.Action{openflow.Output(2, 0)}}}
			fm.Match.Key.InPort, fm.Match.Mask.InPort = uint32(i+1), ^uint32(0)
			if table == 0 {
				fm.Instructions.GotoTable, fm.Instructions.Table = true, 1
			}
			return fm
		}
		fms := []*FlowMod{mk(0), mk(1)}
		if i%2 == 1 {
			// Fails inside the transaction, after the two adds: it
			// overlaps the table 1 flow this very bundle added.
			bad := &FlowMod{Command: CmdAdd, Table: 1, Priority: 10, OutPort: openflow.PortAny, Flags: FlagCheckOverlap}
			fms = append(fms, bad)
		}
		failed := -1
		err := ts.ApplyAll(fms, now, &failed)
		if (err != nil) != (i%2 == 1) || (err != nil && failed != 2) {
			t.Fatalf("bundle %d: err %v at %d", i, err, failed)
		}
	}
	stop.Store(true)
	wg.Wait()
	if torn.Load() != 0 {
		t.Fatalf("%d of %d reads saw part of a bundle", torn.Load(), reads.Load())
	}
	if got := ts.Len(); got != n {
		t.Fatalf("%d flows, want %d (the failed bundles must leave none)", got, n)
	}
	if v := ts.View(); v.Table(2).Len() != 0 || v.Table(0).Len() != n/2 || v.Table(1).Len() != n/2 {
		t.Fatalf("tables hold %d/%d/%d", v.Table(0).Len(), v.Table(1).Len(), v.Table(2).Len())
	}
	t.Logf("%d reads during %d bundles, none torn", reads.Load(), n)
}

func isErr(m openflow.Msg, typ, code uint16) bool {
	em, ok := m.(*openflow.ErrorMsg)
	return ok && em.Type == typ && em.Code == code
}

// TestConnBundleLimits: bundles are bounded per connection and per
// bridge (OFPBFC_OUT_OF_BUNDLES, OFPBFC_MSG_TOO_MANY), and what a
// connection held is released when it closes.
func TestConnBundleLimits(t *testing.T) {
	defer func(n, b int, all int64) { maxBundles, maxBundleBytes, maxBundleBytesAll = n, b, all }(
		maxBundles, maxBundleBytes, maxBundleBytesAll)
	maxBundles, maxBundleBytes, maxBundleBytesAll = 2, 8000, 12000
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	v := openflow.Version14
	const af = openflow.BundleAtomic | openflow.BundleOrdered
	fill := func(cl *ofClient, id uint32, n int) openflow.Msg {
		for i := 0; i < n; i++ {
			inner, _ := (&openflow.FlowMod{Envelope: openflow.Envelope{Version: v, Xid: 90}, Command: openflow.FlowAdd,
				Priority: uint16(i), BufferID: openflow.NoBuffer, OutPort: openflow.PortAny, OutGroup: openflow.GroupAny,
				Instructions: output(2)}).Append(nil)
			cl.send(&openflow.BundleAdd{Envelope: openflow.Envelope{Xid: 90}, BundleID: id, Flags: af, Message: inner})
			if m, err := cl.recvWithin(100 * time.Millisecond); err == nil {
				return m
			}
		}
		return nil
	}
	a, _ := s.pipe(t, ConnService)
	a.handshake(v, v)
	too := openflow.BundleError(v, openflow.BundleFailedMsgTooMany, "")
	m := fill(a, 1, 20)
	if em, ok := m.(*openflow.ErrorMsg); !ok || em.Type != too.Type || em.Code != too.Code {
		t.Fatalf("past the per-connection limit: %+v", m)
	}
	if got := s.m.bundleBytes.Load(); got <= 0 || got > 8000 {
		t.Fatalf("the bridge counts %d bundle bytes", got)
	}
	fill(a, 2, 1)
	a.send(&openflow.BundleControl{BundleID: 3, Type: openflow.BundleOpenRequest, Flags: af})
	out := openflow.BundleError(v, openflow.BundleFailedOutOfBundles, "")
	if em, ok := a.recv().(*openflow.ErrorMsg); !ok || em.Code != out.Code {
		t.Fatalf("a third bundle: %+v", em)
	}
	// Another connection runs into the bridge-wide limit.
	b, bc := s.pipe(t, ConnService)
	b.handshake(v, v)
	if em, ok := fill(b, 1, 20).(*openflow.ErrorMsg); !ok || em.Code != too.Code {
		t.Fatalf("past the bridge-wide limit: %+v", em)
	}
	held := s.m.bundleBytes.Load()
	bc.Close()
	waitFor(t, "the closed connection's bundles to be released", func() bool { return s.m.bundleBytes.Load() < held })
	// Nothing was committed.
	if s.b.Tables.Len() != 0 {
		t.Fatalf("%d flows", s.b.Tables.Len())
	}
}

// TestConnBundleTimeout: as in ovs-vswitchd ("ofproto - bundle timeout"),
// adds and a close keep a bundle alive; idle past the timeout it is
// discarded with OFPBFC_TIMEOUT quoting the message that opened it, and a
// later commit finds no bundle.
func TestConnBundleTimeout(t *testing.T) {
	defer func(idle, sweep time.Duration) { bundleIdleTimeout, bundleSweep = idle, sweep }(bundleIdleTimeout, bundleSweep)
	bundleIdleTimeout, bundleSweep = 400*time.Millisecond, 20*time.Millisecond
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	v := openflow.Version14
	cl, _ := s.pipe(t, ConnService)
	cl.handshake(v, v)
	const af = openflow.BundleAtomic | openflow.BundleOrdered
	cl.send(&openflow.BundleControl{Envelope: openflow.Envelope{Xid: 1}, BundleID: 1, Type: openflow.BundleOpenRequest, Flags: af})
	if r, ok := cl.recv().(*openflow.BundleControl); !ok || r.Type != openflow.BundleOpenReply {
		t.Fatalf("open: %+v", r)
	}
	inner, _ := (&openflow.FlowMod{Envelope: openflow.Envelope{Version: v, Xid: 2}, Command: openflow.FlowAdd,
		BufferID: openflow.NoBuffer, OutPort: openflow.PortAny, OutGroup: openflow.GroupAny, Instructions: output(1)}).Append(nil)
	time.Sleep(250 * time.Millisecond)
	cl.send(&openflow.BundleAdd{Envelope: openflow.Envelope{Xid: 2}, BundleID: 1, Flags: af, Message: inner})
	time.Sleep(250 * time.Millisecond)
	cl.send(&openflow.BundleControl{Envelope: openflow.Envelope{Xid: 3}, BundleID: 1, Type: openflow.BundleCloseRequest, Flags: af})
	if r, ok := cl.recv().(*openflow.BundleControl); !ok || r.Type != openflow.BundleCloseReply {
		t.Fatalf("close 500 ms after the open (but 250 ms after the add): %+v", r)
	}
	start := time.Now()
	m, err := cl.recvWithin(2 * time.Second)
	em, ok := m.(*openflow.ErrorMsg)
	if err != nil || !ok || em.Type != openflow.Err14TypeBundleFailed || em.Code != openflow.BundleFailedTimeout {
		t.Fatalf("want OFPBFC_TIMEOUT, got %+v, %v", m, err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("timed out %v after the close, before the idle timeout", d)
	}
	if q, err := openflow.Decode(em.Data); err != nil || em.Xid != 1 {
		t.Errorf("the timeout quotes %+v (xid %d), want the open request", q, em.Xid)
	} else if bc, ok := q.(*openflow.BundleControl); !ok || bc.Type != openflow.BundleOpenRequest {
		t.Errorf("the timeout quotes %+v, want the open request", q)
	}
	cl.send(&openflow.BundleControl{Envelope: openflow.Envelope{Xid: 4}, BundleID: 1, Type: openflow.BundleCommitRequest, Flags: af})
	if !isErr(cl.recv(), openflow.Err14TypeBundleFailed, openflow.BundleFailedBadID) || s.b.Tables.Len() != 0 {
		t.Fatal("a commit after the timeout found the bundle")
	}
}
