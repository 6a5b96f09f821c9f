package ofproto

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

func tcpMatch(k *flow.Key, m *flow.Mask) {
	k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
	k.NwProto, m.NwProto = flow.IPProtoTCP, 0xff
}

// tcpFrame is synFrame with TCP flags flags.
func tcpFrame(sport uint16, flags byte) []byte {
	b := synFrame(sport)
	b[14+33] = flags
	return b
}

// onlyRule returns the one rule of table id.
func onlyRule(t *testing.T, ts *Tables, id uint8) *Rule {
	t.Helper()
	var rs []*Rule
	for r := range ts.View().Table(id).Rules(nil) {
		rs = append(rs, r)
	}
	if len(rs) != 1 {
		t.Fatalf("table %d holds %d rules, want 1", id, len(rs))
	}
	return rs[0]
}

func TestReduceTimeout(t *testing.T) {
	for _, tc := range []struct{ max, t, want uint16 }{
		{0, 0, 0}, {0, 7, 7}, {5, 0, 5}, {5, 7, 5}, {5, 3, 3}, {5, 5, 5},
	} {
		if got := reduceTimeout(tc.max, tc.t); got != tc.want {
			t.Errorf("reduceTimeout(%d, %d) = %d, want %d", tc.max, tc.t, got, tc.want)
		}
	}
}

// TestFinTimeoutUpcall: a FIN that upcalls lowers the timeouts of the
// rule whose fin_timeout it ran (only lowers them), and the rule then
// expires by them; other segments leave them.
func TestFinTimeoutUpcall(t *testing.T) {
	x := testBridge(t)
	mustAdd(t, x, 0, tcpMatch, 1, apply(openflow.FinTimeout(1, 0), openflow.Output(2, 0)))
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { tcpMatch(k, m); k.TpDst, m.TpDst = 81, 0xffff }, 2,
		apply(openflow.FinTimeout(0, 30), openflow.Output(2, 0)))
	r := onlyRuleMatching(t, x.Tables, 1)
	var out Out
	k := pkt(11)
	k.TCPFlags = 0x10 // ACK
	x.Translate(&k, t0, true, &out)
	if out.WC.NwProto != 0xff || out.WC.TCPFlags != 0 {
		t.Errorf("megaflow nw_proto %#x tcp_flags %#x: want nw_proto only", out.WC.NwProto, out.WC.TCPFlags)
	}
	out.applyFinTimeouts(k.TCPFlags)
	if i, h := r.Value.Timeouts(); i != 0 || h != 0 {
		t.Fatalf("an ACK set timeouts %d/%d", i, h)
	}
	for _, flags := range []uint16{0x011, 0x004} { // FIN|ACK, RST
		k.TCPFlags = flags
		x.Translate(&k, t0, true, &out)
		out.applyFinTimeouts(k.TCPFlags)
		if i, h := r.Value.Timeouts(); i != 1 || h != 0 {
			t.Fatalf("flags %#x: timeouts %d/%d, want 1/0", flags, i, h)
		}
	}
	// Steady state (the rule already lowered) allocates nothing.
	if n := testing.AllocsPerRun(200, func() {
		x.Translate(&k, t0, true, &out)
		out.applyFinTimeouts(k.TCPFlags)
	}); n != 0 {
		t.Errorf("a FIN through fin_timeout allocates %v times", n)
	}
	// The dump shows it, and the rule goes by it.
	if n := x.Tables.Expire(t0.Add(500 * time.Millisecond)); n != 0 {
		t.Fatalf("expired %d early", n)
	}
	if n := x.Tables.Expire(t0.Add(1100 * time.Millisecond)); n != 1 {
		t.Fatalf("expired %d, want the lowered rule", n)
	}
	// The hard one, only lowered: 30 stays 30 against a fin_timeout of 40.
	r2 := onlyRuleMatching(t, x.Tables, 2)
	k.TpDst = 81
	x.Translate(&k, t0, true, &out)
	out.applyFinTimeouts(k.TCPFlags)
	if i, h := r2.Value.Timeouts(); i != 0 || h != 30 {
		t.Fatalf("timeouts %d/%d, want 0/30", i, h)
	}
	if !x.Tables.ReduceTimeouts(r2, 0, 10) || x.Tables.ReduceTimeouts(r2, 0, 40) {
		t.Error("ReduceTimeouts did not lower 30 to 10, or raised it to 40")
	}
	if _, h := r2.Value.Timeouts(); h != 10 {
		t.Errorf("hard %d, want 10", h)
	}
	// A rule gone from the tables is left alone (and not expired again).
	del := FlowMod{Command: CmdDelete, Table: openflow.TableAll, OutPort: openflow.PortAny}
	if err := x.Tables.Apply(&del, t0); err != nil {
		t.Fatal(err)
	}
	if x.Tables.ReduceTimeouts(r, 0, 1) || x.Tables.ReduceTimeouts(r2, 0, 1) {
		t.Error("a deleted rule's timeouts were lowered")
	}
	if n := x.Tables.Expire(t0.Add(time.Hour)); n != 0 {
		t.Errorf("expired %d deleted rules", n)
	}
}

