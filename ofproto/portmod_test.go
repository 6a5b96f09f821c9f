package ofproto

import (
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath/dummy"
)

// TestOfctlModPort: ovs-ofctl mod-port's settings take effect on traffic
// at once (the barrier ovs-ofctl sends after them waits for the
// datapath's flows), and ovs-ofctl show reports them.
func TestOfctlModPort(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 3, BridgeConfig{}, ConnConfig{})
	p1, p2, p3 := s.devs["p1"], s.devs["p2"], s.devs["p3"]
	frame := synFrame(9) // macA -> macB, never learned: NORMAL floods it
	send := func(from *dummy.Netdev) {
		t.Helper()
		if err := from.Send(frame); err != nil {
			t.Fatal(err)
		}
	}
	got := func(dev *dummy.Netdev) bool {
		_, err := dev.Recv(300 * time.Millisecond)
		return err == nil
	}
	drain := func() {
		for _, d := range []*dummy.Netdev{p1, p2, p3} {
			for got(d) {
			}
		}
	}
	for _, step := range []struct {
		args     []string
		from     *dummy.Netdev
		to2, to3 bool
		show     string
	}{
		{nil, p1, true, true, ""},
		{[]string{"p2", "no-forward"}, p1, false, true, "NO_FWD"},
		{[]string{"p2", "forward"}, p1, true, true, ""},
		{[]string{"p3", "no-flood"}, p1, true, false, "NO_FLOOD"},
		{[]string{"p3", "flood"}, p1, true, true, ""},
		{[]string{"p1", "no-receive"}, p1, false, false, "NO_RECV"},
		{[]string{"p1", "receive"}, p1, true, true, ""},
		{[]string{"p2", "down"}, p1, false, true, "PORT_DOWN"},
		{[]string{"p2", "up"}, p1, true, true, ""},
	} {
		name := strings.Join(step.args, " ")
		if step.args != nil {
			s.ofctl(t, nil, "mod-port", step.args...)
			// ovs-ofctl mod-port sends no barrier of its own: one more
			// request makes sure the switch has handled it.
			s.ofctl(t, nil, "show")
			s.b.Udpif.Sync()
		}
		drain()
		send(step.from)
		if g := got(p2); g != step.to2 {
			t.Errorf("after mod-port %s: frame reached p2 %v, want %v", name, g, step.to2)
		}
		if g := got(p3); g != step.to3 {
			t.Errorf("after mod-port %s: frame reached p3 %v, want %v", name, g, step.to3)
		}
		if step.show != "" {
			show := s.ofctl(t, nil, "show")
			if !strings.Contains(show, "config:     "+step.show) {
				t.Errorf("after mod-port %s, ovs-ofctl show lacks config %s:\n%s", name, step.show, show)
			}
		}
	}
}
