package vswitchd

import (
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govswitch/govswitch/ofproto/openflow"
)

// pinCounter is an OpenFlow 1.3 controller on a bridge's mgmt socket that
// counts packet-ins (OFPT_PACKET_IN and NXT_PACKET_IN2).
type pinCounter struct{ n atomic.Int64 }

func startPinCounter(t *testing.T, mgmt string) *pinCounter {
	t.Helper()
	nc, err := net.Dial("unix", mgmt)
	if err != nil {
		t.Fatal(err)
	}
	env := openflow.Envelope{Version: openflow.Version13}
	for _, m := range []openflow.Msg{
		&openflow.Hello{Envelope: env, Versions: openflow.VersionBitmap(openflow.Version13)},
		&openflow.SetConfig{Envelope: env, MissSendLen: 0xffff},
		&openflow.BarrierRequest{Envelope: openflow.Envelope{Version: openflow.Version13, Xid: 99}},
	} {
		b, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	c := &pinCounter{}
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		fr := openflow.NewFramer(0)
		for {
			raw, err := fr.ReadMsg(nc)
			if err != nil {
				return
			}
			m, err := openflow.Decode(raw)
			if err != nil {
				continue
			}
			switch m := m.(type) {
			case *openflow.BarrierReply:
				if m.Xid == 99 {
					close(ready)
				}
			case *openflow.EchoRequest:
				b, _ := (&openflow.EchoReply{Envelope: m.Envelope, Data: m.Data}).Append(nil)
				nc.Write(b)
			case *openflow.PacketIn, *openflow.PacketIn2:
				c.n.Add(1)
			}
		}
	}()
	t.Cleanup(func() { nc.Close(); <-done })
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the controller's barrier got no reply")
	}
	return c
}

// meterPinRun is what one switch did: packet-ins of 100 frames through
// controller(meter_id=1) (a 2 pktps meter), of 30 through a plain
// controller action, of 100 through a plain one under the controller
// meter (2 pktps), and the datapath actions of the flows.
type meterPinRun struct {
	metered, plain, ctrlMetered int64
	dp                          string
}

func (b *groupBed) meterPinSteps(t *testing.T, ofctl func(args ...string) (string, error), mgmt string) meterPinRun {
	t.Helper()
	must := func(args ...string) string {
		t.Helper()
		out, err := ofctl(args...)
		if err != nil {
			t.Fatalf("ovs-ofctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	var r meterPinRun
	must("-O", "OpenFlow13", "add-meter", "meter=1,pktps,bands=type=drop,rate=2")
	must("-O", "OpenFlow13", "add-flow", "priority=10,udp,in_port=1,tp_dst=9101,actions=controller(meter_id=1)")
	must("-O", "OpenFlow13", "add-flow", "priority=10,udp,in_port=1,tp_dst=9102,actions=controller")
	c := startPinCounter(t, mgmt)
	count := func(dport uint16, n int) int64 {
		before := c.n.Load()
		b.send(t, n, 21000, dport, false, 5*time.Millisecond)
		return c.n.Load() - before
	}
	r.metered = count(9101, 100)
	r.plain = count(9102, 30)
	// The controller meter meters the packet-ins of flows translated
	// after it exists (neither switch revalidates on a meter add).
	must("-O", "OpenFlow13", "add-meter", "meter=controller,pktps,bands=type=drop,rate=2")
	must("-O", "OpenFlow13", "add-flow", "priority=10,udp,in_port=1,tp_dst=9103,actions=controller")
	r.ctrlMetered = count(9103, 100)
	out, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "dst=910") {
			r.dp += dpStats.ReplaceAllString(l, " actions:") + "\n"
		}
	}
	return r
}

// TestIntegrationMeteredPacketIn: controller(meter_id=N) and the
// controller meter (meter=controller) limit packet-ins with the kernel's
// meter, as ovs-vswitchd 3.1 does in the same bed: 100 frames in half a
// second through a 2 pktps meter give a handful of packet-ins, 30
// unmetered give 30, and the datapath flows meter inside a sample of
// probability 1.
func TestIntegrationMeteredPacketIn(t *testing.T) {
	b := newGroupBed(t)
	o := startOVS(t)
	b.configure(func(args ...string) string { return o.must(t, "ovs-vsctl", args...) })
	ovsMgmt := filepath.Join(o.dir, b.name+".mgmt")
	ovs := b.meterPinSteps(t, func(args ...string) (string, error) { return ofctlAt(ovsMgmt, args...) }, ovsMgmt)
	o.exitCleanup(t, b.name)
	for _, h := range b.hosts {
		h.Exec("ip", "neigh", "flush", "all")
	}
	g := startGovSwitch(t, b.rundir)
	b.configure(func(args ...string) string { t.Helper(); return g.vsctl(t, args...) })
	govMgmt := g.mgmt(t, b.name)
	gov := b.meterPinSteps(t, func(args ...string) (string, error) { return ofctlAt(govMgmt, args...) }, govMgmt)

	for who, r := range map[string]meterPinRun{"ovs-vswitchd": ovs, "govswitchd": gov} {
		t.Logf("%s: packet-ins %d of 100 metered by meter_id, %d of 30 unmetered, %d of 100 by the controller meter\ndatapath flows:\n%s",
			who, r.metered, r.plain, r.ctrlMetered, r.dp)
		if r.metered < 1 || r.metered > 10 {
			t.Errorf("%s: %d packet-ins of 100 frames in 0.5 s through a 2 pktps meter", who, r.metered)
		}
		if r.plain != 30 {
			t.Errorf("%s: %d packet-ins of 30 unmetered frames", who, r.plain)
		}
		if r.ctrlMetered < 1 || r.ctrlMetered > 10 {
			t.Errorf("%s: %d packet-ins of 100 frames through the 2 pktps controller meter", who, r.ctrlMetered)
		}
		if n := strings.Count(r.dp, "actions:sample(sample=100.0%,actions(meter("); n < 2 {
			t.Errorf("%s: %d datapath flows meter inside a sample, want both:\n%s", who, n, r.dp)
		}
	}
}
