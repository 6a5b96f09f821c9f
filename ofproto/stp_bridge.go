package ofproto

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/govswitch/govswitch/ofproto/stp"
)

// Spanning tree on a bridge, as ovs-vswitchd's ofproto-dpif runs lib/stp:
// the protocol (package stp) ticks on a goroutine of the bridge's own;
// BPDUs arriving on the bridge's ports come up from the datapath through
// a flow whose action is userspace(...,slow_path(stp)) (xlate_stp.go) and
// are fed to it; the BPDUs it sends are executed on the datapath as
// output to their port. Each port's state is kept on the Port (Port.STP),
// which translation reads: a port that is not forwarding neither relays
// what arrives on it nor is given anything to send, and in the learning
// state NORMAL learns from it but its frames go nowhere. A state change
// re-translates every datapath flow, as ovs-vswitchd's REV_STP.

// STPConfig is a bridge's spanning tree configuration: Bridge
// other_config stp-* as ovs-vswitchd reads them.
type STPConfig struct {
	// SystemID is the low 48 bits of the bridge identifier; 0 means the
	// bridge's own address (the low 48 bits of its datapath id).
	SystemID uint64
	Priority uint16
	// HelloTime, MaxAge and ForwardDelay are the requested times, which
	// the protocol clamps (1-10 s, 6-40 s, 4-30 s, and 802.1D's
	// relations between them).
	HelloTime, MaxAge, ForwardDelay time.Duration
	// Ports are the ports that take part, by name; the rest of the
	// bridge's ports forward as if the bridge had no spanning tree.
	Ports []STPPortConfig
}

// STPPortConfig is one port of the tree: Port other_config stp-*.
type STPPortConfig struct {
	Name     string
	Num      int // stp-port-num, 1 to 255
	Priority uint8
	PathCost uint32
}

// STPStatus is what ovs-vswitchd writes to Bridge status.
type STPStatus struct {
	BridgeID, DesignatedRoot stp.ID
	RootPathCost             uint32
}

// STPPortStatus is what ovs-vswitchd writes to Port status and
// statistics.
type STPPortStatus struct {
	PortID         uint16
	State          stp.State
	Role           stp.Role
	SecInState     int
	TX, RX, Errors int
}

// stpBridge is a bridge's running spanning tree.
type stpBridge struct {
	b  *Bridge
	mu sync.Mutex // guards everything below; taken before b.mu
	st *stp.Bridge
	// names[no] is the name of the port with STP port index no, "" for
	// none; entered[no] is when it entered its state.
	names   [stp.MaxPorts]string
	entered [stp.MaxPorts]time.Time
	last    time.Time
	frame   []byte
	stop    chan struct{}
	done    chan struct{}
	log     *slog.Logger
}

// stpTick is how often the protocol's timers advance. ovs-vswitchd runs
// them from its main loop, at least once a second; a finer tick keeps
// state changes close to their forward delays.
const stpTick = 100 * time.Millisecond

// SetSTP runs the spanning tree cfg on the bridge, or stops it (nil).
// Ports of cfg the bridge does not have are left out until a later call
// names them again. log receives the protocol's notices (nil: none).
func (b *Bridge) SetSTP(cfg *STPConfig, log *slog.Logger) error {
	if cfg == nil {
		b.stopSTP()
		return nil
	}
	seen := map[int]bool{}
	for _, pc := range cfg.Ports {
		if pc.Num < 1 || pc.Num > stp.MaxPorts {
			return fmt.Errorf("port %s: STP port number %d is not 1 to %d", pc.Name, pc.Num, stp.MaxPorts)
		}
		if seen[pc.Num] {
			return fmt.Errorf("port %s: duplicate STP port number %d", pc.Name, pc.Num)
		}
		seen[pc.Num] = true
	}
	b.stopRSTP() // one tree at most
	sb := b.X.stp.Load()
	started := false
	if sb == nil {
		sb = &stpBridge{b: b, stop: make(chan struct{}), done: make(chan struct{}), last: time.Now(), log: log}
		sb.st = stp.New(b.Name, stp.ID(b.DatapathID()&(1<<48-1)), sb.send)
		started = true
	}
	sb.mu.Lock()
	id := cfg.SystemID & (1<<48 - 1)
	if id == 0 {
		id = b.DatapathID() & (1<<48 - 1)
	}
	sb.st.SetID(stp.ID(uint64(cfg.Priority)<<48 | id))
	sb.st.SetTimes(int(cfg.HelloTime.Milliseconds()), int(cfg.MaxAge.Milliseconds()), int(cfg.ForwardDelay.Milliseconds()))
	want := map[int]STPPortConfig{}
	for _, pc := range cfg.Ports {
		want[pc.Num-1] = pc
	}
	ports := b.Ports.Snapshot()
	for no := range sb.names {
		pc, ok := want[no]
		sp := sb.st.Port(no)
		if !ok || sb.names[no] != "" && sb.names[no] != pc.Name {
			if sb.names[no] != "" {
				sp.Disable()
				sb.setPortState(sb.names[no], 0)
				sb.names[no] = ""
			}
		}
		if !ok {
			continue
		}
		sb.names[no] = pc.Name
		sp.Name = pc.Name
		sp.SetPriority(pc.Priority)
		sp.SetPathCost(pc.PathCost)
		if pt := ports.byName(pc.Name); pt != nil && !pt.LinkDown {
			sp.Enable()
		} else {
			sp.Disable()
		}
	}
	sb.applyLocked(time.Now(), true)
	sb.mu.Unlock()
	if started {
		b.X.stp.Store(sb)
		b.Tables.Invalidate() // BPDUs now go to the slow path
		go sb.run()
	}
	return nil
}

