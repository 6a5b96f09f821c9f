package ofproto

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/govswitch/govswitch/ofproto/rstp"
)

// Rapid spanning tree on a bridge, as ofproto-dpif runs lib/rstp, wired
// as the spanning tree is (stp_bridge.go): the protocol (package rstp)
// ticks on a goroutine of the bridge's own; BPDUs come up from the
// datapath by the same slow-path(stp) flow and are fed to it; the BPDUs
// it sends are executed on the datapath as output to their port. Each
// port's state is kept on the Port (Port.RSTP), which translation reads
// (xlate_stp.go). A state change re-translates every datapath flow, as
// ovs-vswitchd's REV_RSTP. A bridge runs STP or RSTP, never both.

// RSTPConfig is a bridge's rapid spanning tree configuration: Bridge
// other_config rstp-* as ovs-vswitchd reads them.
type RSTPConfig struct {
	// Address is the low 48 bits of the bridge identifier; 0 means the
	// bridge's own address (the low 48 bits of its datapath id).
	Address uint64
	// Priority, MaxAge and ForwardDelay (in seconds) are as the protocol
	// takes them: out of range, they leave what was (rstp.Bridge).
	Priority             int
	MaxAge, ForwardDelay int
	// Ports are the ports that take part, by name; the rest of the
	// bridge's ports forward as if the bridge had no spanning tree.
	Ports []RSTPPortConfig
}

// RSTPPortConfig is one port of the tree: Port other_config rstp-*.
type RSTPPortConfig struct {
	Name string
	// Num is rstp-port-num, 1 to 4095; 0 for the first free number.
	Num       int
	Priority  int
	PathCost  uint32
	AdminEdge bool
	AutoEdge  bool
	// AdminDown keeps the port in the tree with its link taken as down
	// (rstp-admin-port-state=false): it discards.
	AdminDown bool
	// MCheck (rstp-port-mcheck) has the port try RSTP again, where it
	// fell back to 802.1D-1998, each time the configuration is applied.
	MCheck bool
}

// RSTPStatus is what ovs-vswitchd writes to Bridge rstp_status.
type RSTPStatus struct {
	BridgeID, RootID, DesignatedID rstp.ID
	RootPathCost                   uint32
	DesignatedPortID, BridgePortID uint16
}

// RSTPPortStatus is what ovs-vswitchd writes to Port rstp_status and
// rstp_statistics.
type RSTPPortStatus struct {
	PortID                     uint16
	Role                       rstp.Role
	State                      rstp.State
	DesignatedBridge           rstp.ID
	DesignatedPort             uint16
	DesignatedPathCost         uint32
	TX, RX, Errors, UptimeSecs int
}

// rstpBridge is a bridge's running rapid spanning tree.
type rstpBridge struct {
	b     *Bridge
	mu    sync.Mutex // guards everything below; taken before b.mu
	rt    *rstp.Bridge
	ports map[string]*rstp.Port // by port name
	down  map[string]bool       // the ports configured AdminDown
	last  time.Time
	frame []byte
	stop  chan struct{}
	done  chan struct{}
	log   *slog.Logger
}

