package stp

// State is a port's state. Each state is one bit, so that sets of states
// test with a mask.
//
// Disabled is, as in ovs-vswitchd, a port that takes no part in the
// spanning tree: ovs-vswitchd's translation forwards on a port of a
// bridge with STP only when the port is not an STP port at all; an STP
// port that is Disabled (no carrier) neither forwards nor learns.
type State uint8

const (
	Disabled   State = 1 << 0
	Listening  State = 1 << 1
	Learning   State = 1 << 2
	Forwarding State = 1 << 3
	Blocking   State = 1 << 4
)

func (s State) String() string {
	switch s {
	case Disabled:
		return "disabled"
	case Listening:
		return "listening"
	case Learning:
		return "learning"
	case Forwarding:
		return "forwarding"
	case Blocking:
		return "blocking"
	}
	return "unknown"
}

// Forwards reports whether frames received in state s are relayed.
func (s State) Forwards() bool { return s&Forwarding != 0 }

// Learns reports whether source addresses are learned in state s.
func (s State) Learns() bool { return s&(Learning|Forwarding) != 0 }

// PassesBPDU reports whether a BPDU may be output on a port in state s
// (every state but Blocking: a Disabled port, one outside the tree, just
// carries them).
func (s State) PassesBPDU() bool { return s&(Disabled|Listening|Learning|Forwarding) != 0 }

// Role is a port's role in the tree.
type Role uint8

const (
	RoleRoot Role = iota
	RoleDesignated
	RoleAlternate
	RoleDisabled
)

func (r Role) String() string {
	switch r {
	case RoleRoot:
		return "root"
	case RoleDesignated:
		return "designated"
	case RoleAlternate:
		return "alternate"
	}
	return "disabled"
}

// Defaults, as ovs-vswitchd's.
const (
	MaxPorts               = 255
	DefaultBridgePriority  = 32768
	DefaultPortPriority    = 128
	DefaultMaxAgeMS        = 20000
	DefaultHelloTimeMS     = 2000
	DefaultForwardDelayMS  = 15000
	DefaultPathCost        = 2 // 10 Gb/s
	ticksPerSecond         = 256
	messageAgeIncrement    = 1 // ticks added to a relayed BPDU's age
	holdTimeTicks          = ticksPerSecond
	maxTimerMS             = 1<<31 - 1 - 1000
	minHelloMS, maxHelloMS = 1000, 10000
)

// PathCostForSpeed is the recommended path cost of a link of mbps Mb/s
// (802.1D table 8-5), 2 (10 Gb/s) when the speed is unknown.
func PathCostForSpeed(mbps uint64) uint32 {
	switch {
	case mbps >= 10000:
		return 2
	case mbps >= 1000:
		return 4
	case mbps >= 100:
		return 19
	case mbps >= 16:
		return 62
	case mbps >= 10:
		return 100
	case mbps >= 4:
		return 250
	}
	return 2
}

func msToTicks(ms int) int { return ms * ticksPerSecond / 1000 }
func ticksToMS(t int) int  { return t * 1000 / ticksPerSecond }

// timer is one of the protocol's timers: it counts up, in ticks, while
// running.
type timer struct {
	running bool
	value   int
}

func (t *timer) start(v int) { t.running, t.value = true, v }
func (t *timer) stop()       { t.running = false }

// expired advances a running timer by elapsed ticks and reports (once)
// whether it reached limit.
func (t *timer) expired(elapsed, limit int) bool {
	if !t.running {
		return false
	}
	t.value += elapsed
	if t.value >= limit {
		t.running = false
		return true
	}
	return false
}

// Port is one port of a Bridge (802.1D 8.5.5).
type Port struct {
	br   *Bridge
	no   int // index in Bridge.ports: the port number minus one
	Name string

	id               uint16
	state            State
	pathCost         uint32
	designatedRoot   ID
	designatedCost   uint32
	designatedBridge ID
	designatedPort   uint16
	tcAck            bool
	configPending    bool
	changeDetection  bool

	messageAge, forwardDelay, hold timer

	TX, RX, Errors int // BPDUs sent, received whole, received bad
	changed        bool
}

// Bridge is one bridge's spanning tree (802.1D 8.5.3). It is not safe
// for concurrent use.
type Bridge struct {
	Name string
	// Send is called to transmit bpdu (from BPDU.Append) on port no. It
	// is called from Tick, Receive and the setters, and must not call
	// back into the Bridge.
	Send func(no int, bpdu []byte)

	id                                         ID
	maxAge, helloTime, forwardDelay            int // in use (the root's), ticks
	bridgeMaxAge, bridgeHello, bridgeFwdDelay  int // our own, ticks
	rqMaxAge, rqHello, rqFwdDelay, remainderMS int

	designatedRoot   ID
	rootPathCost     uint32
	rootPort         *Port
	tcDetected, tc   bool
	hello, tcn, tcTm timer

	ports    [MaxPorts]Port
	fdbFlush bool
	buf      []byte
}

