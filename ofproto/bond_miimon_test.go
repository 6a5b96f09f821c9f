package ofproto

import (
	"sync"
	"testing"
	"time"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/maclearn"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestBondMiimon: in miimon mode a member's link is the polled reading,
// not its carrier: a member the probe reads down is disabled though its
// carrier is up, and one the probe reads up stays enabled without carrier.
func TestBondMiimon(t *testing.T) {
	var mu sync.Mutex
	link := map[string]bool{"b1": true, "b2": true}
	polls := 0
	miimonProbe = func(name string) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		polls++
		return link[name], nil
	}
	miimonAnyDatapath = true
	t.Cleanup(func() { miimonProbe, miimonAnyDatapath = miimonLink, false })

	ports := NewPorts()
	for _, p := range []Port{
		{OFPort: 1, DPPort: 11, Name: "b1"},
		{OFPort: 2, DPPort: 12, Name: "b2"},
		{OFPort: 3, DPPort: 13, Name: "p3"},
	} {
		if err := ports.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	x := &Xlator{Tables: NewTables(), Ports: ports, MAC: maclearn.New(0, 0)}
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Output(openflow.PortNormal, 0)))
	b := &Bridge{Name: "br0", Ports: ports, MAC: x.MAC, Tables: x.Tables, X: x}
	cfg := BondConfig{Name: "bond0", Members: []string{"b1", "b2"}, MiimonInterval: 100 * time.Millisecond}
	if errs := b.SetBonds([]BondConfig{cfg}); errs != nil {
		t.Fatal(errs)
	}
	t.Cleanup(b.stopBondRunners)
	wait := func(what string, ok func(BondStatus) bool) {
		t.Helper()
		for end := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if st := b.Bonds(); len(st) == 1 && ok(st[0]) {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("%s: bonds %+v", what, b.Bonds())
			}
		}
	}
	wait("both up", func(s BondStatus) bool { return s.Active == "b1" && s.Members[0].Enabled && s.Members[1].Enabled })

	// b1's carrier stays up, but its MII link goes down.
	mu.Lock()
	link["b1"] = false
	mu.Unlock()
	wait("b1 miimon down", func(s BondStatus) bool {
		return s.Active == "b2" && !s.Members[0].Enabled && !s.Members[0].MayEnable && s.Members[1].Enabled
	})
	// b2 loses carrier, but its MII link is up: it stays enabled.
	setLink(t, b, "b2", true)
	b.Ports.republish()
	time.Sleep(300 * time.Millisecond)
	if st := b.Bonds(); st[0].Active != "b2" || !st[0].Members[1].Enabled {
		t.Fatalf("b2 without carrier but with MII link: %+v", st)
	}
	mu.Lock()
	n := polls
	mu.Unlock()
	if n < 4 {
		t.Errorf("%d polls, want several at 100 ms", n)
	}
	// The polling interval is part of the bond's identity.
	if cfg.equal(&BondConfig{Name: "bond0", Members: []string{"b1", "b2"}}) {
		t.Errorf("a miimon bond equals a carrier one")
	}
}
