package rstp

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// link joins two port ends; down links carry nothing.
type link struct {
	a, b   *Port
	frames int
	down   bool
}

// testNet runs bridges joined by links, delivering BPDUs after each step.
type testNet struct {
	links   []*link
	queue   []func()
	to      []*Port // the receiver of each queued BPDU
	bridges []*Bridge
}

func (n *testNet) bridge(name string, addr uint64) *Bridge {
	b := New(name, addr, func(p *Port, bpdu []byte) {
		c := append([]byte(nil), bpdu...)
		for _, l := range n.links {
			if l.down {
				continue
			}
			var peer *Port
			switch p {
			case l.a:
				peer = l.b
			case l.b:
				peer = l.a
			default:
				continue
			}
			l.frames++
			n.queue = append(n.queue, func() { peer.br.Receive(peer, c) })
			n.to = append(n.to, peer)
		}
	})
	n.bridges = append(n.bridges, b)
	return b
}

func (n *testNet) join(a, b *Port) *link {
	l := &link{a: a, b: b}
	n.links = append(n.links, l)
	a.SetOperational(true)
	b.SetOperational(true)
	return l
}

func (n *testNet) deliver() {
	for len(n.queue) > 0 {
		q := n.queue
		n.queue, n.to = nil, nil
		for _, f := range q {
			f()
		}
	}
}

func (n *testNet) run(ms, step int) {
	n.deliver()
	for t := 0; t < ms; t += step {
		for _, b := range n.bridges {
			b.Tick(step)
		}
		n.deliver()
	}
}

type want struct {
	p     *Port
	role  Role
	state State
}

func check(t *testing.T, when string, ws []want) {
	t.Helper()
	for _, w := range ws {
		if w.p.Role() != w.role || w.p.State() != w.state {
			t.Errorf("%s: %s port %d: %v %v, want %v %v", when, w.p.br.Name, w.p.Num(), w.p.Role(), w.p.State(),
				w.role, w.state)
		}
	}
}