// SetRSTP runs the rapid spanning tree cfg on the bridge, or stops it
// (nil). A bridge running STP has it stopped first. Ports of cfg the
// bridge does not have take part, not operational, until they appear.
// log receives the protocol's notices (nil: none).
func (b *Bridge) SetRSTP(cfg *RSTPConfig, log *slog.Logger) error {
	if cfg == nil {
		b.stopRSTP()
		return nil
	}
	seen := map[int]bool{}
	for _, pc := range cfg.Ports {
		if pc.Num < 0 || pc.Num > rstp.MaxPorts {
			return fmt.Errorf("port %s: RSTP port number %d is not 1 to %d", pc.Name, pc.Num, rstp.MaxPorts)
		}
		if pc.Num != 0 && seen[pc.Num] {
			return fmt.Errorf("port %s: duplicate RSTP port number %d", pc.Name, pc.Num)
		}
		seen[pc.Num] = true
	}
	b.stopSTP()
	sb := b.X.rstp.Load()
	started := false
	if sb == nil {
		sb = &rstpBridge{b: b, ports: map[string]*rstp.Port{}, down: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{}),
			last: time.Now(), log: log}
		sb.rt = rstp.New(b.Name, b.DatapathID(), sb.send)
		started = true
	}
	sb.mu.Lock()
	addr := cfg.Address & (1<<48 - 1)
	if addr == 0 {
		addr = b.DatapathID() & (1<<48 - 1)
	}
	sb.rt.SetAddress(addr)
	sb.rt.SetPriority(cfg.Priority)
	sb.rt.SetTimes(cfg.MaxAge, cfg.ForwardDelay)
	want := map[string]RSTPPortConfig{}
	for _, pc := range cfg.Ports {
		want[pc.Name] = pc
	}
	for name, rp := range sb.ports {
		if pc, ok := want[name]; !ok || pc.Num != 0 && pc.Num != rp.Num() {
			sb.rt.RemovePort(rp)
			delete(sb.ports, name)
			delete(sb.down, name)
			sb.leave(name)
		}
	}
	ports := b.Ports.Snapshot()
	for _, pc := range cfg.Ports { // numbered ports first, so that free numbers do not take theirs
		if pc.Num != 0 {
			sb.configurePort(pc, ports)
		}
	}
	for _, pc := range cfg.Ports {
		if pc.Num == 0 {
			sb.configurePort(pc, ports)
		}
	}
	sb.applyLocked(true)
	sb.mu.Unlock()
	if started {
		b.X.rstp.Store(sb)
		b.Tables.Invalidate() // BPDUs now go to the slow path
		go sb.run()
	}
	return nil
}

// configurePort adds or updates the tree's port pc. The caller holds
// sb.mu.
func (sb *rstpBridge) configurePort(pc RSTPPortConfig, ports *PortSet) {
	rp := sb.ports[pc.Name]
	if rp == nil {
		if rp = sb.rt.AddPort(pc.Num); rp == nil {
			if sb.log != nil {
				sb.log.Warn("too many RSTP ports, disabling", "bridge", sb.b.Name, "port", pc.Name)
			}
			return
		}
		rp.Name = pc.Name
		sb.ports[pc.Name] = rp
	}
	rp.SetPriority(pc.Priority)
	rp.SetPathCost(pc.PathCost)
	rp.SetAutoEdge(pc.AutoEdge)
	if pc.AdminEdge != rp.AdminEdge() {
		rp.SetAdminEdge(pc.AdminEdge)
	}
	sb.down[pc.Name] = pc.AdminDown
	pt := ports.byName(pc.Name)
	rp.SetOperational(pt != nil && !pt.LinkDown && !pc.AdminDown)
	if pc.MCheck {
		rp.MCheck()
	}
}

// RSTPRunning reports whether the bridge runs a rapid spanning tree (SetSTP
// stops one).
func (b *Bridge) RSTPRunning() bool { return b.X.rstp.Load() != nil }

// stopRSTP stops the bridge's rapid spanning tree, if it runs, and gives
// every port back its forwarding.
func (b *Bridge) stopRSTP() {
	sb := b.X.rstp.Swap(nil)
	if sb == nil {
		return
	}
	close(sb.stop)
	<-sb.done
	sb.mu.Lock()
	for name := range sb.ports {
		sb.leave(name)
		delete(sb.ports, name)
	}
	sb.mu.Unlock()
	b.Tables.Invalidate()
}

func (sb *rstpBridge) run() {
	runTree(sb.stop, sb.done, func(now time.Time) {
		sb.mu.Lock()
		defer sb.mu.Unlock()
		ms := now.Sub(sb.last).Milliseconds()
		sb.last = now
		sb.followCarrier()
		sb.rt.Tick(int(ms))
		sb.applyLocked(true) // a port added since has its state too
	})
}

// followCarrier tells the tree which ports' devices have carrier, as
// ovs-vswitchd's rstp_port_set_mac_operational from may_enable.
func (sb *rstpBridge) followCarrier() {
	ports := sb.b.Ports.Snapshot()
	for name, rp := range sb.ports {
		pt := ports.byName(name)
		rp.SetOperational(pt != nil && !pt.LinkDown && !sb.down[name])
	}
}

