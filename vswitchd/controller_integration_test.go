package vswitchd

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// pinController is a Go OpenFlow controller on a bridge's mgmt socket: it
// asks for packet-ins (miss_send_len, as ovs-ofctl monitor does) in the
// NXT_PACKET_IN2 format, resumes every paused packet-in2 with NXT_RESUME,
// and keeps what ovs-ofctl ofp-print says of the first packet-in2 with and
// without a continuation.
type pinController struct {
	nc net.Conn

	mu              sync.Mutex
	paused, plain   string // ofp-print of the first of each
	nPaused, nPlain int
	errs            []string
	seen            []string // message types received, for the log
}

func startPinController(t *testing.T, mgmt string) *pinController {
	t.Helper()
	nc, err := net.Dial("unix", mgmt)
	if err != nil {
		t.Fatal(err)
	}
	c := &pinController{nc: nc}
	env := openflow.Envelope{Version: openflow.Version13}
	for _, m := range []openflow.Msg{
		&openflow.Hello{Envelope: env, Versions: openflow.VersionBitmap(openflow.Version13)},
		&openflow.SetConfig{Envelope: env, MissSendLen: 0xffff},
		&openflow.NXSetPacketInFormat{Envelope: env, Format: openflow.NXPacketIn2Format},
		// The switch handles a connection's messages in order: the
		// barrier's reply says the two above are in force.
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
	done, ready := make(chan struct{}), make(chan struct{})
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
				c.note("decode % x: %v", raw, err)
				continue
			}
			c.mu.Lock()
			what := fmt.Sprintf("%T", m)
			if p, ok := m.(*openflow.PacketIn2); ok && len(p.Packet) > 34 {
				what += fmt.Sprintf("(icmp type %d, seq %d, cont %d)", p.Packet[34], int(p.Packet[40])<<8|int(p.Packet[41]), len(p.Continuation))
			}
			c.seen = append(c.seen, what)
			c.mu.Unlock()
			switch m := m.(type) {
			case *openflow.BarrierReply:
				if m.Xid == 99 {
					close(ready)
				}
			case *openflow.EchoRequest:
				b, _ := (&openflow.EchoReply{Envelope: m.Envelope, Data: m.Data}).Append(nil)
				nc.Write(b)
			case *openflow.ErrorMsg:
				c.note("switch error type %d code %d", m.Type, m.Code)
			case *openflow.PacketIn2:
				text := ofpPrint(raw)
				c.mu.Lock()
				if len(m.Continuation) > 0 {
					if c.nPaused == 0 {
						c.paused = text
					}
					c.nPaused++
				} else {
					if c.nPlain == 0 {
						c.plain = text
					}
					c.nPlain++
				}
				c.mu.Unlock()
				if len(m.Continuation) == 0 {
					continue
				}
				res := &openflow.PacketIn2{Envelope: env, Resume: true, BufferID: openflow.NoBuffer, Packet: m.Packet,
					TableID: m.TableID, Cookie: m.Cookie, Reason: m.Reason, Metadata: m.Metadata,
					Continuation: m.Continuation}
				b, err := res.Append(nil)
				if err != nil {
					c.note("encode resume: %v", err)
					continue
				}
				nc.Write(b)
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

func (c *pinController) note(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func ofpPrint(raw []byte) string {
	out, err := exec.Command("ovs-ofctl", "ofp-print", hex.EncodeToString(raw)).CombinedOutput()
	if err != nil {
		return "ofp-print failed: " + err.Error() + ": " + string(out)
	}
	return string(out)
}

// pinLines keeps the lines of a packet-in2's ofp-print that must be the
// same on both switches: the header, userdata and the continuation's
// actions (the bridge UUID and datapath port number differ by design, the
// packet by ICMP id and checksum).
func pinLines(s string) string {
	var keep []string
	xid := regexp.MustCompile(`\(xid=0x[0-9a-f]+\)`)
	for _, l := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(l, "NXT_PACKET_IN2"):
			keep = append(keep, xid.ReplaceAllString(l, "(xid=X)"))
		case strings.HasPrefix(l, " userdata="), strings.HasPrefix(l, " continuation.actions="),
			strings.HasPrefix(l, " continuation.action_set="), strings.HasPrefix(l, " continuation.bridge="),
			strings.HasPrefix(l, " continuation.odp_port="):
			if i := strings.IndexByte(l, '='); strings.Contains(l, "bridge=") || strings.Contains(l, "odp_port=") {
				l = l[:i+1] + "…"
			}
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

var receivedRE = regexp.MustCompile(`(\d+) received`)

// ofctlWatch runs ovs-ofctl monitor watch: and collects its output.
type ofctlWatch struct {
	mu    sync.Mutex
	lines []string
}

func startWatch(t *testing.T, mgmt string, opts ...string) *ofctlWatch {
	t.Helper()
	return startMonitor(t, mgmt, opts, "watch:")
}

// startMonitor runs ovs-ofctl with opts, then monitor on mgmt with args
// (watch:, or a miss-len that asks for packet-ins on this service
// connection), and collects its output.
func startMonitor(t *testing.T, mgmt string, opts []string, args ...string) *ofctlWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "ovs-ofctl", append(append(append([]string(nil), opts...), "monitor", "unix:"+mgmt), args...)...)
	cmd.Env = append(cmd.Environ(), "OVS_RUNDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &ofctlWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); cmd.Wait(); <-done })
	return w
}

func (w *ofctlWatch) waitFor(t *testing.T, want string) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		w.mu.Lock()
		all := strings.Join(w.lines, "\n")
		w.mu.Unlock()
		if strings.Contains(all, want) {
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("ovs-ofctl monitor watch: never printed %q:\n%s", want, all)
		}
	}
}

// ctrlRun is what one switch did in the controller scenario.
type ctrlRun struct {
	received        int // echo replies ping got
	paused, plain   string
	nPaused, nPlain int
	watch, watch14  string // ovs-ofctl monitor watch: in OpenFlow 1.0 and 1.4
	errs            []string
}

// runCtrlScenario runs the same steps against the bridge whose mgmt socket
// is mgmt (ports 1 = h1, 2 = h2): ICMP from h1 goes to a
// controller(userdata=..,pause) action and on after the resume; ICMP from
// h2 to a controller(userdata=..) action and on. h1 pings h2. Then
// ovs-ofctl monitor watch: sees another ovs-ofctl's changes.
func runCtrlScenario(t *testing.T, mgmt string, h1 *testbed.Netns) ctrlRun {
	t.Helper()
	ofctl := func(args ...string) {
		t.Helper()
		full := append([]string{args[0], "unix:" + mgmt}, args[1:]...)
		if out, err := exec.Command("ovs-ofctl", full...).CombinedOutput(); err != nil {
			t.Fatalf("ovs-ofctl %s: %v\n%s", strings.Join(full, " "), err, out)
		}
	}
	ofctl("del-flows")
	ofctl("add-flow", "priority=10,arp,actions=NORMAL")
	ofctl("add-flow", "priority=20,cookie=0x42,icmp,in_port=1,actions=load:7->NXM_NX_REG3[],controller(userdata=01.02.03,pause),output:2")
	ofctl("add-flow", "priority=20,icmp,in_port=2,actions=controller(userdata=04.05),output:1")
	c := startPinController(t, mgmt)
	// A round trip through the controller takes up to a second and more
	// in a loaded bed, and once replies come ping waits only two round
	// trips for the rest: with -w it sends on until three replies are in
	// (some requests get theirs late), within 20 s.
	out, _ := h1.Exec("ping", "-c", "3", "-i", "0.3", "-w", "20", "10.0.0.2")
	t.Logf("ping:\n%s", out)
	r := ctrlRun{received: -1}
	if m := receivedRE.FindStringSubmatch(out); m != nil {
		r.received, _ = strconv.Atoi(m[1])
	}
	// Packet-ins still on their way are awaited, with a generous limit.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		c.mu.Lock()
		n := c.nPlain
		c.mu.Unlock()
		if n >= r.received {
			break
		}
	}
	c.mu.Lock()
	r.paused, r.plain, r.nPaused, r.nPlain, r.errs = c.paused, c.plain, c.nPaused, c.nPlain, c.errs
	t.Logf("controller received %v", c.seen)
	c.mu.Unlock()

	w := startWatch(t, mgmt)
	w.waitFor(t, "NXST_FLOW_MONITOR reply")
	w14 := startWatch(t, mgmt, "-O", "OpenFlow14")
	w14.waitFor(t, "OFPST_FLOW_MONITOR reply")
	ofctl("add-flow", "priority=30,udp,in_port=1,actions=output:2")
	ofctl("mod-flows", "udp,in_port=1,actions=output:1")
	ofctl("del-flows", "udp")
	r.watch = w.waitFor(t, "event=DELETED")
	r.watch14 = w14.waitFor(t, "event=DELETED")
	return r
}

