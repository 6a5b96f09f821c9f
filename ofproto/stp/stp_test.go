package stp

import (
	"bytes"
	"errors"
	"testing"
)

// wire joins port ends: links[i] = {bridge a, port pa, bridge b, port pb}.
type link struct {
	a      *Bridge
	pa     int
	b      *Bridge
	pb     int
	frames int
}

// net runs bridges joined by links, delivering BPDUs at once.
type testNet struct {
	links []*link
	queue []func()
}

func (n *testNet) bridge(name string, id ID) *Bridge {
	var b *Bridge
	b = New(name, id, func(no int, bpdu []byte) {
		c := append([]byte(nil), bpdu...)
		for _, l := range n.links {
			l := l
			switch {
			case l.a == b && l.pa == no:
				l.frames++
				n.queue = append(n.queue, func() { l.b.Receive(l.b.Port(l.pb), c) })
			case l.b == b && l.pb == no:
				l.frames++
				n.queue = append(n.queue, func() { l.a.Receive(l.a.Port(l.pa), c) })
			}
		}
	})
	return b
}

func (n *testNet) run(bridges []*Bridge, ms, step int) {
	for t := 0; t < ms; t += step {
		for _, b := range bridges {
			b.Tick(step)
		}
		for len(n.queue) > 0 {
			q := n.queue
			n.queue = nil
			for _, f := range q {
				f()
			}
		}
	}
}

func TestLoopOfTwoBridgesBlocksOnePort(t *testing.T) {
	n := &testNet{}
	a := n.bridge("br0", 0x8000_0000_0000_00aa)
	b := n.bridge("br1", 0x8000_0000_0000_00bb)
	n.links = []*link{{a: a, pa: 0, b: b, pb: 0}, {a: a, pa: 1, b: b, pb: 1}}
	for _, br := range []*Bridge{a, b} {
		br.SetTimes(1000, 6000, 4000)
		br.Port(0).Enable()
		br.Port(1).Enable()
	}
	n.run([]*Bridge{a, b}, 15000, 100)
	if !a.IsRoot() || b.IsRoot() {
		t.Fatalf("root: br0 %v br1 %v, want br0", a.IsRoot(), b.IsRoot())
	}
	want := []struct {
		br    *Bridge
		no    int
		state State
		role  Role
	}{
		{a, 0, Forwarding, RoleDesignated}, {a, 1, Forwarding, RoleDesignated},
		{b, 0, Forwarding, RoleRoot}, {b, 1, Blocking, RoleAlternate},
	}
	for _, w := range want {
		p := w.br.Port(w.no)
		if p.State() != w.state || p.Role() != w.role {
			t.Errorf("%s port %d: %v %v, want %v %v", w.br.Name, w.no+1, p.State(), p.Role(), w.state, w.role)
		}
	}
	if b.RootPathCost() != DefaultPathCost || b.DesignatedRoot() != a.ID() {
		t.Errorf("br1: root %v cost %d", b.DesignatedRoot(), b.RootPathCost())
	}
	// The root port fails: the alternate takes over after the forward
	// delays.
	b.Port(0).Disable()
	a.Port(0).Disable()
	n.run([]*Bridge{a, b}, 12000, 100)
	if p := b.Port(1); p.State() != Forwarding || p.Role() != RoleRoot {
		t.Errorf("after failover br1 port 2: %v %v", p.State(), p.Role())
	}
}

func TestBPDURoundTrip(t *testing.T) {
	m := BPDU{Type: TypeConfig, Flags: FlagTopologyChange, RootID: 0x8000_0000_0000_00aa, RootPathCost: 4,
		BridgeID: 0x8000_0000_0000_00bb, PortID: 0x8002, MessageAge: 1, MaxAge: 6 * 256, HelloTime: 256, ForwardDelay: 4 * 256}
	b := m.Append(nil)
	if len(b) != ConfigLen {
		t.Fatalf("len %d", len(b))
	}
	got, err := Decode(b)
	if err != nil || got != m {
		t.Fatalf("decode: %+v %v", got, err)
	}
	f := AppendFrame(nil, [6]byte{2, 0, 0, 0, 0, 1}, b)
	f = append(f, make([]byte, 60-len(f))...) // padded as on the wire
	p, ok := FramePayload(f)
	if !ok || !bytes.Equal(p, b) {
		t.Fatalf("payload %x %v", p, ok)
	}
	for _, c := range []struct {
		name string
		in   []byte
		err  error
	}{
		{"runt", []byte{0, 0, 0}, ErrRunt},
		{"protocol", []byte{0, 1, 0, 0x80}, ErrProtocol},
		{"short config", make([]byte, 10), ErrSize},
		{"long tcn", []byte{0, 0, 0, 0x80, 0}, ErrSize},
		{"type", []byte{0, 0, 0, 0x02}, ErrType},
	} {
		if _, err := Decode(c.in); !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	m := BPDU{Type: TypeConfig, RootID: 1, BridgeID: 2, PortID: 0x8001, MaxAge: 5120, HelloTime: 512, ForwardDelay: 3840}
	f.Add(m.Append(nil))
	f.Add([]byte{0, 0, 0, 0x80})
	f.Add([]byte{0, 0, 2, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		out := m.Append(nil)
		if m.Type == TypeConfig && !bytes.Equal(out, b[:ConfigLen]) || m.Type == TypeTCN && !bytes.Equal(out, b) {
			t.Fatalf("round trip %x -> %x", b, out)
		}
		// A bridge fed anything must not panic.
		br := New("fz", 0x8000_0000_0000_0001, func(int, []byte) {})
		br.Port(0).Enable()
		br.Receive(br.Port(0), b)
		br.Tick(3000)
	})
}

func FuzzFramePayload(f *testing.F) {
	m := BPDU{Type: TypeConfig}
	f.Add(AppendFrame(nil, [6]byte{2}, m.Append(nil)))
	f.Add([]byte{1, 0x80, 0xc2, 0, 0, 0, 2, 0, 0, 0, 0, 1, 0, 0, 0x42, 0x42, 3})
	f.Fuzz(func(t *testing.T, frame []byte) {
		p, ok := FramePayload(frame)
		if ok && len(p) > len(frame) {
			t.Fatal("payload longer than frame")
		}
		if ok {
			Decode(p)
		}
	})
}