// New returns the tree of a bridge with identifier id (a MAC address in
// the low 48 bits; a zero priority in the top 16 means the default) and
// no port enabled.
func New(name string, id ID, send func(no int, bpdu []byte)) *Bridge {
	b := &Bridge{Name: name, Send: send, id: id}
	if b.id>>48 == 0 {
		b.id |= DefaultBridgePriority << 48
	}
	b.rqMaxAge, b.rqHello, b.rqFwdDelay = DefaultMaxAgeMS, DefaultHelloTimeMS, DefaultForwardDelayMS
	b.updateBridgeTimers()
	b.maxAge, b.helloTime, b.forwardDelay = b.bridgeMaxAge, b.bridgeHello, b.bridgeFwdDelay
	b.designatedRoot = b.id
	b.hello.start(0)
	for i := range b.ports {
		p := &b.ports[i]
		p.br, p.no = b, i
		p.id = uint16(i+1) | DefaultPortPriority<<8
		p.pathCost = DefaultPathCost
		p.initialize(Disabled)
		p.changed = false
	}
	return b
}

func clamp(x, lo, hi int) int {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

// updateBridgeTimers derives our own timers from the requested ones
// under 802.1D's relations: 2*(forward delay - 1 s) >= max age >=
// 2*(hello + 1 s).
func (b *Bridge) updateBridgeTimers() {
	ht := clamp(b.rqHello, minHelloMS, maxHelloMS)
	ma := clamp(b.rqMaxAge, max(2*(ht+1000), 6000), 40000)
	fd := clamp(b.rqFwdDelay, ma/2+1000, 30000)
	b.bridgeHello, b.bridgeMaxAge, b.bridgeFwdDelay = msToTicks(ht), msToTicks(ma), msToTicks(fd)
	if b.IsRoot() {
		b.maxAge, b.helloTime, b.forwardDelay = b.bridgeMaxAge, b.bridgeHello, b.bridgeFwdDelay
	}
}

// SetTimes sets the requested hello time, max age and forward delay, in
// milliseconds; each is clamped as updateBridgeTimers says.
func (b *Bridge) SetTimes(helloMS, maxAgeMS, fwdDelayMS int) {
	b.rqHello, b.rqMaxAge, b.rqFwdDelay = helloMS, maxAgeMS, fwdDelayMS
	b.updateBridgeTimers()
}

// SetID changes the bridge identifier (8.8.4).
func (b *Bridge) SetID(id ID) {
	if id == b.id {
		return
	}
	wasRoot := b.IsRoot()
	for p := b.nextEnabled(0); p != nil; p = b.nextEnabled(p.no + 1) {
		if p.isDesignated() {
			p.designatedBridge = id
		}
	}
	b.id = id
	b.configurationUpdate()
	b.portStateSelection()
	if b.IsRoot() && !wasRoot {
		b.becomeRoot()
	}
}

// ID returns the bridge identifier.
func (b *Bridge) ID() ID { return b.id }

// DesignatedRoot is the bridge believed to be the root.
func (b *Bridge) DesignatedRoot() ID { return b.designatedRoot }

// RootPathCost is the cost of the path to the root.
func (b *Bridge) RootPathCost() uint32 { return b.rootPathCost }

// IsRoot reports whether this bridge believes it is the root.
func (b *Bridge) IsRoot() bool { return b.id == b.designatedRoot }

// RootPort is the port towards the root, nil at the root.
func (b *Bridge) RootPort() *Port { return b.rootPort }

// Port returns port index no (0 to MaxPorts-1; the port number is no+1).
func (b *Bridge) Port(no int) *Port { return &b.ports[no] }

// TakeFDBFlush reports whether the MAC table must be flushed (a topology
// change), and clears the request.
func (b *Bridge) TakeFDBFlush() bool {
	f := b.fdbFlush
	b.fdbFlush = false
	return f
}

// TakeChanged calls fn for every port whose state changed since the last
// call.
func (b *Bridge) TakeChanged(fn func(*Port)) {
	for i := range b.ports {
		if p := &b.ports[i]; p.changed {
			p.changed = false
			fn(p)
		}
	}
}

func (b *Bridge) nextEnabled(from int) *Port {
	for i := from; i < MaxPorts; i++ {
		if b.ports[i].state != Disabled {
			return &b.ports[i]
		}
	}
	return nil
}

// EnabledPorts calls fn for each port not Disabled, by port number.
func (b *Bridge) EnabledPorts(fn func(*Port)) {
	for p := b.nextEnabled(0); p != nil; p = b.nextEnabled(p.no + 1) {
		fn(p)
	}
}

// Tick advances the timers by ms milliseconds (8.7.3's once-a-tick
// procedure, for as many ticks as ms holds, the rest kept for next time).
func (b *Bridge) Tick(ms int) {
	ms = clamp(ms, 0, maxTimerMS) + b.remainderMS
	elapsed := msToTicks(ms)
	b.remainderMS = ms - ticksToMS(elapsed)
	if elapsed == 0 {
		return
	}
	if b.hello.expired(elapsed, b.helloTime) {
		b.configBPDUGeneration()
		b.hello.start(0)
	}
	if b.tcn.expired(elapsed, b.bridgeHello) {
		b.transmitTCN()
		b.tcn.start(0)
	}
	if b.tcTm.expired(elapsed, b.maxAge+b.forwardDelay) {
		b.tcDetected, b.tc = false, false
	}
	for p := b.nextEnabled(0); p != nil; p = b.nextEnabled(p.no + 1) {
		if p.messageAge.expired(elapsed, b.maxAge) {
			b.messageAgeExpiry(p)
		}
	}
	for p := b.nextEnabled(0); p != nil; p = b.nextEnabled(p.no + 1) {
		if p.forwardDelay.expired(elapsed, b.forwardDelay) {
			b.forwardDelayExpiry(p)
		}
		if p.hold.expired(elapsed, holdTimeTicks) && p.configPending {
			p.transmitConfig()
		}
	}
}

// Receive processes a BPDU (the bytes after the LLC header) received on
// p. A bad BPDU counts in p.Errors and is returned as the error.
func (b *Bridge) Receive(p *Port, bpdu []byte) error {
	if p.state == Disabled {
		return nil
	}
	m, err := Decode(bpdu)
	if err != nil {
		p.Errors++
		return err
	}
	switch m.Type {
	case TypeConfig:
		b.receivedConfig(p, &m)
	case TypeTCN:
		if p.isDesignated() {
			b.topologyChangeDetection()
			p.tcAck = true
			p.transmitConfig()
		}
	}
	p.RX++
	return nil
}

// TopologyChange starts a topology change (ovs-appctl stp/tcn).
func (b *Bridge) TopologyChange() { b.topologyChangeDetection() }

// Times in use, in ticks: the bridge's own (as root) and those learned
// from the root.
func (b *Bridge) BridgeTimes() (hello, maxAge, fwdDelay int) {
	return b.bridgeHello, b.bridgeMaxAge, b.bridgeFwdDelay
}
func (b *Bridge) Times() (hello, maxAge, fwdDelay int) { return b.helloTime, b.maxAge, b.forwardDelay }

// TicksToSeconds converts a time in ticks to whole seconds.
func TicksToSeconds(t int) int { return ticksToMS(t) / 1000 }

// --- ports ---

// No is the port's index (its port number minus one).
func (p *Port) No() int { return p.no }

// State is the port's state.
func (p *Port) State() State { return p.state }

// PortID is the port identifier: priority in the top 8 bits, number in
// the low 8.
func (p *Port) PortID() uint16 { return p.id }

// PathCost is the port's path cost.
func (p *Port) PathCost() uint32 { return p.pathCost }

// Role is the port's role.
func (p *Port) Role() Role {
	switch {
	case p.br.rootPort != nil && p.br.rootPort.id == p.id:
		return RoleRoot
	case p.isDesignated():
		return RoleDesignated
	case p.state == Disabled:
		return RoleDisabled
	}
	return RoleAlternate
}

// Enable enables a Disabled port (8.8.1); it starts Blocking.
func (p *Port) Enable() {
	if p.state == Disabled {
		p.initialize(Blocking)
		p.br.portStateSelection()
	}
}

// Disable takes the port out of the tree (8.8.2).
func (p *Port) Disable() {
	if p.state == Disabled {
		return
	}
	b := p.br
	wasRoot := b.IsRoot()
	p.becomeDesignated()
	p.setState(Disabled)
	p.tcAck, p.configPending = false, false
	p.messageAge.stop()
	p.forwardDelay.stop()
	b.configurationUpdate()
	b.portStateSelection()
	if b.IsRoot() && !wasRoot {
		b.becomeRoot()
	}
}

// SetPriority sets the port priority, the top 8 bits of its identifier
// (8.8.5).
func (p *Port) SetPriority(prio uint8) {
	id := p.id&0xff | uint16(prio)<<8
	if id == p.id {
		return
	}
	if p.isDesignated() {
		p.designatedPort = id
	}
	p.id = id
	if p.br.id == p.designatedBridge && p.id < p.designatedPort {
		p.becomeDesignated()
		p.br.portStateSelection()
	}
}

// SetPathCost sets the port's path cost (8.8.6).
func (p *Port) SetPathCost(c uint32) {
	if c == p.pathCost {
		return
	}
	p.pathCost = c
	p.br.configurationUpdate()
	p.br.portStateSelection()
}

func (p *Port) initialize(s State) {
	p.becomeDesignated()
	p.setState(s)
	p.tcAck, p.configPending = false, false
	p.changeDetection = true
	p.messageAge.stop()
	p.forwardDelay.stop()
	p.hold.stop()
	p.TX, p.RX, p.Errors = 0, 0, 0
}

func (p *Port) setState(s State) {
	if s != p.state {
		p.changed = true
	}
	p.state = s
}

func (p *Port) isDesignated() bool {
	return p.designatedBridge == p.br.id && p.designatedPort == p.id
}

func (p *Port) becomeDesignated() {
	b := p.br
	p.designatedRoot, p.designatedCost = b.designatedRoot, b.rootPathCost
	p.designatedBridge, p.designatedPort = b.id, p.id
}

// transmitConfig sends a Configuration BPDU on p, or marks one pending
// while the hold timer runs (8.6.1).
func (p *Port) transmitConfig() {
	b := p.br
	root := b.IsRoot()
	if !root && b.rootPort == nil {
		return
	}
	if p.hold.running {
		p.configPending = true
		return
	}
	m := BPDU{Type: TypeConfig, RootID: b.designatedRoot, RootPathCost: b.rootPathCost, BridgeID: b.id,
		PortID: p.id, MaxAge: uint16(b.maxAge), HelloTime: uint16(b.helloTime), ForwardDelay: uint16(b.forwardDelay)}
	if p.tcAck {
		m.Flags |= FlagTopologyChangeAck
	}
	if b.tc {
		m.Flags |= FlagTopologyChange
	}
	if !root {
		m.MessageAge = uint16(b.rootPort.messageAge.value + messageAgeIncrement)
	}
	if int(m.MessageAge) >= b.maxAge {
		return
	}
	p.tcAck, p.configPending = false, false
	b.send(p, &m)
	p.hold.start(0)
}

func (b *Bridge) send(p *Port, m *BPDU) {
	b.buf = m.Append(b.buf[:0])
	if b.Send != nil {
		b.Send(p.no, b.buf)
	}
	p.TX++
}

// supersedes reports whether m carries better information than p holds
// (8.6.2.2).
func (p *Port) supersedes(m *BPDU) bool {
	switch {
	case m.RootID != p.designatedRoot:
		return m.RootID < p.designatedRoot
	case m.RootPathCost != p.designatedCost:
		return m.RootPathCost < p.designatedCost
	case m.BridgeID != p.designatedBridge:
		return m.BridgeID < p.designatedBridge
	}
	return m.BridgeID != p.br.id || m.PortID <= p.designatedPort
}

func (b *Bridge) configBPDUGeneration() {
	for p := b.nextEnabled(0); p != nil; p = b.nextEnabled(p.no + 1) {
		if p.isDesignated() {
			p.transmitConfig()
		}
	}
}

func (b *Bridge) transmitTCN() {
	if b.rootPort == nil {
		return
	}
	b.send(b.rootPort, &BPDU{Type: TypeTCN})
}

func (b *Bridge) configurationUpdate() {
	b.rootSelection()
	b.designatedPortSelection()
}

// better reports whether q is a better root port than p (8.6.8.3).
func better(q, p *Port) bool {
	qc, pc := q.designatedCost+q.pathCost, p.designatedCost+p.pathCost
	switch {
	case q.designatedRoot != p.designatedRoot:
		return q.designatedRoot < p.designatedRoot
	case qc != pc:
		return qc < pc
	case q.designatedBridge != p.designatedBridge:
		return q.designatedBridge < p.designatedBridge
	case q.designatedPort != p.designatedPort:
		return q.designatedPort < p.designatedPort
	}
	return q.id < p.id
}

func (b *Bridge) rootSelection() {
	var root *Port
	for p := b.nextEnabled(0); p != nil; p = b.nextEnabled(p.no + 1) {
		if p.isDesignated() || p.designatedRoot >= b.id {
			continue
		}
		if root == nil || better(p, root) {
			root = p
		}
	}
	b.rootPort = root
	if root == nil {
		b.designatedRoot, b.rootPathCost = b.id, 0
	} else {
		b.designatedRoot, b.rootPathCost = root.designatedRoot, root.designatedCost+root.pathCost
	}
}

func (b *Bridge) designatedPortSelection() {
	for p := b.nextEnabled(0); p != nil; p = b.nextEnabled(p.no + 1) {
		if p.isDesignated() || p.designatedRoot != b.designatedRoot || b.rootPathCost < p.designatedCost ||
			b.rootPathCost == p.designatedCost && (b.id < p.designatedBridge ||
				b.id == p.designatedBridge && p.id <= p.designatedPort) {
			p.becomeDesignated()
		}
	}
}

func (b *Bridge) portStateSelection() {
	for p := b.nextEnabled(0); p != nil; p = b.nextEnabled(p.no + 1) {
		switch {
		case p == b.rootPort:
			p.configPending, p.tcAck = false, false
			p.makeForwarding()
		case p.isDesignated():
			p.messageAge.stop()
			p.makeForwarding()
		default:
			p.configPending, p.tcAck = false, false
			p.makeBlocking()
		}
	}
}

func (p *Port) makeForwarding() {
	if p.state == Blocking {
		p.setState(Listening)
		p.forwardDelay.start(0)
	}
}

func (p *Port) makeBlocking() {
	if p.state&(Disabled|Blocking) != 0 {
		return
	}
	if p.state&(Forwarding|Learning) != 0 && p.changeDetection {
		p.br.topologyChangeDetection()
	}
	p.setState(Blocking)
	p.forwardDelay.stop()
}

func (b *Bridge) topologyChangeDetection() {
	if b.IsRoot() {
		b.tc = true
		b.tcTm.start(0)
	} else if !b.tcDetected {
		b.transmitTCN()
		b.tcn.start(0)
	}
	b.fdbFlush = true
	b.tcDetected = true
}

func (b *Bridge) receivedConfig(p *Port, m *BPDU) {
	if m.MessageAge >= m.MaxAge {
		return // stale: 802.1D would have aged it out on the way
	}
	wasRoot := b.IsRoot()
	if !p.supersedes(m) {
		if p.isDesignated() {
			p.transmitConfig()
		}
		return
	}
	p.designatedRoot, p.designatedCost = m.RootID, m.RootPathCost
	p.designatedBridge, p.designatedPort = m.BridgeID, m.PortID
	p.messageAge.start(int(m.MessageAge))
	b.configurationUpdate()
	b.portStateSelection()
	if !b.IsRoot() && wasRoot {
		b.hello.stop()
		if b.tcDetected {
			b.tcTm.stop()
			b.transmitTCN()
			b.tcn.start(0)
		}
	}
	if p == b.rootPort {
		b.maxAge, b.helloTime, b.forwardDelay = int(m.MaxAge), int(m.HelloTime), int(m.ForwardDelay)
		b.tc = m.Flags&FlagTopologyChange != 0
		b.configBPDUGeneration()
		if m.Flags&FlagTopologyChangeAck != 0 {
			b.tcDetected = false
			b.tcn.stop()
		}
		if m.Flags&FlagTopologyChange != 0 {
			b.fdbFlush = true
		}
	}
}

func (b *Bridge) messageAgeExpiry(p *Port) {
	wasRoot := b.IsRoot()
	p.becomeDesignated()
	b.configurationUpdate()
	b.portStateSelection()
	if b.IsRoot() && !wasRoot {
		b.becomeRoot()
	}
}

func (b *Bridge) designatedForSomePort() bool {
	for p := b.nextEnabled(0); p != nil; p = b.nextEnabled(p.no + 1) {
		if p.designatedBridge == b.id {
			return true
		}
	}
	return false
}

func (b *Bridge) forwardDelayExpiry(p *Port) {
	switch p.state {
	case Listening:
		p.setState(Learning)
		p.forwardDelay.start(0)
	case Learning:
		p.setState(Forwarding)
		if b.designatedForSomePort() && p.changeDetection {
			b.topologyChangeDetection()
		}
	}
}

// becomeRoot is what a bridge does on finding itself the root: take its
// own timers, announce a topology change and send Configuration BPDUs.
func (b *Bridge) becomeRoot() {
	b.maxAge, b.helloTime, b.forwardDelay = b.bridgeMaxAge, b.bridgeHello, b.bridgeFwdDelay
	b.topologyChangeDetection()
	b.tcn.stop()
	b.configBPDUGeneration()
	b.hello.start(0)
}