// TestIntegrationControllerPauseResume runs the controller scenario
// against ovs-vswitchd 3.1 and govswitchd on the same hosts and compares:
// every ping gets through (each paused echo request goes on only after the
// controller's NXT_RESUME), the packet-in2s say the same to ovs-ofctl
// ofp-print, and ovs-ofctl monitor watch: prints the same.
func TestIntegrationControllerPauseResume(t *testing.T) {
	b := newBed(t)

	o := startOVS(t)
	o.must(t, "ovs-vsctl", "add-br", b.name, "--", "set", "Bridge", b.name, "fail-mode=secure")
	o.must(t, "ovs-vsctl", "add-port", b.name, b.v1, "--", "set", "Interface", b.v1, "ofport_request=1")
	o.must(t, "ovs-vsctl", "add-port", b.name, b.v2, "--", "set", "Interface", b.v2, "ofport_request=2")
	ovs := runCtrlScenario(t, filepath.Join(o.dir, b.name+".mgmt"), b.h1)
	if r := appctlAt(t, o.ctl, "exit", "--cleanup"); r.code != 0 {
		t.Fatalf("ovs-vswitchd exit --cleanup: %d %s", r.code, r.err)
	}
	for deadline := time.Now().Add(5 * time.Second); linkExists(b.name); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ovs-vswitchd's exit --cleanup left %s for 5 s", b.name)
		}
	}

	b.start(t, "--fail-mode", "secure")
	gov := runCtrlScenario(t, filepath.Join(b.rundir, b.name+".mgmt"), b.h1)

	for _, r := range []struct {
		who string
		run ctrlRun
	}{{"ovs-vswitchd", ovs}, {"govswitchd", gov}} {
		t.Logf("%s: %d echo replies; %d paused and %d plain packet-in2s\npaused:\n%s\nplain:\n%s\nwatch:\n%s",
			r.who, r.run.received, r.run.nPaused, r.run.nPlain, r.run.paused, r.run.plain, r.run.watch)
		// Every echo request is paused and goes on only after its
		// resume; each reply gives a plain packet-in2 on the way back.
		if r.run.received != 3 || r.run.nPaused < 3 || r.run.nPlain < 3 || len(r.run.errs) > 0 {
			t.Errorf("%s: %d echo replies, %d paused and %d plain packet-in2s (want 3 each), errors %v",
				r.who, r.run.received, r.run.nPaused, r.run.nPlain, r.run.errs)
		}
	}
	if a, b := pinLines(ovs.paused), pinLines(gov.paused); a != b {
		t.Errorf("paused packet-in2 differs:\novs-vswitchd:\n%s\ngovswitchd:\n%s", a, b)
	}
	if a, b := pinLines(ovs.plain), pinLines(gov.plain); a != b {
		t.Errorf("packet-in2 differs:\novs-vswitchd:\n%s\ngovswitchd:\n%s", a, b)
	}
	if ovs.watch != gov.watch {
		t.Errorf("ovs-ofctl monitor watch: differs:\novs-vswitchd:\n%s\ngovswitchd:\n%s", ovs.watch, gov.watch)
	}
	if ovs.watch14 != gov.watch14 {
		t.Errorf("ovs-ofctl -O OpenFlow14 monitor watch: differs:\novs-vswitchd:\n%s\ngovswitchd:\n%s", ovs.watch14, gov.watch14)
	}
}

