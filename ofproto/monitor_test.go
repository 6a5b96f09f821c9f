package ofproto

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govswitch/govswitch/ofproto/openflow"
)

// ofctlMonitor runs "ovs-ofctl [opts] monitor <mgmt> args..." and collects
// its output lines.
type ofctlMonitor struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

func (s *testSwitch) startMonitor(t *testing.T, opts []string, args ...string) *ofctlMonitor {
	t.Helper()
	return s.startOfctl(t, append(append(append([]string{}, opts...), "monitor", "unix:"+s.m.MgmtPath()), args...)...)
}

// startOfctl runs a long-lived ovs-ofctl command (monitor, snoop),
// collecting its output.
func (s *testSwitch) startOfctl(t *testing.T, full ...string) *ofctlMonitor {
	t.Helper()
	needTool(t, "ovs-ofctl")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "ovs-ofctl", full...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	// ovs-ofctl monitor opens a unixctl socket in the rundir.
	cmd.Env = append(cmd.Environ(), "OVS_RUNDIR="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	mon := &ofctlMonitor{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(mon.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mon.mu.Lock()
			mon.lines = append(mon.lines, sc.Text())
			mon.mu.Unlock()
		}
		io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() { cancel(); cmd.Wait(); <-mon.done })
	return mon
}

// waitFor waits until the output holds a line containing want and
// returns the whole output.
func (mon *ofctlMonitor) waitFor(t *testing.T, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mon.mu.Lock()
		all := strings.Join(mon.lines, "\n")
		mon.mu.Unlock()
		if strings.Contains(all, want) {
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("ovs-ofctl monitor never printed %q; it printed:\n%s", want, all)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMonitorWatchOfctl(t *testing.T) {
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	s.ofctl(t, nil, "add-flow", "priority=5,in_port=2,actions=output:1")
	mon := s.startMonitor(t, nil, "watch:")
	mon.waitFor(t, "NXST_FLOW_MONITOR reply")
	s.ofctl(t, nil, "add-flow", "priority=7,in_port=1,actions=output:2")
	s.ofctl(t, nil, "mod-flows", "in_port=1,actions=output:3")
	s.ofctl(t, nil, "del-flows", "in_port=1")
	out := mon.waitFor(t, "event=DELETED")
	// What ovs-ofctl prints against ovs-vswitchd 3.1 for the same steps.
	want := `NXST_FLOW_MONITOR reply (xid=0x6):
 event=ADDED table=0 cookie=0 in_port=2 actions=output:1
NXST_FLOW_MONITOR reply (xid=0x0):
 event=ADDED table=0 cookie=0 in_port=1 actions=output:2
NXST_FLOW_MONITOR reply (xid=0x0):
 event=MODIFIED table=0 cookie=0 in_port=1 actions=output:3
NXST_FLOW_MONITOR reply (xid=0x0):
 event=DELETED reason=delete table=0 cookie=0 in_port=1 actions=output:3`
	if out != want {
		t.Errorf("ovs-ofctl monitor printed\n%s\nwant\n%s", out, want)
	}
}

// TestMonitorOwnAbbrev: a monitor without OWN sees its own connection's
// flow mods as one abbreviated update with the flow mod's xid, and
// another's in full; a cancelled monitor sees nothing; paused monitors
// resume once the queue drains.
func TestMonitorOwnAbbrev(t *testing.T) {
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	cl, _ := s.pipe(t, ConnService)
	cl.handshake(1, 1)
	cl.v = 1
	var all openflow.Match
	cl.send(&openflow.FlowMonitorRequest{Monitors: []openflow.FlowMonitor{{ID: 9, OutPort: openflow.PortAny,
		OutGroup: openflow.GroupAny, TableID: openflow.TableAll, Match: all,
		Flags: openflow.MonitorAdd | openflow.MonitorRemoved | openflow.MonitorModify | openflow.MonitorInstructions}}})
	if r, ok := cl.recv().(*openflow.FlowMonitorReply); !ok || len(r.Updates) != 0 {
		t.Fatalf("monitor reply %+v", r)
	}
	xid := cl.send(&openflow.FlowMod{Command: openflow.FlowAdd, BufferID: openflow.NoBuffer, OutPort: openflow.PortAny,
		OutGroup: openflow.GroupAny, Priority: 3, Instructions: output(2)})
	r, ok := cl.recv().(*openflow.FlowMonitorReply)
	if !ok || len(r.Updates) != 1 || r.Updates[0].Event != openflow.UpdateAbbrev || r.Updates[0].Xid != xid || r.Xid != 0 {
		t.Fatalf("own add: %+v, want one abbrev update with xid %d", r, xid)
	}
	s.ofctl(t, nil, "add-flow", "priority=4,actions=output:1")
	r, ok = cl.recv().(*openflow.FlowMonitorReply)
	if !ok || len(r.Updates) != 1 || r.Updates[0].Event != openflow.UpdateAdded || r.Updates[0].Priority != 4 ||
		len(r.Updates[0].Instructions.Apply) != 1 {
		t.Fatalf("other's add: %+v", r)
	}
	// Many changes at once, with the queue made to look full: the
	// monitor pauses, then resumes with the flows it selects.
	cl.send(&openflow.NXFlowMonitorCancel{ID: 9})
	if got := cl.barrier(); len(got) != 0 {
		t.Fatalf("cancel answered %v", got)
	}
	s.ofctl(t, nil, "add-flow", "priority=5,actions=output:1")
	if got := cl.barrier(); len(got) != 0 {
		t.Errorf("cancelled monitor got %v", got)
	}
	cl.send(&openflow.NXFlowMonitorCancel{ID: 9})
	// OFPMOFC_UNKNOWN_MONITOR is Nicira's (1,519) in OpenFlow 1.0, which
	// ovs-vswitchd sends wrapped in NXET_VENDOR (vendor, type, code).
	em, ok := cl.recv().(*openflow.ErrorMsg)
	if !ok || em.Type != 0xb0c2 || len(em.Data) < 8 || binary.BigEndian.Uint32(em.Data) != 0x2320 ||
		binary.BigEndian.Uint16(em.Data[4:]) != 1 || binary.BigEndian.Uint16(em.Data[6:]) != 519 {
		t.Errorf("cancel of an unknown monitor answered %+v", em)
	}
}

func TestMonitorWatchOfctlVersions(t *testing.T) {
	for _, v := range []string{"OpenFlow13", "OpenFlow14", "OpenFlow15"} {
		t.Run(v, func(t *testing.T) {
			s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
			s.ofctl(t, nil, "add-flow", "priority=5,in_port=2,actions=output:1")
			mon := s.startMonitor(t, []string{"-O", v}, "watch:")
			mon.waitFor(t, "reply")
			s.ofctl(t, nil, "add-flow", "priority=7,in_port=1,actions=output:2")
			out := mon.waitFor(t, "event=ADDED table=0 cookie=0 in_port=1")
			t.Logf("\n%s", out)
		})
	}
}

// TestMonitorPauseResume: a monitoring connection that stops reading gets
// NXT_FLOW_MONITOR_PAUSED once its queue is three quarters full; when it
// reads again it gets the flows its monitor selects and
// NXT_FLOW_MONITOR_RESUMED, and the tables never waited for it.
func TestMonitorPauseResume(t *testing.T) {
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	cl, _ := s.pipe(t, ConnService)
	cl.handshake(1, 1)
	cl.v = 1
	cl.send(&openflow.FlowMonitorRequest{Monitors: []openflow.FlowMonitor{{ID: 1, OutPort: openflow.PortAny,
		OutGroup: openflow.GroupAny, TableID: openflow.TableAll, Flags: openflow.MonitorAdd | openflow.MonitorRemoved}}})
	cl.recv()
	// The client reads nothing while other changes pile up.
	const n = monitorQueueHigh + 50
	for i := 0; i < n; i++ {
		fm := FlowMod{Command: CmdAdd, Priority: uint16(i + 1), Instructions: output(1), OutPort: openflow.PortAny}
		fm.Match.Key.TpDst, fm.Match.Mask.TpDst = uint16(i), 0xffff
		fm.Match.Key.EthType, fm.Match.Mask.EthType = 0x0800, 0xffff
		fm.Match.Key.NwProto, fm.Match.Mask.NwProto = 6, 0xff
		if err := s.b.Tables.Apply(&fm, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	paused, resumed, added := false, false, 0
	refreshed := map[uint16]bool{}
	for !resumed {
		m, err := cl.recvWithin(10 * time.Second)
		if err != nil {
			t.Fatalf("paused %v, %d updates: %v", paused, added, err)
		}
		switch m := m.(type) {
		case *openflow.NXFlowMonitorFlowControl:
			if !m.Resumed {
				paused = true
			} else {
				resumed = true
			}
		case *openflow.FlowMonitorReply:
			for _, u := range m.Updates {
				added++
				if paused {
					refreshed[u.Match.Key.TpDst] = true
				}
			}
		}
	}
	if !paused {
		t.Fatal("resumed without pausing")
	}
	if len(refreshed) != n {
		t.Errorf("the refresh after the pause held %d flows, want all %d", len(refreshed), n)
	}
	// Updates flow again.
	s.ofctl(t, nil, "add-flow", "priority=9999,actions=output:2")
	if r, ok := cl.recv().(*openflow.FlowMonitorReply); !ok || len(r.Updates) != 1 || r.Updates[0].Priority != 9999 {
		t.Errorf("after the resume: %+v", r)
	}
}

// TestMonitorPacketInFormats: ovs-ofctl monitor on the mgmt socket, with
// miss_send_len set and each packet-in format it can ask for, prints the
// packet-ins of a controller(userdata=..) flow; only packet-in2 carries
// the userdata.
func TestMonitorPacketInFormats(t *testing.T) {
	for _, tc := range []struct {
		opts []string
		want string
	}{
		{[]string{"-P", "nxt_packet_in2"}, "NXT_PACKET_IN2 (xid=0x0): cookie=0x5 total_len=60 in_port=1 (via action) data_len=60 (unbuffered)\n userdata=0a.0b"},
		{[]string{"-O", "OpenFlow13", "-P", "nxt_packet_in2"}, "NXT_PACKET_IN2 (OF1.3) (xid=0x0): cookie=0x5 total_len=60 in_port=1 (via action) data_len=60 (unbuffered)\n userdata=0a.0b"},
		{[]string{"-P", "nxt_packet_in"}, "NXT_PACKET_IN (xid=0x0): cookie=0x5 total_len=60 in_port=1 (via action) data_len=60 (unbuffered)"},
		{[]string{"-O", "OpenFlow13", "-P", "nxt_packet_in"}, "NXT_PACKET_IN (OF1.3) (xid=0x0): cookie=0x5 total_len=60 in_port=1 (via action) data_len=60 (unbuffered)"},
		{[]string{"-O", "OpenFlow13", "-P", "standard"}, "OFPT_PACKET_IN (OF1.3) (xid=0x0): cookie=0x5 total_len=60 in_port=1 (via action) data_len=60 (unbuffered)"},
	} {
		t.Run(strings.Join(tc.opts, " "), func(t *testing.T) {
			s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
			s.ofctl(t, nil, "add-flow", "cookie=5,in_port=1,actions=controller(userdata=0a.0b),output:2")
			mon := s.startMonitor(t, tc.opts, "65534")
			format := uint32(openflow.NXPacketInOpenFlow10)
			switch tc.opts[len(tc.opts)-1] {
			case "nxt_packet_in2":
				format = openflow.NXPacketIn2Format
			case "nxt_packet_in":
				format = openflow.NXPacketInNXM
			}
			// Both of ovs-ofctl's settings are in before the packet.
			waitFor(t, "monitor asking for packet-ins", func() bool {
				for _, c := range *s.m.connList.Load() {
					c.mu.Lock()
					f := c.pinFormat
					c.mu.Unlock()
					if c.svcAsync.Load() && f == format {
						return true
					}
				}
				return false
			})
			// ovs-ofctl drops what arrives while it still waits for the
			// replies of its own set-up, so send until it prints one.
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for {
					s.devs["p1"].Send(frame(1, 2))
					select {
					case <-stop:
						return
					case <-time.After(200 * time.Millisecond):
					}
				}
			}()
			defer func() {
				if t.Failed() {
					nc, qf := s.m.Dropped()
					t.Logf("upcall stats %+v; dropped no-controller %d queue-full %d; conns %+v", s.b.Udpif.Stats(), nc, qf, s.m.Status())
				}
			}()
			out := mon.waitFor(t, "(unbuffered)")
			if !strings.Contains(out, tc.want) {
				t.Errorf("ovs-ofctl monitor printed\n%s\nwant\n%s", out, tc.want)
			}
			if strings.Contains(tc.want, "userdata") != strings.Contains(out, "userdata") {
				t.Errorf("userdata where it does not belong:\n%s", out)
			}
		})
	}
}