// onlyRuleMatching returns table 0's rule of priority prio.
func onlyRuleMatching(t *testing.T, ts *Tables, prio int) *Rule {
	t.Helper()
	for r := range ts.View().Table(0).Rules(nil) {
		if r.Priority == prio {
			return r
		}
	}
	t.Fatalf("no rule of priority %d", prio)
	return nil
}

// TestFinTimeoutRevalidator: a FIN the datapath forwarded by its
// installed flow never upcalls; its flag in the flow's stats makes the
// revalidator lower the rule's timeouts, as OVS's XC_FIN_TIMEOUT.
func TestFinTimeoutRevalidator(t *testing.T) {
	b, p1, p2 := forwardingBridge(t)
	fm := &FlowMod{Command: CmdAdd, Priority: 50000, OutPort: openflow.PortAny, Match: match(tcpMatch),
		Instructions: apply(openflow.FinTimeout(1, 0), openflow.Output(2, 0))}
	if err := b.Tables.Apply(fm, time.Now()); err != nil {
		t.Fatal(err)
	}
	b.Udpif.Sync() // the megaflow of the first frame now runs the rule
	r := onlyRuleMatching(t, b.Tables, 50000)
	send := func(flags byte) {
		t.Helper()
		p1.Send(tcpFrame(1, flags))
		if _, err := p2.Recv(2 * time.Second); err != nil {
			t.Fatalf("frame not forwarded: %v", err)
		}
	}
	// The rule matches nw_proto, which the first frame's megaflow did
	// not: the revalidator deleted it, and this ACK upcalls and installs
	// the new one.
	send(0x10)
	b.Udpif.Revalidate()
	misses := b.Udpif.Stats().Misses
	if i, h := r.Value.Timeouts(); i != 0 || h != 0 {
		t.Fatalf("an ACK set timeouts %d/%d", i, h)
	}
	send(0x11)
	b.Udpif.Revalidate()
	if s := b.Udpif.Stats(); s.Misses != misses {
		t.Errorf("the frames upcalled (%d misses before, %d after)", misses, s.Misses)
	}
	if i, h := r.Value.Timeouts(); i != 1 || h != 0 {
		t.Fatalf("after a FIN by the datapath flow: timeouts %d/%d, want 1/0", i, h)
	}
	if n := b.Tables.Expire(time.Now().Add(1100 * time.Millisecond)); n != 1 {
		t.Errorf("expired %d, want the lowered rule", n)
	}
}