// applyLocked carries the protocol's port state changes onto the ports,
// forgets what the ports the protocol names learned, and re-translates
// the datapath flows if anything changed. all sets every port's state
// again (after a configuration, or for a port added to the bridge
// since). The caller holds sb.mu.
//
// As ovs-vswitchd's rstp_run, the MAC table loses only the entries of
// the ports concerned: a port whose state starts or stops learning, and
// each port the topology change machine flushes. Where an alternate
// took over from the root port, the old root port's entries move to the
// new one instead. The multicast snooping table is kept (ovs-vswitchd
// flushes it only under STP).
func (sb *rstpBridge) applyLocked(all bool) {
	changed := false
	from, to := sb.rt.RootShift()
	flush := func(name string) {
		if from != nil && from.Name == name {
			return // moved below
		}
		if pt := sb.b.Ports.Snapshot().byName(name); pt != nil && sb.b.MAC.FlushPort(pt.OFPort) > 0 {
			changed = true
		}
	}
	set := func(name string, s rstp.State) {
		if old, ok := sb.setPortState(name, s); ok {
			changed = true
			if old.Learns() != s.Learns() {
				flush(name)
			}
		}
	}
	sb.rt.TakeChanged(func(p *rstp.Port) {
		if sb.ports[p.Name] == p {
			set(p.Name, p.State())
		}
	})
	if all {
		for name, rp := range sb.ports {
			set(name, rp.State())
		}
	}
	sb.rt.TakeFDBFlush(func(p *rstp.Port) {
		if sb.ports[p.Name] == p {
			flush(p.Name)
		}
	})
	if from != nil {
		ports := sb.b.Ports.Snapshot()
		if f, t := ports.byName(from.Name), ports.byName(to.Name); f != nil && t != nil {
			sb.b.MAC.MovePort(f.OFPort, t.OFPort)
			changed = true
		}
		sb.rt.ClearRootShift()
	}
	if changed {
		sb.b.Tables.Invalidate()
	}
}

// setPortState gives the port called name RSTP state s (rstp.Disabled:
// no part in the tree) and reports the state it had and whether that
// changed.
func (sb *rstpBridge) setPortState(name string, s rstp.State) (old rstp.State, changed bool) {
	changed = sb.b.setTreeState(name, func(p *Port) bool {
		old = p.RSTP
		p.RSTP = s
		return old != s
	})
	return old, changed
}

// leave takes the port called name out of the tree: its state becomes
// Disabled (it forwards as a port without RSTP) and, if it learned, its
// entries go, as ovs-vswitchd's update_rstp_port_state. The caller holds
// sb.mu.
func (sb *rstpBridge) leave(name string) {
	if old, ok := sb.setPortState(name, rstp.Disabled); ok && old.Learns() {
		if pt := sb.b.Ports.Snapshot().byName(name); pt != nil {
			sb.b.MAC.FlushPort(pt.OFPort)
		}
	}
}

// send transmits a BPDU of the protocol on its port: an 802.3 frame from
// the port's own address, executed on the datapath as output to the
// port. Called with sb.mu held.
func (sb *rstpBridge) send(rp *rstp.Port, bpdu []byte) {
	sb.b.sendBPDU(rp.Name, bpdu, &sb.frame, sb.log,
		"cannot send RSTP BPDU on a port which does not have a configured source MAC address", "sending RSTP BPDU")
}