// TestLoopOfTwoBridges joins two bridges twice: the lower identifier is
// the root, the other's first port is its root port and its second the
// only discarding port, reached by the proposal/agreement handshake well
// inside one forward delay; when the root port's link fails, the
// alternate takes over at once.
func TestLoopOfTwoBridges(t *testing.T) {
	n := &testNet{}
	a := n.bridge("br0", 0xaa)
	b := n.bridge("br1", 0xbb)
	a.SetPriority(4096)
	a1, a2, ah := a.AddPort(1), a.AddPort(2), a.AddPort(3)
	b1, b2, bh := b.AddPort(1), b.AddPort(2), b.AddPort(3)
	l1 := n.join(a1, b1)
	n.join(a2, b2)
	ah.SetOperational(true) // hosts: nothing answers
	bh.SetOperational(true)
	n.run(4000, 100) // < forward delay (15 s): only the handshake and edge detection can have done it
	if !a.IsRoot() || b.IsRoot() || b.RootID() != a.ID() || b.RootPort() != b1 {
		t.Fatalf("root: br0 %v br1 %v (root %v, port %v)", a.IsRoot(), b.IsRoot(), b.RootID(), b.RootPort())
	}
	if b.RootPathCost() != DefaultPathCost {
		t.Errorf("br1 root path cost %d", b.RootPathCost())
	}
	check(t, "converged", []want{
		{a1, RoleDesignated, Forwarding}, {a2, RoleDesignated, Forwarding}, {ah, RoleDesignated, Forwarding},
		{b1, RoleRoot, Forwarding}, {b2, RoleAlternate, Discarding}, {bh, RoleDesignated, Forwarding},
	})
	discarding := 0
	for _, br := range n.bridges {
		br.Ports(func(p *Port) {
			if p.State() == Discarding {
				discarding++
			}
		})
	}
	if discarding != 1 {
		t.Errorf("%d discarding ports, want 1", discarding)
	}
	if !ah.OperEdge() || !bh.OperEdge() || a1.OperEdge() || b2.OperEdge() {
		t.Errorf("edges: ah %v bh %v a1 %v b2 %v", ah.OperEdge(), bh.OperEdge(), a1.OperEdge(), b2.OperEdge())
	}
	// Steady state: BPDUs are bounded by the hello time, ~1 per 2 s per
	// designated port.
	before := 0
	for _, l := range n.links {
		before += l.frames
	}
	flushed(a)
	flushed(b)
	n.run(20000, 100)
	after := 0
	for _, l := range n.links {
		after += l.frames
	}
	if d := after - before; d < 15 || d > 30 {
		t.Errorf("%d BPDUs in 20 s on two links, want ~20", d)
	}
	if fa, fb := flushed(a), flushed(b); fa != "" || fb != "" {
		t.Errorf("MAC entries flushed in a steady state: br0 %q br1 %q", fa, fb)
	}
	check(t, "steady", []want{{b1, RoleRoot, Forwarding}, {b2, RoleAlternate, Discarding}})

	// The root port's link fails.
	l1.down = true
	a1.SetOperational(false)
	b1.SetOperational(false)
	n.deliver()
	check(t, "failover", []want{
		{b1, RoleDisabled, Discarding}, {b2, RoleRoot, Forwarding}, {a2, RoleDesignated, Forwarding},
	})
	// The alternate took the root port's place: what br1 learned on b1
	// moves to b2, and b1's own flush is left to that. The edge port bh
	// keeps its entries; so does br0's, when b2's TC reaches a2, and a1,
	// which stopped learning, flushes.
	if from, to := b.RootShift(); from != b1 || to != b2 {
		t.Errorf("br1 root shift %v -> %v, want port 1 -> 2", from, to)
	}
	b.ClearRootShift()
	if f := flushed(b); f != "1" {
		t.Errorf("br1 flushed ports %q, want 1 (b1, stopped learning)", f)
	}
	n.run(200, 100)
	if f := flushed(a); f != "1" {
		t.Errorf("br0 flushed ports %q, want 1 (a1, stopped learning)", f)
	}
	if !a2.tcActive || !b2.tcActive || bh.tcActive {
		t.Errorf("active: a2 %v b2 %v bh %v, want true true false", a2.tcActive, b2.tcActive, bh.tcActive)
	}
	// It comes back: b1 is the better root port again.
	l1.down = false
	a1.SetOperational(true)
	b1.SetOperational(true)
	n.run(4000, 100)
	check(t, "recovered", []want{
		{a1, RoleDesignated, Forwarding}, {b1, RoleRoot, Forwarding}, {b2, RoleAlternate, Discarding},
	})
}

// flushed is the numbers of the ports whose entries b asks to flush.
func flushed(b *Bridge) string {
	var s []string
	b.TakeFDBFlush(func(p *Port) { s = append(s, fmt.Sprint(p.Num())) })
	return strings.Join(s, ",")
}

