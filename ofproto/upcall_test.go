package ofproto

import (
	"encoding/binary"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/governor"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// synFrame is a TCP SYN from macA to macB with source port sport.
func synFrame(sport uint16) []byte {
	b := make([]byte, 54)
	copy(b[0:], macB[:])
	copy(b[6:], macA[:])
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 6
	binary.BigEndian.PutUint16(ip[2:], 40)
	copy(ip[12:], []byte{10, 0, 0, 1})
	copy(ip[16:], []byte{10, 0, 0, 2})
	binary.BigEndian.PutUint16(ip[20:], sport)
	binary.BigEndian.PutUint16(ip[22:], 80)
	ip[32], ip[33] = 5<<4, 0x02
	return b
}

// dummyBridge makes a bridge on an in-memory datapath with devices p1, p2.
func dummyBridge(t testing.TB, cfg UpcallConfig) (*Bridge, *dummy.Provider) {
	t.Helper()
	prov := dummy.New()
	for _, n := range []string{"p1", "p2"} {
		if _, err := prov.AddNetdev(n); err != nil {
			t.Fatal(err)
		}
	}
	dp, err := prov.Create("br0", datapath.Config{Handlers: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBridge(BridgeConfig{Name: "br0", Upcall: cfg}, dp)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"p1", "p2"} {
		if _, err := b.AddPort(n, "system", 0); err != nil {
			t.Fatal(err)
		}
	}
	return b, prov
}

// nullOperate is a datapath whose Operate accepts every op without doing
// anything, so an allocation test measures the handler alone.
type nullOperate struct {
	datapath.Datapath
}

func (nullOperate) Operate(ops []datapath.Op) error {
	for i := range ops {
		ops[i].Err = nil
	}
	return nil
}

func (nullOperate) Stats() (datapath.Stats, error) { return datapath.Stats{}, nil }

// TestHandleBatchAllocs: in steady state (ukeys recycled as the
// revalidator would), a batch of 64 misses — translate, decide, build
// puts and executes, Operate — allocates nothing.
func TestHandleBatchAllocs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    UpcallConfig
		backer bool // translate through the Backer, as bridges on a shared datapath do
		fin    bool // FINs through a rule's fin_timeout (xlate_fintimeout.go)
	}{
		{"megaflows", UpcallConfig{}, false, false},
		{"exact", UpcallConfig{DisableMegaflows: true}, false, false},
		{"governor", UpcallConfig{DisableMegaflows: true, Governor: ptr(governor.Auto), GovernorThreshold: 100}, false, false},
		{"backer", UpcallConfig{}, true, false},
		{"fin_timeout", UpcallConfig{}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := dummyBridge(t, tc.cfg)
			var x translator = b.X
			if tc.backer {
				x = b.Backer
			}
			u := NewUdpif(nullOperate{b.DP}, x, tc.cfg)
			hd := u.newHandler(b.DP.Handlers()[0])
			ups := make([]datapath.Upcall, UpcallBatch)
			frames := make([][]byte, UpcallBatch)
			for i := range frames {
				frames[i] = synFrame(uint16(i))
			}
			if tc.fin {
				fm := FlowMod{Command: CmdAdd, Match: match(tcpMatch), Priority: 100, OutPort: openflow.PortAny,
					Instructions: apply(openflow.FinTimeout(1, 0), openflow.Output(2, 0))}
				if err := b.Tables.Apply(&fm, time.Now()); err != nil {
					t.Fatal(err)
				}
				for i := range frames {
					frames[i][14+33] = tcpFIN | 0x10
				}
			}
			sport := uint16(0)
			fill := func() {
				for i := range ups {
					sport++
					binary.BigEndian.PutUint16(frames[i][34:], sport)
					ups[i] = datapath.Upcall{Cmd: datapath.UpcallMiss, Packet: frames[i]}
					flow.ExtractInto(&ups[i].Key, frames[i], &flow.Metadata{InPort: 1})
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
			for i := 0; i < 20; i++ { // warm up: pools and buffers reach size
				fill()
				hd.handleBatch(ups, now)
				recycle()
			}
			allocs := testing.AllocsPerRun(50, func() {
				fill()
				hd.handleBatch(ups, now)
				recycle()
			})
			if allocs != 0 {
				t.Errorf("a batch of %d misses allocates %v times", UpcallBatch, allocs)
			}
			if u.c.misses.Load() == 0 || u.c.executes.Load() == 0 {
				t.Errorf("nothing handled: %+v", u.Stats())
			}
			if tc.fin {
				if r := onlyRuleMatching(t, b.Tables, 100); r != nil {
					if i, _ := r.Value.Timeouts(); i != 1 {
						t.Errorf("the FINs left idle_timeout %d, want 1", i)
					}
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestUpcallEndToEnd: frames injected on a dummy port become upcalls,
// flows and forwarded frames; later frames of the flow stay in the
// datapath; the revalidator credits the OpenFlow rule.
func TestUpcallEndToEnd(t *testing.T) {
	b, prov := dummyBridge(t, UpcallConfig{RevalidateInterval: 50 * time.Millisecond})
	b.Start()
	defer b.Stop()
	p1, p2 := prov.Netdev("p1"), prov.Netdev("p2")
	p1.Send(synFrame(1))
	if _, err := p2.Recv(2 * time.Second); err != nil {
		t.Fatalf("first frame not forwarded: %v", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		if st, _ := b.DP.Stats(); st.Flows > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no flow installed")
		}
		time.Sleep(time.Millisecond)
	}
	for i := 0; i < 10; i++ {
		p1.Send(synFrame(uint16(100 + i)))
		if _, err := p2.Recv(time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if m := b.Udpif.Stats().Misses; m != 1 {
		t.Errorf("%d misses for 11 frames of one megaflow, want 1", m)
	}
	b.Udpif.Revalidate()
	var k flow.Key
	k.EthType = flow.EthTypeIPv4
	r := b.Tables.Lookup(0, &k, &flow.Mask{})
	if p, _ := r.Value.Stats(); p != 11 {
		t.Errorf("NORMAL rule credited with %d packets, want 11", p)
	}
}

// TestControllerPacketIn: a CONTROLLER output comes back as an action
// upcall and reaches the PacketIn hook with its reason, table and cookie.
func TestControllerPacketIn(t *testing.T) {
	b, prov := dummyBridge(t, UpcallConfig{})
	got := make(chan PacketIn, 1)
	b.SetPacketIn(func(p PacketIn) { got <- p })
	fm := FlowMod{Command: CmdAdd, Priority: 100, Cookie: 0xabc, OutPort: openflow.PortAny,
		Instructions: openflow.Instructions{Apply: []openflow.Action{openflow.Output(openflow.PortController, 0xffff)}}}
	if err := b.Tables.Apply(&fm, time.Now()); err != nil {
		t.Fatal(err)
	}
	b.Start()
	defer b.Stop()
	prov.Netdev("p1").Send(synFrame(7))
	select {
	case p := <-got:
		if p.Reason != ReasonAction || p.Cookie != 0xabc || len(p.Packet) != 54 {
			t.Errorf("packet-in %+v", p)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("no packet-in: %+v", b.Udpif.Stats())
	}
}

// BenchmarkUpcallMiss measures misses handled end to end on the dummy
// datapath — upcall queued, received in a batch, translated, flow put and
// packet executed — in the exact-match regime where every frame is a new
// flow. ns/op is wall time per miss with the sender and the handler on
// separate cores; cpu-ns/miss is the process's CPU time per miss (sender,
// dummy datapath and handler together), the figure that bounds misses per
// second per core.
func BenchmarkUpcallMiss(b *testing.B) {
	br, prov := dummyBridge(b, UpcallConfig{DisableMegaflows: true, FlowLimit: 1 << 20})
	br.Start()
	defer br.Stop()
	p1 := prov.Netdev("p1")
	frames := make([][]byte, 4096)
	for i := range frames {
		frames[i] = synFrame(uint16(i))
	}
	// The window below polls the miss counter itself: Stats() sums a
	// dozen counters and every handler's losses, which would be the
	// benchmark's own cost. Losses (none while the window holds) are
	// checked at the end.
	handled := func() int { return int(br.Udpif.c.misses.Load()) }
	b.ReportAllocs()
	b.ResetTimer()
	start := handled()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		f := frames[i%len(frames)]
		binary.BigEndian.PutUint16(f[26:], uint16(i>>12)) // vary ip_src too: every frame a new flow
		p1.Send(f)
		// Keep at most 512 frames ahead of the handler, so the dummy's
		// upcall queue never overflows.
		for i+1-(handled()-start) > 512 {
			runtime.Gosched()
		}
	}
	for handled()-start < b.N && br.Udpif.Stats().Lost == 0 {
		runtime.Gosched()
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/miss")
	if lost := br.Udpif.Stats().Lost; lost > 0 {
		b.ReportMetric(float64(lost), "lost")
	}
}

// cpuTime returns the process's user+system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// TestUpcallMissAllocs: on the dummy datapath a miss end to end (upcall
// queued and received, translated, flow put, packet executed and output)
// makes no garbage, once the pools and the flow table's blocks exist: the
// switch's miss path allocates nothing per packet, and neither does the
// datapath that stands in for the kernel.
func TestUpcallMissAllocs(t *testing.T) {
	br, prov := dummyBridge(t, UpcallConfig{DisableMegaflows: true, FlowLimit: 1 << 20})
	// Out to LOCAL, the in-memory datapath's internal port: a device
	// with no reader behind it. (An output to p2 would add the dummy
	// wire's copy of the frame for its reader, which the kernel makes as
	// an skb clone; that is the test's wire, not the switch.)
	fm := FlowMod{Command: CmdAdd, Priority: 100, OutPort: openflow.PortAny,
		Instructions: openflow.Instructions{Apply: []openflow.Action{openflow.Output(openflow.PortLocal, 0)}}}
	if err := br.Tables.Apply(&fm, time.Now()); err != nil {
		t.Fatal(err)
	}
	br.Start()
	defer br.Stop()
	p1 := prov.Netdev("p1")
	f := synFrame(1)
	i := 0
	miss := func() {
		i++
		binary.BigEndian.PutUint16(f[34:], uint16(i))     // a new flow each time:
		binary.BigEndian.PutUint16(f[26:], uint16(i>>16)) // source port and address
		want := br.Udpif.c.misses.Load() + 1
		p1.Send(f)
		for deadline := time.Now().Add(10 * time.Second); br.Udpif.c.misses.Load() < want; {
			if time.Now().After(deadline) {
				t.Fatalf("miss %d not handled: %+v", i, br.Udpif.Stats())
			}
			runtime.Gosched()
		}
	}
	for range 3000 { // warm the pools, the flow slabs and the maps
		miss()
	}
	// AllocsPerRun counts every goroutine's allocations, the
	// revalidator's too: below one per miss means none on the miss path.
	if n := testing.AllocsPerRun(2000, miss); n != 0 {
		t.Errorf("%v allocations per miss", n)
	}
}

// BenchmarkHandleBatch is the miss path on one goroutine: 64 new flows'
// frames sent into the dummy datapath, then received, translated,
// installed and executed by a handler called inline, as its goroutine
// would. With no scheduler, sender spinning or second core in the
// figure, ns/op is the CPU cost of one miss (the dummy datapath's lookup,
// queueing and flow put included), the number that bounds misses per
// second per core.
func BenchmarkHandleBatch(b *testing.B) {
	br, prov := dummyBridge(b, UpcallConfig{DisableMegaflows: true, FlowLimit: 1 << 30})
	fm := FlowMod{Command: CmdAdd, Priority: 100, OutPort: openflow.PortAny,
		Instructions: openflow.Instructions{Apply: []openflow.Action{openflow.Output(openflow.PortLocal, 0)}}}
	if err := br.Tables.Apply(&fm, time.Now()); err != nil {
		b.Fatal(err)
	}
	u := br.Udpif
	hd := u.newHandler(br.DP.Handlers()[0])
	defer hd.unmap()
	p1 := prov.Netdev("p1")
	f := synFrame(1)
	now := time.Now()
	seq := 0
	batch := func() int {
		for range UpcallBatch {
			seq++
			binary.BigEndian.PutUint16(f[34:], uint16(seq))
			binary.BigEndian.PutUint32(f[26:], 0x0a000000|uint32(seq>>16))
			p1.Send(f)
		}
		n, err := hd.h.Recv(hd.ups, hd.bufs)
		if err != nil {
			b.Fatal(err)
		}
		hd.handleBatch(hd.ups[:n], now)
		return n
	}
	for range 50 { // warm the pools, slabs and maps
		batch()
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	done := 0
	for done < b.N {
		done += batch()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/miss")
	// CPU time, unlike wall time, does not count the time another
	// process held the core: on a shared machine it is the steadier figure.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(done), "cpu-ns/miss")
	if st := u.Stats(); st.Lost > 0 || st.PutFailed > 0 {
		b.Fatalf("lost %d, failed puts %d", st.Lost, st.PutFailed)
	}
}