// receive feeds a BPDU frame that arrived on datapath port dpPort to the
// tree. Frames on ports outside the tree are dropped, as ovs-vswitchd
// does.
func (sb *rstpBridge) receive(dpPort uint32, frame []byte) {
	pt, bpdu, ok := sb.b.bpduIn(dpPort, frame)
	if !ok {
		return
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	rp := sb.ports[pt.Name]
	if rp == nil {
		return
	}
	if err := sb.rt.Receive(rp, bpdu); err != nil && sb.log != nil {
		sb.log.Warn("received bad RSTP BPDU", "bridge", sb.b.Name, "port", pt.Name, "err", err)
	}
	sb.applyLocked(false)
}

// RSTPStatus returns the bridge's rapid spanning tree status; ok is
// false without one.
func (b *Bridge) RSTPStatus() (s RSTPStatus, ok bool) {
	sb := b.X.rstp.Load()
	if sb == nil {
		return s, false
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	rt := sb.rt
	s = RSTPStatus{BridgeID: rt.ID(), RootID: rt.RootID(), DesignatedID: rt.DesignatedID(),
		RootPathCost: rt.RootPathCost(), DesignatedPortID: rt.DesignatedPortID()}
	if rp := rt.RootPort(); rp != nil {
		s.BridgePortID = rp.PortID()
	}
	return s, true
}

// RSTPPortStatus returns the status of the port called name in the
// bridge's tree; ok is false when the port takes no part.
func (b *Bridge) RSTPPortStatus(name string) (s RSTPPortStatus, ok bool) {
	sb := b.X.rstp.Load()
	if sb == nil {
		return s, false
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	p := sb.ports[name]
	if p == nil {
		return s, false
	}
	return RSTPPortStatus{PortID: p.PortID(), Role: p.Role(), State: p.State(), DesignatedBridge: p.DesignatedBridge(),
		DesignatedPort: p.DesignatedPort(), DesignatedPathCost: p.DesignatedCost(), TX: p.TX, RX: p.RX,
		Errors: p.Errors, UptimeSecs: p.UptimeMS / 1000}, true
}

// RSTPShow writes the bridge's tree as ovs-appctl rstp/show prints it;
// false without a tree.
func (b *Bridge) RSTPShow(w *strings.Builder) bool {
	sb := b.X.rstp.Load()
	if sb == nil {
		return false
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	rt := sb.rt
	fmt.Fprintf(w, "---- %s ----\n", b.Name)
	w.WriteString("Root ID:\n")
	if rt.IsRoot() {
		h, m, f := rt.BridgeTimes()
		rstpIDDetails(w, rt.ID(), h, m, f)
		w.WriteString("  This bridge is the root\n")
	} else {
		h, m, f := rt.RootTimes()
		rstpIDDetails(w, rt.RootID(), h, m, f)
		fmt.Fprintf(w, "  root-port       %s\n", rt.RootPort().Name)
		fmt.Fprintf(w, "  root-path-cost  %d\n", rt.RootPathCost())
	}
	w.WriteString("\n")
	w.WriteString("Bridge ID:\n")
	h, m, f := rt.BridgeTimes()
	rstpIDDetails(w, rt.ID(), h, m, f)
	w.WriteString("\n")
	fmt.Fprintf(w, "  %-11.10s%-11.10s%-11.10s%-9.8s%-8.7s\n", "Interface", "Role", "State", "Cost", "Pri.Nbr")
	w.WriteString("  ---------- ---------- ---------- -------- -------\n")
	rt.Ports(func(p *rstp.Port) {
		if p.State() != rstp.Disabled {
			fmt.Fprintf(w, "  %-11.10s%-11.10s%-11.10s%-9d%d.%d\n", p.Name, p.Role(), p.State(), p.PathCost(),
				p.Priority(), p.Num())
		}
	})
	w.WriteString("\n")
	return true
}

func rstpIDDetails(w *strings.Builder, id rstp.ID, hello, maxAge, fwd int) {
	fmt.Fprintf(w, "  stp-priority    %d\n", id.Priority())
	a := id.Address()
	fmt.Fprintf(w, "  stp-system-id   %02x:%02x:%02x:%02x:%02x:%02x\n", byte(a>>40), byte(a>>32), byte(a>>24),
		byte(a>>16), byte(a>>8), byte(a))
	fmt.Fprintf(w, "  stp-hello-time  %ds\n", hello)
	fmt.Fprintf(w, "  stp-max-age     %ds\n", maxAge)
	fmt.Fprintf(w, "  stp-fwd-delay   %ds\n", fwd)
}

// RSTPTopologyChange is ovs-appctl rstp/tcn. ovs-vswitchd's runs the
// state machines again, which changes nothing the protocol has not
// already done; so here it carries the ports' states over again. False
// without a tree.
func (b *Bridge) RSTPTopologyChange() bool {
	sb := b.X.rstp.Load()
	if sb == nil {
		return false
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.applyLocked(true)
	return true
}