// TestFinTimeoutLearn: learn's fin_idle_timeout puts a fin_timeout first
// in the learned flow, which a FIN through that flow then runs; learning
// the flow again keeps the lowered timeout, as OVS's modify does.
func TestFinTimeoutLearn(t *testing.T) {
	x := testBridge(t)
	l := openflow.LearnAction{Table: 10, Priority: 0x8000, IdleTimeout: 60, FinIdleTimeout: 1, FinHardTimeout: 5,
		Specs: []openflow.LearnSpec{{Dst: openflow.LearnMatch, NBits: 48, Src: openflow.FieldEthSrc, Field: openflow.FieldEthSrc}}}
	mustAdd(t, x, 0, tcpMatch, 1, apply(learnAct(l), openflow.Action{Type: openflow.ActResubmit, Port: openflow.PortInPort, Table: 10}))
	var out Out
	k := pkt(11)
	step := func(flags uint16) {
		k.TCPFlags = flags
		x.Translate(&k, t0, true, &out)
		applyLearns(&out, t0)
		out.applyFinTimeouts(k.TCPFlags)
	}
	step(0x02)
	lr := onlyRule(t, x.Tables, 10)
	if a := lr.Value.Instructions.Apply; len(a) != 1 || !a[0].Equal(openflow.FinTimeout(1, 5)) {
		t.Fatalf("learned actions %+v", a)
	}
	if i, h := lr.Value.Timeouts(); i != 60 || h != 0 {
		t.Fatalf("learned timeouts %d/%d", i, h)
	}
	step(0x02) // reaches the learned flow now
	if i, h := onlyRule(t, x.Tables, 10).Value.Timeouts(); i != 60 || h != 0 {
		t.Fatalf("a SYN through the learned flow: timeouts %d/%d", i, h)
	}
	step(0x11)
	if i, h := onlyRule(t, x.Tables, 10).Value.Timeouts(); i != 1 || h != 5 {
		t.Fatalf("after a FIN: learned timeouts %d/%d, want 1/5", i, h)
	}
	step(0x10) // the last ACK learns again: the flow keeps its lowered timeouts
	if i, h := onlyRule(t, x.Tables, 10).Value.Timeouts(); i != 1 || h != 5 {
		t.Fatalf("relearned: timeouts %d/%d, want 1/5", i, h)
	}
}

// TestFinTimeoutNeedsTCP: a controller's fin_timeout in a flow that does
// not match TCP is refused, as ovs-vswitchd's check_FIN_TIMEOUT refuses it.
func TestFinTimeoutNeedsTCP(t *testing.T) {
	ts := NewTables()
	ip := func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }
	for _, tc := range []struct {
		name string
		m    func(*flow.Key, *flow.Mask)
		ok   bool
	}{{"tcp", tcpMatch, true}, {"ip", ip, false}, {"any", func(*flow.Key, *flow.Mask) {}, false}} {
		fm := FlowMod{Command: CmdAdd, Match: match(tc.m), OutPort: openflow.PortAny,
			Instructions: apply(openflow.Action{Type: openflow.ActClone, Nested: []openflow.Action{openflow.FinTimeout(1, 0)}})}
		err := ts.Apply(&fm, t0)
		if tc.ok != (err == nil) || err != nil && ErrKind(err) != ErrMatchInconsistent {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestOfctlFinTimeout: through the real ovs-ofctl, fin_timeout and
// learn's fin timeouts are accepted and dumped back, and a lowered
// timeout shows in dump-flows.
func TestOfctlFinTimeout(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	of13 := []string{"-O", "OpenFlow13"}
	s.ofctl(t, of13, "add-flow", "tcp,actions=fin_timeout(idle_timeout=1,hard_timeout=2),output:2")
	// OpenFlow 1.0 lets it stand outside a TCP match, as ovs-vswitchd's
	// own test ("ofproto-dpif - fin_timeout") adds it; 1.3 does not (and
	// ovs-ofctl refuses to send it).
	s.ofctl(t, nil, "add-flow", "table=3,idle_timeout=60,actions=fin_timeout(idle_timeout=5)")
	if out, err := s.ofctlErr(of13, "add-flow", "table=3,ip,actions=fin_timeout(idle_timeout=5)"); err == nil {
		t.Errorf("1.3 fin_timeout without tcp accepted: %s", out)
	}
	s.ofctl(t, of13, "add-flow", "table=1,actions=learn(table=2,idle_timeout=60,fin_idle_timeout=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[]),output:2")
	out := s.ofctl(t, of13, "dump-flows")
	for _, want := range []string{" tcp actions=fin_timeout(idle_timeout=1,hard_timeout=2),output:2",
		"actions=learn(table=2,idle_timeout=60,fin_idle_timeout=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[]),output:2"} {
		if !strings.Contains(out, want) {
			t.Errorf("dump-flows:\n%s\nwant %s", out, want)
		}
	}
	for r := range s.b.Tables.View().Table(0).Rules(nil) {
		s.b.Tables.ReduceTimeouts(r, 1, 2)
	}
	if out := s.ofctl(t, of13, "dump-flows", "table=0"); !strings.Contains(out, "idle_timeout=1, hard_timeout=2,") {
		t.Errorf("dump-flows after a FIN:\n%s", out)
	}
}

// TestFinTimeoutConcurrent runs what touches a rule's timeouts at once:
// FINs lowering them, flow stats reading them, expiry and modifies (which
// copy them). Run under -race.
func TestFinTimeoutConcurrent(t *testing.T) {
	x := testBridge(t)
	mustAdd(t, x, 0, tcpMatch, 1, apply(openflow.FinTimeout(1, 0), openflow.Output(2, 0)))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	run := func(fn func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
					fn(i)
				}
			}
		}()
	}
	run(func(i int) {
		var out Out
		k := pkt(11)
		k.TCPFlags = tcpFIN
		x.Translate(&k, t0, false, &out)
		out.applyFinTimeouts(k.TCPFlags)
	})
	run(func(i int) {
		for r := range x.Tables.View().Table(0).Rules(nil) {
			_ = flowStatsEntry(r, openflow.Version13, false, t0)
		}
	})
	run(func(i int) {
		fm := FlowMod{Command: CmdModify, Match: match(tcpMatch), OutPort: openflow.PortAny,
			Instructions: apply(openflow.FinTimeout(uint16(1+i%3), 0), openflow.Output(2, 0))}
		if err := x.Tables.Apply(&fm, t0); err != nil {
			t.Error(err)
		}
	})
	run(func(i int) { x.Tables.Expire(t0.Add(500 * time.Millisecond)) })
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	// The modifies put fin_timeouts of 1 to 3 s in turn; every FIN
	// lowered by the one it ran.
	if i, _ := onlyRule(t, x.Tables, 0).Value.Timeouts(); i < 1 || i > 3 {
		t.Errorf("idle %d after FINs, want 1 to 3", i)
	}
}