// TestTopologyChangeFlushesActivePorts: a TC received on one port
// flushes the bridge's other active (non-edge, forwarding root or
// designated) ports and no others, and is signalled on them.
func TestTopologyChangeFlushesActivePorts(t *testing.T) {
	n := &testNet{}
	a := n.bridge("br0", 0xaa)
	b := n.bridge("br1", 0xbb)
	c := n.bridge("br2", 0xcc)
	a.SetPriority(4096)
	a1, a2 := a.AddPort(1), a.AddPort(2)
	b1, b2, bh := b.AddPort(1), b.AddPort(2), b.AddPort(3)
	c1 := c.AddPort(1)
	n.join(a1, b1)
	n.join(b2, c1)
	a2.SetOperational(true)
	bh.SetOperational(true) // a host: becomes an edge
	n.run(8000, 100)
	check(t, "converged", []want{{b1, RoleRoot, Forwarding}, {b2, RoleDesignated, Forwarding}, {bh, RoleDesignated, Forwarding},
		{c1, RoleRoot, Forwarding}})
	if !bh.OperEdge() || b2.OperEdge() {
		t.Fatalf("edges: bh %v b2 %v", bh.OperEdge(), b2.OperEdge())
	}
	n.run(10000, 100) // every TC of the convergence over
	for _, br := range n.bridges {
		flushed(br)
	}
	tc := BPDU{Version: VersionRSTP, Type: TypeRST, Flags: FlagTC | wireRoleRoot<<flagRoleShift | FlagForwarding | FlagLearning,
		RootID: a.ID(), RootPathCost: 2 * DefaultPathCost, BridgeID: c.ID(), PortID: c1.PortID(),
		MaxAge: 20 * 256, HelloTime: 2 * 256, ForwardDelay: 15 * 256}
	if err := b.Receive(b2, tc.Append(nil)); err != nil {
		t.Fatal(err)
	}
	if f := flushed(b); f != "1" {
		t.Errorf("br1 flushed ports %q after a TC on port 2, want 1 (not the receiver, not the edge)", f)
	}
	if b1.tcWhile == 0 || bh.tcWhile != 0 {
		t.Errorf("TC signalled: b1 %d bh %d, want on b1, not on the edge", b1.tcWhile, bh.tcWhile)
	}
	n.deliver()
	if f := flushed(a); f != "" {
		t.Errorf("br0 flushed ports %q after br1's TC, want none (a1 received it, a2 is an edge)", f)
	}
	if f := flushed(c); f != "" {
		t.Errorf("br2 flushed ports %q, want none (its only port sent the TC)", f)
	}
}

// TestForwardDelayFallback: a neighbour that never agrees (an 802.1D-1998
// bridge's Configuration BPDUs, inferior) leaves the designated port to
// learn after one forward delay and forward after two.
func TestForwardDelayFallback(t *testing.T) {
	var sent int
	b := New("br0", 0x01, func(*Port, []byte) { sent++ })
	b.SetPriority(4096)
	p := b.AddPort(1)
	p.SetOperational(true)
	cfg := BPDU{Type: TypeConfig, RootID: 0x8000_0000_0000_00ff, BridgeID: 0x8000_0000_0000_00ff, PortID: 0x8001,
		MaxAge: 20 * 256, HelloTime: 2 * 256, ForwardDelay: 15 * 256}
	step := func(ms int) {
		for i := 0; i < ms; i += 500 {
			b.Receive(p, cfg.Append(nil))
			b.Tick(500)
		}
	}
	step(14000)
	if p.State() != Discarding || p.Role() != RoleDesignated || p.OperEdge() {
		t.Fatalf("at 14 s: %v %v edge %v", p.Role(), p.State(), p.OperEdge())
	}
	step(2000)
	if p.State() != Learning {
		t.Fatalf("at 16 s: %v", p.State())
	}
	step(14000)
	if p.State() != Forwarding {
		t.Fatalf("at 30 s: %v", p.State())
	}
	if sent == 0 {
		t.Error("sent nothing")
	}
}