// byName is the port called name in the set, or nil.
func (s *PortSet) byName(name string) *Port {
	for _, p := range s.list {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// stopSTP stops the bridge's spanning tree, if it runs, and gives every
// port back its forwarding.
func (b *Bridge) stopSTP() {
	sb := b.X.stp.Swap(nil)
	if sb == nil {
		return
	}
	close(sb.stop)
	<-sb.done
	sb.mu.Lock()
	for no, name := range sb.names {
		if name != "" {
			sb.setPortState(name, 0)
			sb.names[no] = ""
		}
	}
	sb.mu.Unlock()
	b.Tables.Invalidate()
}

func (sb *stpBridge) run() {
	runTree(sb.stop, sb.done, func(now time.Time) {
		sb.mu.Lock()
		defer sb.mu.Unlock()
		ms := now.Sub(sb.last).Milliseconds()
		sb.last = now
		sb.st.Tick(int(ms))
		sb.followCarrier()
		sb.applyLocked(now, true) // a port added since has its state too
	})
}

// followCarrier enables the ports whose device has carrier and disables
// the rest, as ovs-vswitchd's stp_check_and_update_link_state.
func (sb *stpBridge) followCarrier() {
	ports := sb.b.Ports.Snapshot()
	for no, name := range sb.names {
		if name == "" {
			continue
		}
		pt := ports.byName(name)
		up := pt != nil && !pt.LinkDown
		sp := sb.st.Port(no)
		if up != (sp.State() != stp.Disabled) {
			if up {
				sp.Enable()
			} else {
				sp.Disable()
			}
		}
	}
}

// applyLocked carries the protocol's port state changes onto the ports,
// flushes the MAC table when the protocol asks, and re-translates the
// datapath flows if anything changed. all sets every port's state again
// (after a configuration). The caller holds sb.mu.
func (sb *stpBridge) applyLocked(now time.Time, all bool) {
	changed := false
	flush := false
	sb.st.TakeChanged(func(p *stp.Port) {
		if name := sb.names[p.No()]; name != "" {
			old := sb.portState(name)
			if old.Learns() != p.State().Learns() {
				flush = true
			}
			sb.setPortState(name, p.State())
			sb.entered[p.No()] = now
			changed = true
		}
	})
	if all {
		for no, name := range sb.names {
			if name != "" && sb.portState(name) != sb.st.Port(no).State() {
				sb.setPortState(name, sb.st.Port(no).State())
				sb.entered[no] = now
				changed = true
			}
		}
	}
	if sb.st.TakeFDBFlush() || flush {
		sb.b.MAC.Flush()
		sb.b.flushMcast() // as OVS flushes the mdb with the MAC table (mcast_bridge.go)
		changed = true
	}
	if changed {
		sb.b.Tables.Invalidate()
	}
}

func (sb *stpBridge) portState(name string) stp.State {
	if pt := sb.b.Ports.Snapshot().byName(name); pt != nil {
		return pt.STP
	}
	return 0
}

// setPortState gives the port called name STP state s (0: no part in the
// tree).
func (sb *stpBridge) setPortState(name string, s stp.State) {
	sb.b.setTreeState(name, func(p *Port) bool {
		if p.STP == s {
			return false
		}
		p.STP = s
		return true
	})
}

// send transmits a BPDU of the protocol on its port: an 802.3 frame from
// the port's own address, executed on the datapath as output to the
// port. Called with sb.mu held.
func (sb *stpBridge) send(no int, bpdu []byte) {
	sb.b.sendBPDU(sb.names[no], bpdu, &sb.frame, sb.log, "cannot send BPDU on port with unknown MAC", "sending BPDU")
}

// receive feeds a BPDU frame that arrived on datapath port dpPort to the
// tree. Frames on ports outside the tree are dropped (sunk), as
// ovs-vswitchd does.
func (sb *stpBridge) receive(dpPort uint32, frame []byte) {
	pt, bpdu, ok := sb.b.bpduIn(dpPort, frame)
	if !ok {
		return
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	for no, name := range sb.names {
		if name != pt.Name {
			continue
		}
		sp := sb.st.Port(no)
		if sp.State() == stp.Disabled {
			return
		}
		if err := sb.st.Receive(sp, bpdu); err != nil && sb.log != nil {
			sb.log.Warn("received bad BPDU", "bridge", sb.b.Name, "port", name, "err", err)
		}
		sb.applyLocked(time.Now(), false)
		return
	}
}

// STPStatus returns the bridge's spanning tree status; ok is false
// without one.
func (b *Bridge) STPStatus() (s STPStatus, ok bool) {
	sb := b.X.stp.Load()
	if sb == nil {
		return s, false
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return STPStatus{BridgeID: sb.st.ID(), DesignatedRoot: sb.st.DesignatedRoot(), RootPathCost: sb.st.RootPathCost()}, true
}

// STPPortStatus returns the status of the port called name in the
// bridge's tree; ok is false when the port takes no part.
func (b *Bridge) STPPortStatus(name string, now time.Time) (s STPPortStatus, ok bool) {
	sb := b.X.stp.Load()
	if sb == nil {
		return s, false
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	for no, n := range sb.names {
		if n != name {
			continue
		}
		p := sb.st.Port(no)
		return STPPortStatus{PortID: p.PortID(), State: p.State(), Role: p.Role(),
			SecInState: int(now.Sub(sb.entered[no]) / time.Second), TX: p.TX, RX: p.RX, Errors: p.Errors}, true
	}
	return s, false
}

// STPTopologyChange starts a topology change on the bridge's tree
// (ovs-appctl stp/tcn); false without a tree.
func (b *Bridge) STPTopologyChange() bool {
	sb := b.X.stp.Load()
	if sb == nil {
		return false
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.st.TopologyChange()
	sb.applyLocked(time.Now(), false)
	return true
}

// STPShow writes the bridge's tree as ovs-appctl stp/show prints it;
// false without a tree.
func (b *Bridge) STPShow(sb0 *strings.Builder) bool {
	sb := b.X.stp.Load()
	if sb == nil {
		return false
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	st := sb.st
	w := sb0
	fmt.Fprintf(w, "---- %s ----\n", b.Name)
	w.WriteString("Root ID:\n")
	h, m, f := st.BridgeTimes()
	stpIDDetails(w, st.DesignatedRoot(), h, m, f)
	if st.IsRoot() || st.RootPort() == nil {
		w.WriteString("  This bridge is the root\n")
	} else {
		fmt.Fprintf(w, "  root-port       %s\n", st.RootPort().Name)
		fmt.Fprintf(w, "  root-path-cost  %d\n", st.RootPathCost())
	}
	w.WriteString("\n")
	w.WriteString("Bridge ID:\n")
	h, m, f = st.Times()
	stpIDDetails(w, st.ID(), h, m, f)
	w.WriteString("\n")
	fmt.Fprintf(w, "  %-11.10s%-11.10s%-11.10s%-6.5s%-8.7s\n", "Interface", "Role", "State", "Cost", "Pri.Nbr")
	w.WriteString("  ---------- ---------- ---------- ----- -------\n")
	st.EnabledPorts(func(p *stp.Port) {
		fmt.Fprintf(w, "  %-11.10s%-11.10s%-11.10s%-6d%d.%d\n", p.Name, p.Role(), p.State(), p.PathCost(),
			p.PortID()>>8, p.PortID()&0xff)
	})
	w.WriteString("\n")
	return true
}

func stpIDDetails(w *strings.Builder, id stp.ID, hello, maxAge, fwd int) {
	fmt.Fprintf(w, "  stp-priority  %d\n", uint16(id>>48))
	a := uint64(id)
	fmt.Fprintf(w, "  stp-system-id   %02x:%02x:%02x:%02x:%02x:%02x\n", byte(a>>40), byte(a>>32), byte(a>>24),
		byte(a>>16), byte(a>>8), byte(a))
	fmt.Fprintf(w, "  stp-hello-time  %ds\n", stp.TicksToSeconds(hello))
	fmt.Fprintf(w, "  stp-max-age     %ds\n", stp.TicksToSeconds(maxAge))
	fmt.Fprintf(w, "  stp-fwd-delay   %ds\n", stp.TicksToSeconds(fwd))
}