// tcpController listens like a controller and, once a switch connects
// (each connection is announced on accepted), asks it for its features
// every 200 ms until stopped.
func tcpController(t *testing.T) (addr string, accepted chan struct{}, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done, accepted := make(chan struct{}), make(chan struct{}, 16)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case accepted <- struct{}{}:
			default:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				env := openflow.Envelope{Version: openflow.Version13}
				hello, _ := (&openflow.Hello{Envelope: env, Versions: openflow.VersionBitmap(openflow.Version13)}).Append(nil)
				nc.Write(hello)
				go func() { // drain, answering echoes
					fr := openflow.NewFramer(0)
					for {
						raw, err := fr.ReadMsg(nc)
						if err != nil {
							return
						}
						if m, err := openflow.Decode(raw); err == nil {
							if e, ok := m.(*openflow.EchoRequest); ok {
								b, _ := (&openflow.EchoReply{Envelope: e.Envelope, Data: e.Data}).Append(nil)
								nc.Write(b)
							}
						}
					}
				}()
				for xid := uint32(1); ; xid++ {
					b, _ := (&openflow.FeaturesRequest{Envelope: openflow.Envelope{Version: openflow.Version13, Xid: xid}}).Append(nil)
					if _, err := nc.Write(b); err != nil {
						return
					}
					select {
					case <-done:
						return
					case <-time.After(200 * time.Millisecond):
					}
				}
			}()
		}
	}()
	return "tcp:" + ln.Addr().String(), accepted, func() { close(done); ln.Close(); wg.Wait() }
}

// startSnoop runs ovs-ofctl snoop on a bridge's snoop socket.
func startSnoop(t *testing.T, sock string) *ofctlWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "ovs-ofctl", "snoop", "unix:"+sock)
	cmd.Env = append(cmd.Environ(), "OVS_RUNDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &ofctlWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); cmd.Wait(); <-done })
	return w
}