// TestSuperiorNeighbourAges: information from a root that goes quiet is
// aged out after three hello times and the bridge becomes the root.
func TestSuperiorNeighbourAges(t *testing.T) {
	b := New("br0", 0x02, func(*Port, []byte) {})
	p := b.AddPort(1)
	p.SetOperational(true)
	m := BPDU{Version: 2, Type: TypeRST, Flags: wireRoleDesig << flagRoleShift, RootID: 0x1000_0000_0000_0001,
		BridgeID: 0x1000_0000_0000_0001, PortID: 0x8001, MaxAge: 20 * 256, HelloTime: 2 * 256, ForwardDelay: 15 * 256}
	if err := b.Receive(p, m.Append(nil)); err != nil {
		t.Fatal(err)
	}
	if b.IsRoot() || p.Role() != RoleRoot || p.State() != Forwarding {
		t.Fatalf("after a superior BPDU: root %v, port %v %v", b.IsRoot(), p.Role(), p.State())
	}
	b.Tick(5900)
	if b.IsRoot() {
		t.Fatal("aged before 3 hello times")
	}
	b.Tick(200)
	if !b.IsRoot() || p.Role() != RoleDesignated {
		t.Fatalf("after 6.1 s: root %v, port %v", b.IsRoot(), p.Role())
	}
	// A stale BPDU (message age at max age) is ignored.
	m.MessageAge = m.MaxAge
	b.Receive(p, m.Append(nil))
	if !b.IsRoot() {
		t.Error("took a stale BPDU")
	}
	if p.RX != 2 {
		t.Errorf("rx %d", p.RX)
	}
	if err := b.Receive(p, []byte{0, 0, 2}); err == nil || p.Errors != 1 {
		t.Errorf("bad BPDU: %v, errors %d", err, p.Errors)
	}
}

func TestSetters(t *testing.T) {
	b := New("br0", 0x0000_1122_3344_5566, nil)
	b.SetPriority(40000) // rounded down to 36864
	if b.ID() != 0x9000_1122_3344_5566 || b.ID().String() != "9.000.112233445566" {
		t.Errorf("id %v", b.ID())
	}
	b.SetPriority(70000) // out of range: ignored
	if b.ID().Priority() != 36864 {
		t.Errorf("priority %d", b.ID().Priority())
	}
	b.SetTimes(6, 4)
	if h, ma, fd := b.BridgeTimes(); h != 2 || ma != 6 || fd != 4 {
		t.Errorf("times %d %d %d", h, ma, fd)
	}
	b.SetTimes(40, 4) // 2*(4-1) < 40: ignored
	if _, ma, _ := b.BridgeTimes(); ma != 6 {
		t.Errorf("max age %d", ma)
	}
	p := b.AddPort(0)
	q := b.AddPort(1) // taken: the next free
	if p.Num() != 1 || q.Num() != 2 {
		t.Errorf("numbers %d %d", p.Num(), q.Num())
	}
	q.SetPriority(100)
	if q.PortID() != 0x6002 {
		t.Errorf("port id %04x", q.PortID())
	}
	if PathCostForSpeed(10000) != 2000 || PathCostForSpeed(1000) != 20000 || PathCostForSpeed(0) != DefaultPathCost {
		t.Error("path costs")
	}
	b.RemovePort(p)
	if p.State() != Disabled {
		t.Errorf("removed port %v", p.State())
	}
}

// TestRandomTopologiesSettleToATree: on random meshes of bridges, with
// parallel links and link failures, every bridge agrees on the root (the
// lowest identifier) and the links forwarding at both ends form a
// spanning tree of the bridges still connected.
func TestRandomTopologiesSettleToATree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		n := &testNet{}
		nb := 2 + rng.IntN(5)
		var brs []*Bridge
		for i := 0; i < nb; i++ {
			b := n.bridge(fmt.Sprintf("br%d", i), uint64(rng.IntN(1<<20)+1))
			b.SetPriority(rng.IntN(16) * 4096)
			brs = append(brs, b)
		}
		// A chain keeps them connected; more links make loops.
		for i := 1; i < nb; i++ {
			n.join(brs[rng.IntN(i)].AddPort(0), brs[i].AddPort(0))
		}
		for k := rng.IntN(2 * nb); k > 0; k-- {
			a, b := brs[rng.IntN(nb)], brs[rng.IntN(nb)]
			if a != b {
				l := n.join(a.AddPort(0), b.AddPort(0))
				if rng.IntN(3) == 0 {
					l.a.SetPathCost(uint32(1 + rng.IntN(40000)))
				}
			}
		}
		n.run(5000, 100)
		checkTree(t, round, n, brs)
		// Cut a random link (a failure): what stays connected settles again.
		l := n.links[rng.IntN(len(n.links))]
		l.down = true
		l.a.SetOperational(false)
		l.b.SetOperational(false)
		n.run(40000, 100)
		checkTree(t, round, n, brs)
		if t.Failed() {
			return
		}
	}
}