// TestFinTimeoutText: bridge/dump-flows and ofproto/trace print it as
// ovs-ofctl does.
func TestFinTimeoutText(t *testing.T) {
	for _, tc := range []struct {
		a    openflow.Action
		want string
	}{
		{openflow.FinTimeout(1, 0), "fin_timeout(idle_timeout=1)"},
		{openflow.FinTimeout(0, 9), "fin_timeout(hard_timeout=9)"},
		{openflow.FinTimeout(3, 4), "fin_timeout(idle_timeout=3,hard_timeout=4)"},
		{openflow.FinTimeout(0, 0), "fin_timeout()"},
	} {
		if got := ActionString(&tc.a); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.a, got, tc.want)
		}
	}
}

// TestFinTimeoutHardFromModified: a lowered hard timeout runs from the
// rule's creation (or last modify), not from the FIN, as OVS's
// rule_expire reads rule->modified: a rule older than the new hard
// timeout goes at the next expiry run.
func TestFinTimeoutHardFromModified(t *testing.T) {
	x := testBridge(t)
	mustAdd(t, x, 0, tcpMatch, 1, apply(openflow.FinTimeout(0, 2), openflow.Output(2, 0)))
	r := onlyRule(t, x.Tables, 0)
	var out Out
	k := pkt(11)
	k.TCPFlags = tcpRST
	x.Translate(&k, t0.Add(5*time.Second), true, &out)
	out.applyFinTimeouts(k.TCPFlags)
	r.Value.Credit(1, 60, t0.Add(5*time.Second))
	if _, h := r.Value.Timeouts(); h != 2 {
		t.Fatalf("hard %d, want 2", h)
	}
	if n := x.Tables.Expire(t0.Add(5*time.Second + time.Millisecond)); n != 1 {
		t.Errorf("expired %d at 5 s with a 2 s hard timeout, want 1", n)
	}
}
