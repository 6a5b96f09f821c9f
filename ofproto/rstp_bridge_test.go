package ofproto

import (
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/ofproto/rstp"
	"github.com/govswitch/govswitch/ofproto/stp"
)

// recvBPDU returns the next RST BPDU the switch output on dev for which
// ok holds, failing after 3 s.
func recvBPDU(t *testing.T, s *testSwitch, dev string, ok func(*rstp.BPDU) bool) rstp.BPDU {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		f, err := s.devs[dev].Recv(100 * time.Millisecond)
		if err != nil || len(f) < 6 || [6]byte(f[:6]) != stp.MulticastAddr {
			continue
		}
		p, okf := stp.FramePayload(f)
		if !okf {
			continue
		}
		m, err := rstp.Decode(p)
		if err == nil && m.Type == rstp.TypeRST && ok(&m) {
			return m
		}
	}
	t.Fatalf("%s: no such BPDU sent", dev)
	return rstp.BPDU{}
}

// TestRSTPBridge runs the tree on a bridge over the dummy datapath: it
// proposes on its ports, a superior BPDU with a proposal sent into p1
// (up through the slow path, not NORMAL) makes p1 the forwarding root
// port at once and is answered with an agreement; STP then replaces it.
func TestRSTPBridge(t *testing.T) {
	s := newTestSwitch(t, 2, BridgeConfig{}, ConnConfig{})
	b := s.b
	for i, name := range []string{"p1", "p2"} {
		p := *b.Ports.Snapshot().byName(name)
		p.HWAddr = [6]byte{2, 0, 0, 0, 0, byte(i + 1)}
		if err := b.Ports.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &RSTPConfig{Address: 0x0a, Priority: 32768, MaxAge: 20, ForwardDelay: 15, Ports: []RSTPPortConfig{
		{Name: "p1", Num: 1, Priority: 128, PathCost: 2000, AutoEdge: true},
		{Name: "p2", Num: 2, Priority: 128, PathCost: 2000, AutoEdge: true},
	}}
	if err := b.SetRSTP(cfg, quietLogger()); err != nil {
		t.Fatal(err)
	}
	if p := b.Ports.Snapshot().byName("p1"); p.RSTP != rstp.Discarding {
		t.Errorf("p1 starts %v, want Discarding", p.RSTP)
	}
	m := recvBPDU(t, s, "p1", func(m *rstp.BPDU) bool { return m.Flags&rstp.FlagProposal != 0 })
	if m.BridgeID != 0x8000_0000_0000_000a || m.RootID != m.BridgeID || m.PortID != 0x8001 {
		t.Errorf("proposal %+v", m)
	}
	// A better root proposes on p1.
	sup := rstp.BPDU{Version: 2, Type: rstp.TypeRST, Flags: rstp.FlagProposal | 3<<2, RootID: 0x1000_0000_0000_0001,
		BridgeID: 0x1000_0000_0000_0001, PortID: 0x8001, MaxAge: 20 * 256, HelloTime: 2 * 256, ForwardDelay: 15 * 256}
	frame := stp.AppendFrame(nil, [6]byte{2, 0, 0, 0, 0, 0x99}, sup.Append(nil))
	if err := s.devs["p1"].Send(frame); err != nil {
		t.Fatal(err)
	}
	ag := recvBPDU(t, s, "p1", func(m *rstp.BPDU) bool { return m.Flags&rstp.FlagAgreement != 0 })
	if ag.Role() != 2 || ag.RootID != sup.RootID || ag.RootPathCost != 2000 {
		t.Errorf("agreement %+v", ag)
	}
	st, ok := b.RSTPStatus()
	if !ok || st.RootID != sup.RootID || st.BridgePortID != 0x8001 || st.RootPathCost != 2000 {
		t.Errorf("status %+v %v", st, ok)
	}
	if p := b.Ports.Snapshot().byName("p1"); p.RSTP != rstp.Forwarding {
		t.Errorf("root port p1 %v, want Forwarding", p.RSTP)
	}
	ps, ok := b.RSTPPortStatus("p1")
	if !ok || ps.Role != rstp.RoleRoot || ps.RX != 1 {
		t.Errorf("p1 status %+v", ps)
	}
	var w strings.Builder
	b.RSTPShow(&w)
	if !strings.Contains(w.String(), "root-port       p1") {
		t.Errorf("rstp/show:\n%s", w.String())
	}
	// STP takes over: RSTP stops and the ports leave its tree.
	if err := b.SetSTP(&STPConfig{Priority: 32768, HelloTime: 2 * time.Second, MaxAge: 20 * time.Second,
		ForwardDelay: 15 * time.Second, Ports: []STPPortConfig{{Name: "p1", Num: 1, Priority: 128, PathCost: 2}}}, nil); err != nil {
		t.Fatal(err)
	}
	defer b.SetSTP(nil, nil)
	if b.RSTPRunning() {
		t.Error("RSTP runs beside STP")
	}
	if p := b.Ports.Snapshot().byName("p1"); p.RSTP != rstp.Disabled || p.STP == 0 {
		t.Errorf("p1 after STP: RSTP %v STP %v", p.RSTP, p.STP)
	}
}