func checkTree(t *testing.T, round int, n *testNet, brs []*Bridge) {
	t.Helper()
	idx := map[*Bridge]int{}
	for i, b := range brs {
		idx[b] = i
	}
	// Components over the links that are up, and over the forwarding ones.
	up, fwd := newUnion(len(brs)), newUnion(len(brs))
	fwdEdges := 0
	for _, l := range n.links {
		if l.down {
			continue
		}
		up.join(idx[l.a.br], idx[l.b.br])
		if l.a.State() == Forwarding && l.b.State() == Forwarding {
			fwdEdges++
			if !fwd.join(idx[l.a.br], idx[l.b.br]) {
				t.Errorf("round %d: a forwarding loop through %s port %d - %s port %d", round, l.a.br.Name, l.a.Num(),
					l.b.br.Name, l.b.Num())
			}
		} else if l.a.State() != Discarding && l.b.State() != Discarding {
			t.Errorf("round %d: link %s.%d-%s.%d %v/%v: not settled", round, l.a.br.Name, l.a.Num(), l.b.br.Name,
				l.b.Num(), l.a.State(), l.b.State())
		}
	}
	for i, b := range brs {
		root := ID(^uint64(0))
		for j, c := range brs {
			if up.find(i) == up.find(j) && c.ID() < root {
				root = c.ID()
			}
		}
		if b.RootID() != root {
			t.Errorf("round %d: %s has root %v, want %v", round, b.Name, b.RootID(), root)
		}
		for j := range brs {
			if up.find(i) == up.find(j) && fwd.find(i) != fwd.find(j) {
				t.Errorf("round %d: %s and %s connected but not by forwarding links", round, b.Name, brs[j].Name)
			}
		}
	}
}

type union []int

func newUnion(n int) union {
	u := make(union, n)
	for i := range u {
		u[i] = i
	}
	return u
}

func (u union) find(i int) int {
	for u[i] != i {
		i = u[i]
	}
	return i
}

// join merges the sets of i and j; false when they were one already.
func (u union) join(i, j int) bool {
	a, b := u.find(i), u.find(j)
	if a == b {
		return false
	}
	u[a] = b
	return true
}