// TestIntegrationSnoop: ovs-ofctl snoop on <rundir>/<bridge>.snoop sees
// the messages between the bridge and its controller, on ovs-vswitchd 3.1
// and on govswitchd alike. (ovs-vswitchd refuses a snooper while no
// controller is connected; govswitchd takes it and it sees the controller
// once one connects.)
func TestIntegrationSnoop(t *testing.T) {
	b := newBed(t)
	addr, accepted, stop := tcpController(t)
	defer stop()
	waitAccepted := func(who string) {
		t.Helper()
		select {
		case <-accepted:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s never connected to the controller", who)
		}
	}

	o := startOVS(t)
	o.must(t, "ovs-vsctl", "add-br", b.name, "--", "set", "Bridge", b.name, "fail-mode=secure")
	o.must(t, "ovs-vsctl", "set-controller", b.name, addr)
	waitAccepted("ovs-vswitchd")
	ws := startSnoop(t, filepath.Join(o.dir, b.name+".snoop"))
	ovs := ws.waitFor(t, "OFPT_FEATURES_REPLY (OF1.3)")
	if r := appctlAt(t, o.ctl, "exit", "--cleanup"); r.code != 0 {
		t.Fatalf("ovs-vswitchd exit --cleanup: %d %s", r.code, r.err)
	}
	for deadline := time.Now().Add(5 * time.Second); linkExists(b.name); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ovs-vswitchd's exit --cleanup left %s for 5 s", b.name)
		}
	}

	b.start(t, "--fail-mode", "secure", "--controller", addr)
	waitAccepted("govswitchd")
	wg := startSnoop(t, filepath.Join(b.rundir, b.name+".snoop"))
	gov := wg.waitFor(t, "OFPT_FEATURES_REPLY (OF1.3)")
	for _, r := range []struct{ who, out string }{{"ovs-vswitchd", ovs}, {"govswitchd", gov}} {
		for _, want := range []string{"OFPT_FEATURES_REQUEST (OF1.3)", "OFPT_FEATURES_REPLY (OF1.3)", "dpid:"} {
			if !strings.Contains(r.out, want) {
				t.Errorf("%s: ovs-ofctl snoop printed no %q:\n%s", r.who, want, r.out)
			}
		}
	}
}

// TestIntegrationControllerPauseConntracked: a pause after ct(), as OVN
// does for DHCP and DNS behind its ACL stages. The packet-in2 carries the
// connection (ct_state in its metadata, and the continuation says it was
// conntracked, as ovs-ofctl ofp-print shows); on the resume the tables go
// on seeing ct_state=+trk+new, so the rule after the pause that wants a
// tracked packet commits it and forwards it. Without the connection on
// resume that rule would not match and the echo request would drop.
func TestIntegrationControllerPauseConntracked(t *testing.T) {
	b := newBed(t)
	appctl := b.startCt(t)
	mgmt := filepath.Join(b.rundir, b.name+".mgmt")
	b.addFlows(t, []string{
		"table=0,priority=100,arp,actions=NORMAL",
		"table=0,priority=10,icmp,ct_state=-trk,actions=ct(table=1)",
		"table=1,priority=10,icmp,in_port=1,ct_state=+trk+new,actions=controller(userdata=0a.0b,pause),resubmit(,2)",
		"table=1,priority=10,icmp,in_port=1,ct_state=+trk+est,actions=output:2",
		"table=1,priority=10,icmp,in_port=2,ct_state=+trk+est,actions=output:1",
		"table=2,priority=10,icmp,in_port=1,ct_state=+trk+new,actions=ct(commit),output:2",
	})
	appctl("dpctl/flush-conntrack")
	c := startPinController(t, mgmt)
	out, _ := b.h1.Exec("ping", "-c", "3", "-i", "0.3", "-w", "20", "10.0.0.2")
	t.Logf("ping:\n%s", out)
	received := -1
	if m := receivedRE.FindStringSubmatch(out); m != nil {
		received, _ = strconv.Atoi(m[1])
	}
	c.mu.Lock()
	paused, nPaused, errs := c.paused, c.nPaused, c.errs
	t.Logf("controller received %v", c.seen)
	c.mu.Unlock()
	t.Logf("paused packet-in2:\n%s", paused)
	// The first echo request is new and paused; the connection is then
	// committed, so the rest are established and pass without a pause.
	if received != 3 || nPaused < 1 || len(errs) > 0 {
		t.Errorf("%d echo replies (want 3), %d paused packet-in2s (want 1 or more), errors %v", received, nPaused, errs)
	}
	for _, want := range []string{"ct_state=new|trk", "continuation.conntracked=true"} {
		if !strings.Contains(paused, want) {
			t.Errorf("ovs-ofctl ofp-print of the paused packet-in2 lacks %q", want)
		}
	}
	if ct := appctl("dpctl/dump-conntrack"); !strings.Contains(ct, "icmp,orig=(src=10.0.0.1,dst=10.0.0.2") {
		t.Errorf("the resumed echo request's ct(commit) left no connection:\n%s", ct)
	}
}