// TestNoTransientLoopWhileTheRootIsReachable checks, after every BPDU
// delivered, that the links forwarding at both ends never close a loop,
// as a random mesh settles and then loses a link, as long as every
// bridge still reaches the root. (Where a link's loss cuts bridges off
// from the root, 802.1D-2004's count to infinity can close a loop for
// as long as the stale root's information takes to reach max age; the
// settled tree after it is checked by TestRandomTopologiesSettleToATree.)
// Links deliver in order, but hold BPDUs back at random for a tick or
// more, so that answers cross role changes.
func TestNoTransientLoopWhileTheRootIsReachable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 500; round++ {
		n := &testNet{}
		nb := 2 + rng.IntN(5)
		var brs []*Bridge
		idx := map[*Bridge]int{}
		for i := 0; i < nb; i++ {
			b := n.bridge(fmt.Sprintf("br%d", i), uint64(rng.IntN(1<<20)+1))
			b.SetPriority(rng.IntN(16) * 4096)
			idx[b] = i
			brs = append(brs, b)
		}
		for i := 1; i < nb; i++ {
			n.join(brs[rng.IntN(i)].AddPort(0), brs[i].AddPort(0))
		}
		for k := rng.IntN(2 * nb); k > 0; k-- {
			if a, b := brs[rng.IntN(nb)], brs[rng.IntN(nb)]; a != b {
				n.join(a.AddPort(0), b.AddPort(0))
			}
		}
		checkLoop := func(when string) {
			up, fwd := newUnion(nb), newUnion(nb)
			loop := ""
			for _, l := range n.links {
				if l.down {
					continue
				}
				up.join(idx[l.a.br], idx[l.b.br])
				if l.a.State() == Forwarding && l.b.State() == Forwarding && !fwd.join(idx[l.a.br], idx[l.b.br]) {
					loop = fmt.Sprintf("%s.%d-%s.%d", l.a.br.Name, l.a.Num(), l.b.br.Name, l.b.Num())
				}
			}
			for i := range brs {
				if up.find(i) != up.find(0) {
					return // a partition: see above
				}
			}
			if loop != "" {
				for _, b := range brs {
					t.Logf("%s %v root %v cost %d", b.Name, b.ID(), b.RootID(), b.RootPathCost())
					b.Ports(func(p *Port) {
						t.Logf("  %d %v %v {%v %d %v %04x} info %d agree %v agreed %v proposing %v proposed %v edge %v", p.Num(), p.Role(), p.State(),
							p.prio.root, p.prio.cost, p.prio.bridge, p.prio.port, p.info, p.agree, p.agreed, p.proposing, p.proposed, p.operEdge)
					})
				}
				for _, l := range n.links {
					t.Logf("link %s.%d-%s.%d down %v", l.a.br.Name, l.a.Num(), l.b.br.Name, l.b.Num(), l.down)
				}
				t.Fatalf("round %d, %s: a forwarding loop closes at %s", round, when, loop)
			}
		}
		step := func(ms int, when string) {
			for ; ms > 0; ms -= 100 {
				for _, b := range brs {
					b.Tick(100)
				}
				// Links hold BPDUs back (latency), each link's in
				// their order.
				for rounds := 0; len(n.queue) > 0 && rounds < 8; rounds++ {
					held := map[*Port]bool{}
					for i := 0; i < len(n.queue); {
						to := n.to[i]
						if held[to] || rng.IntN(4) == 0 {
							held[to] = true
							i++
							continue
						}
						f := n.queue[i]
						n.queue = append(n.queue[:i:i], n.queue[i+1:]...)
						n.to = append(n.to[:i:i], n.to[i+1:]...)
						f()
						checkLoop(when)
					}
				}
			}
		}
		step(5000, "settling")
		l := n.links[rng.IntN(len(n.links))]
		l.down = true
		l.a.SetOperational(false)
		checkLoop("cut")
		l.b.SetOperational(false)
		checkLoop("cut")
		step(30000, "after the cut")
	}
}

// TestDispute: a forwarding designated port that hears an inferior
// designated port which learns (it has not heard us: a one-way link)
// goes back to discarding and proposes again.
func TestDispute(t *testing.T) {
	b := New("br0", 0x01, func(*Port, []byte) {})
	b.SetPriority(4096)
	p := b.AddPort(1)
	p.SetAdminEdge(false)
	p.SetOperational(true)
	agree := BPDU{Version: 2, Type: TypeRST, Flags: FlagAgreement | FlagForwarding | FlagLearning | wireRoleRoot<<flagRoleShift,
		RootID: b.ID(), RootPathCost: 2000, BridgeID: 0x8000_0000_0000_0002, PortID: 0x8001, MaxAge: 20 * 256,
		HelloTime: 2 * 256, ForwardDelay: 15 * 256}
	b.Receive(p, agree.Append(nil))
	if p.Role() != RoleDesignated || p.State() != Forwarding {
		t.Fatalf("after an agreement: %v %v", p.Role(), p.State())
	}
	inferior := agree
	inferior.Flags = FlagLearning | wireRoleDesig<<flagRoleShift
	inferior.RootID = 0x8000_0000_0000_0002
	inferior.RootPathCost = 0
	b.Receive(p, inferior.Append(nil))
	if p.Role() != RoleDesignated || p.State() != Discarding || !p.proposing {
		t.Errorf("disputed: %v %v proposing %v", p.Role(), p.State(), p.proposing)
	}
	// Without the learning flag it is just told what is better.
	b.Receive(p, agree.Append(nil))
	inferior.Flags = wireRoleDesig << flagRoleShift
	b.Receive(p, inferior.Append(nil))
	if p.State() != Forwarding {
		t.Errorf("inferior, not learning: %v", p.State())
	}
}

// TestMigrationToSTP: a port hearing an 802.1D-1998 bridge's
// Configuration BPDUs falls back to sending them (17.24), once its
// migrate time is over, 36 bytes long as ovs-vswitchd's; as designated
// port it acknowledges a TCN with TCA; an RST BPDU brings it back.
func TestMigrationToSTP(t *testing.T) {
	var sent [][]byte
	b := New("br0", 0x01, func(_ *Port, bpdu []byte) { sent = append(sent, append([]byte(nil), bpdu...)) })
	b.SetPriority(4096)
	p := b.AddPort(1)
	p.SetOperational(true)
	// An inferior 802.1D bridge, root of its own tree until it hears us.
	cfg := BPDU{Type: TypeConfig, RootID: 0x8000_0000_0000_00ff, BridgeID: 0x8000_0000_0000_00ff, PortID: 0x8001,
		MaxAge: 20 * 256, HelloTime: 2 * 256, ForwardDelay: 15 * 256}
	last := func() BPDU {
		t.Helper()
		if len(sent) == 0 {
			t.Fatal("nothing sent")
		}
		m, err := Decode(sent[len(sent)-1])
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	b.Receive(p, cfg.Append(nil)) // within the migrate time: ignored for migration
	if p.SendsSTP() || last().Type != TypeRST {
		t.Fatalf("falls back within the migrate time (sends type %d)", last().Type)
	}
	for i := 0; i < 8; i++ {
		b.Tick(500)
		if i%4 == 3 {
			b.Receive(p, cfg.Append(nil))
		}
	}
	if !p.SendsSTP() {
		t.Fatal("still RSTP after the old protocol's BPDUs past the migrate time")
	}
	sent = nil
	b.Tick(2000) // a hello
	if m := last(); m.Type != TypeConfig || m.Version != VersionSTP || len(sent[len(sent)-1]) != RSTLen || m.RootID != b.ID() {
		t.Fatalf("in STP mode sent %+v (%d bytes)", m, len(sent[len(sent)-1]))
	}
	if p.OperEdge() {
		t.Error("an edge while a bridge talks to it")
	}
	for i := 0; i < 16; i++ { // two forward delays: nothing agrees to a proposal now
		b.Tick(2000)
	}
	if p.State() != Forwarding {
		t.Fatalf("%v %v after two forward delays", p.Role(), p.State())
	}
	b.Receive(p, (&BPDU{Type: TypeTCN}).Append(nil))
	b.Tick(2000)
	if m := last(); m.Flags&FlagTCA == 0 || m.Flags&FlagTC == 0 {
		t.Errorf("after a TCN: flags %#x, want TC and TCA", m.Flags)
	}
	b.Tick(2000)
	if m := last(); m.Flags&FlagTCA != 0 {
		t.Errorf("TCA sent twice for one TCN: flags %#x", m.Flags)
	}
	p.MCheck() // rstp-port-mcheck: try RSTP again
	if p.SendsSTP() {
		t.Fatal("still STP right after mcheck")
	}
	for i := 0; i < 10; i++ {
		b.Tick(500)
		if i%4 == 3 {
			b.Receive(p, cfg.Append(nil))
		}
	}
	if !p.SendsSTP() {
		t.Fatal("back on RSTP after mcheck though the 802.1D bridge is still there")
	}
	rst := cfg
	rst.Version, rst.Type, rst.Flags = VersionRSTP, TypeRST, wireRoleDesig<<flagRoleShift
	for i := 0; i < 8 && p.SendsSTP(); i++ {
		b.Receive(p, rst.Append(nil))
		b.Tick(500)
	}
	if p.SendsSTP() {
		t.Error("still STP after RST BPDUs")
	}
}
