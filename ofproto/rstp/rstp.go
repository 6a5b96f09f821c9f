package rstp

import "sort"

// State is a port's state (802.1D-2004 17.4, 17.29.3). Disabled is, as in
// ovs-vswitchd, a port that takes no part in the tree at all: a port of
// the tree whose link is down is Discarding, with role Disabled.
type State uint8

const (
	Disabled State = iota
	Learning
	Forwarding
	Discarding
)

func (s State) String() string {
	switch s {
	case Disabled:
		return "Disabled"
	case Learning:
		return "Learning"
	case Forwarding:
		return "Forwarding"
	case Discarding:
		return "Discarding"
	}
	return "Unknown"
}

// Forwards reports whether frames received in state s are relayed.
func (s State) Forwards() bool { return s == Forwarding }

// Learns reports whether source addresses are learned in state s.
func (s State) Learns() bool { return s == Learning || s == Forwarding }

// ManagesBPDU reports whether BPDUs are received and sent in state s.
func (s State) ManagesBPDU() bool { return s != Disabled }

// Role is a port's role (17.7).
type Role uint8

const (
	RoleRoot Role = iota
	RoleDesignated
	RoleAlternate
	RoleBackup
	RoleDisabled
)

func (r Role) String() string {
	switch r {
	case RoleRoot:
		return "Root"
	case RoleDesignated:
		return "Designated"
	case RoleAlternate:
		return "Alternate"
	case RoleBackup:
		return "Backup"
	case RoleDisabled:
		return "Disabled"
	}
	return "Unknown"
}

// wire is the role's encoding in a BPDU's flags.
func (r Role) wire() uint8 {
	switch r {
	case RoleRoot:
		return wireRoleRoot
	case RoleDesignated:
		return wireRoleDesig
	case RoleAlternate, RoleBackup:
		return wireRoleAltBack
	}
	return wireRoleUnknown
}

// Defaults and limits, as ovs-vswitchd's (lib/rstp.h, 802.1D-2004 table
// 17-1). Times are in seconds.
const (
	MaxPorts            = 4095
	DefaultPriority     = 32768
	PriorityStep        = 4096
	MaxPriority         = 61440
	DefaultPortPriority = 128
	PortPriorityStep    = 16
	MaxPortPriority     = 240
	DefaultPathCost     = 2000 // 10 Gb/s
	MaxPathCost         = 200000000
	HelloTime           = 2
	DefaultMaxAge       = 20
	MinMaxAge           = 6
	MaxMaxAge           = 40
	DefaultForwardDelay = 15
	MinForwardDelay     = 4
	MaxForwardDelay     = 30
	TransmitHoldCount   = 6
	MigrateTime         = 3
)

// PathCostForSpeed is the recommended path cost of a link of mbps Mb/s
// (802.1D-2004 table 17-3), DefaultPathCost when the speed is unknown.
func PathCostForSpeed(mbps uint64) uint32 {
	switch {
	case mbps >= 10000000:
		return 2
	case mbps >= 1000000:
		return 20
	case mbps >= 100000:
		return 200
	case mbps >= 10000:
		return 2000
	case mbps >= 1000:
		return 20000
	case mbps >= 100:
		return 200000
	case mbps >= 10:
		return 2000000
	case mbps >= 1:
		return 20000000
	}
	return DefaultPathCost
}

// vector is a priority vector's first four components (17.5): the root
// bridge, the cost to it, the designated bridge and the designated port.
type vector struct {
	root   ID
	cost   uint32
	bridge ID
	port   uint16
}

func (a vector) less(b vector) bool {
	switch {
	case a.root != b.root:
		return a.root < b.root
	case a.cost != b.cost:
		return a.cost < b.cost
	case a.bridge != b.bridge:
		return a.bridge < b.bridge
	}
	return a.port < b.port
}

// times are a priority vector's timer values (17.19.21), in ms.
type times struct {
	messageAge, maxAge, hello, fwdDelay int
}

func ticksToMS(t uint16) int { return int(t) * 1000 / 256 }
func msToTicks(ms int) uint16 {
	if ms < 0 {
		return 0
	}
	return uint16(min(ms*256/1000, 0xffff))
}

// infoIs says where a port's priority vector came from (17.19.10).
type infoIs uint8

const (
	infoDisabled infoIs = iota
	infoMine
	infoAged
	infoReceived
)

// Port is one port of a Bridge.
type Port struct {
	br   *Bridge
	Name string
	// Aux is the caller's, for Send and TakeChanged.
	Aux any

	num, priority uint16
	id            uint16
	pathCost      uint32

	operational, adminEdge, autoEdge bool
	operEdge                         bool

	info      infoIs
	prio      vector
	tm        times
	role      Role
	state     State
	proposing bool
	proposed  bool
	agree     bool
	agreed    bool
	newInfo   bool
	// tcActive is the topology change machine in ACTIVE (17.29.6): a
	// non-edge root or designated port that has forwarded since it
	// took that role, so a topology change elsewhere flushes what it
	// learned and is signalled on it.
	tcActive bool
	// fdbFlush asks for the addresses learned on the port to go.
	fdbFlush bool
	// tcAck is a TC acknowledgement owed to an 802.1D-1998 bridge: the
	// next Configuration BPDU carries TCA.
	tcAck bool

	// The port protocol migration machine (17.24): sendSTP is the port
	// talking 802.1D-1998 to a bridge that sent only that (the zero
	// value: RST BPDUs); mig its state; rcvdSTP and rcvdRSTP what was
	// received since it started sensing.
	mig               migState
	sendSTP           bool
	rcvdSTP, rcvdRSTP bool
	mdelayWhile       int // ms

	rcvdWhile, fdWhile, edgeWhile, tcWhile, helloWhen int // ms; 0: not running
	txCount                                           int

	// TX, RX and Errors count BPDUs sent, received whole and received bad.
	TX, RX, Errors int
	// UptimeMS is how long the port has been operational.
	UptimeMS int
	changed  bool
}

// Bridge is one bridge's rapid spanning tree. It is not safe for
// concurrent use.
type Bridge struct {
	Name string
	// Send is called to transmit bpdu (from BPDU.Append) on p. It is
	// called from Tick, Receive and the setters, and must not call back
	// into the Bridge. bpdu is valid only during the call.
	Send func(p *Port, bpdu []byte)

	id               ID
	maxAge, fwdDelay int // our own, ms

	root     vector
	rootTm   times
	rootPort *Port
	ports    []*Port // by number

	reselect bool
	// shiftFrom and shiftTo are an old root port and the alternate that
	// took its place: what was learned on the first is now behind the
	// second (ovs-vswitchd's root_changed, old and new root aux).
	shiftFrom, shiftTo *Port
	txSecMS            int
	buf                []byte
}

// New returns the tree of a bridge whose identifier is priority
// DefaultPriority and address addr (the low 48 bits), with no ports.
func New(name string, addr uint64, send func(p *Port, bpdu []byte)) *Bridge {
	b := &Bridge{Name: name, Send: send, maxAge: DefaultMaxAge * 1000, fwdDelay: DefaultForwardDelay * 1000}
	b.id = ID(uint64(DefaultPriority)<<48 | addr&macBits)
	b.reselect = true
	b.update()
	return b
}

// SetAddress sets the address part of the bridge identifier.
func (b *Bridge) SetAddress(addr uint64) {
	id := b.id&^macBits | ID(addr&macBits)
	b.setID(id)
}

// SetPriority sets the priority part of the bridge identifier, rounded
// down to a multiple of 4096; out of 0 to 61440 it is ignored, as
// ovs-vswitchd ignores it.
func (b *Bridge) SetPriority(prio int) {
	prio -= prio % PriorityStep
	if prio < 0 || prio > MaxPriority {
		return
	}
	b.setID(b.id&macBits | ID(uint64(prio)<<48))
}

func (b *Bridge) setID(id ID) {
	if id == b.id {
		return
	}
	b.id = id
	b.reselect = true
	b.update()
}

// SetTimes sets the bridge's max age and forward delay, in seconds, in
// ovs-vswitchd's order and under its checks: a value out of range, or
// one breaking 2*(forward delay - 1) >= max age >= 2*hello, leaves the
// old one.
func (b *Bridge) SetTimes(maxAge, fwdDelay int) {
	ma, fd := b.maxAge/1000, b.fwdDelay/1000
	if maxAge >= MinMaxAge && maxAge <= MaxMaxAge && 2*(fd-1) >= maxAge && maxAge >= 2*HelloTime {
		ma = maxAge
	}
	if fwdDelay >= MinForwardDelay && fwdDelay <= MaxForwardDelay && 2*(fwdDelay-1) >= ma {
		fd = fwdDelay
	}
	if ma*1000 != b.maxAge || fd*1000 != b.fwdDelay {
		b.maxAge, b.fwdDelay = ma*1000, fd*1000
		b.reselect = true
		b.update()
	}
}

// ID is the bridge identifier.
func (b *Bridge) ID() ID { return b.id }

// IsRoot reports whether the bridge believes it is the root.
func (b *Bridge) IsRoot() bool { return b.rootPort == nil }

// RootID is the root bridge's identifier.
func (b *Bridge) RootID() ID { return b.root.root }

// RootPathCost is the cost of the path to the root.
func (b *Bridge) RootPathCost() uint32 { return b.root.cost }

// DesignatedID is the bridge the root port's information came from (our
// own identifier at the root).
func (b *Bridge) DesignatedID() ID { return b.root.bridge }

// DesignatedPortID is that bridge's port (0 at the root).
func (b *Bridge) DesignatedPortID() uint16 { return b.root.port }

// RootPort is the port towards the root, nil at the root.
func (b *Bridge) RootPort() *Port { return b.rootPort }

// BridgeTimes are the bridge's own hello time, max age and forward
// delay, in seconds.
func (b *Bridge) BridgeTimes() (hello, maxAge, fwdDelay int) {
	return HelloTime, b.maxAge / 1000, b.fwdDelay / 1000
}

// RootTimes are the times in use, in seconds, as the root port's
// designated times hold them (17.21.25): the root's max age and forward
// delay, and the bridge's own hello time (which is what ovs-vswitchd's
// rstp/show prints; an 802.1D-1998 root may have another).
func (b *Bridge) RootTimes() (hello, maxAge, fwdDelay int) {
	return HelloTime, b.rootTm.maxAge / 1000, b.rootTm.fwdDelay / 1000
}

// Ports calls fn for each port, by port number.
func (b *Bridge) Ports(fn func(*Port)) {
	for _, p := range b.ports {
		fn(p)
	}
}

// TakeFDBFlush calls fn for every port whose learned addresses must be
// flushed since the last call, and clears the requests: a port that
// stopped learning out of a root or designated role (17.29.6 INACTIVE),
// and every active port a topology change reaches (PROPAGATING), as
// ovs-vswitchd flushes each such port's entries and no others. The
// port where the change was detected or received keeps its own, and so
// do edge ports.
func (b *Bridge) TakeFDBFlush(fn func(*Port)) {
	for _, p := range b.ports {
		if p.fdbFlush {
			p.fdbFlush = false
			fn(p)
		}
	}
}

// RootShift returns the old root port and the alternate port that took
// its place when that happened since ClearRootShift (nil, nil when not):
// the addresses learned on from are to move to to, not be flushed, as
// ovs-vswitchd moves them.
func (b *Bridge) RootShift() (from, to *Port) { return b.shiftFrom, b.shiftTo }

// ClearRootShift forgets the root shift RootShift reported.
func (b *Bridge) ClearRootShift() { b.shiftFrom, b.shiftTo = nil, nil }

// TakeChanged calls fn for every port whose state changed since the last
// call.
func (b *Bridge) TakeChanged(fn func(*Port)) {
	for _, p := range b.ports {
		if p.changed {
			p.changed = false
			fn(p)
		}
	}
}

// AddPort adds a port numbered num (1 to MaxPorts), or the first free
// number when num is 0 or taken, as ovs-vswitchd does; nil when all are
// taken. The port starts not operational.
func (b *Bridge) AddPort(num int) *Port {
	if num < 1 || num > MaxPorts || b.portByNum(num) != nil {
		num = 0
		for n := 1; n <= MaxPorts; n++ {
			if b.portByNum(n) == nil {
				num = n
				break
			}
		}
		if num == 0 {
			return nil
		}
	}
	p := &Port{br: b, num: uint16(num), priority: DefaultPortPriority, pathCost: DefaultPathCost, autoEdge: true,
		role: RoleDisabled, state: Discarding, changed: true}
	p.id = p.num | p.priority<<8
	b.ports = append(b.ports, p)
	sort.Slice(b.ports, func(i, j int) bool { return b.ports[i].num < b.ports[j].num })
	b.reselect = true
	b.update()
	return p
}

func (b *Bridge) portByNum(n int) *Port {
	for _, p := range b.ports {
		if int(p.num) == n {
			return p
		}
	}
	return nil
}

// RemovePort takes p out of the tree; its state becomes Disabled.
func (b *Bridge) RemovePort(p *Port) {
	for i, q := range b.ports {
		if q == p {
			b.ports = append(b.ports[:i], b.ports[i+1:]...)
			p.state, p.role, p.operational, p.tcActive, p.fdbFlush = Disabled, RoleDisabled, false, false, false
			if b.rootPort == p {
				b.rootPort = nil
			}
			if b.shiftFrom == p || b.shiftTo == p {
				b.ClearRootShift()
			}
			b.reselect = true
			b.update()
			return
		}
	}
}

// --- ports ---

// Num is the port number.
func (p *Port) Num() int { return int(p.num) }

// PortID is the port identifier: the priority in the top 8 bits (a
// multiple of 16), the number in the low 12.
func (p *Port) PortID() uint16 { return p.id }

// Priority is the port priority.
func (p *Port) Priority() int { return int(p.priority) }

// PathCost is the port's path cost.
func (p *Port) PathCost() uint32 { return p.pathCost }

// Role is the port's role.
func (p *Port) Role() Role { return p.role }

// State is the port's state.
func (p *Port) State() State { return p.state }

// OperEdge reports whether the port is an edge port (no bridge behind it).
func (p *Port) OperEdge() bool { return p.operEdge }

// DesignatedBridge, DesignatedPort and DesignatedCost are the port's
// priority vector: the bridge and port designated for its link, and
// that bridge's cost to the root.
func (p *Port) DesignatedBridge() ID     { return p.prio.bridge }
func (p *Port) DesignatedPort() uint16   { return p.prio.port }
func (p *Port) DesignatedCost() uint32   { return p.prio.cost }
func (p *Port) DesignatedRootID() ID     { return p.prio.root }
func (p *Port) Operational() bool        { return p.operational }
func (p *Port) AdminEdge() bool          { return p.adminEdge }
func (p *Port) SetAdminEdge(edge bool)   { p.adminEdge = edge; p.resetEdge(); p.br.update() }
func (p *Port) SetAutoEdge(auto bool)    { p.autoEdge = auto }
func (p *Port) resetEdge()               { p.operEdge = p.adminEdge }
func (p *Port) fwdDelay() int            { return p.br.rootTm.fwdDelay }
func (p *Port) isDesignatedOrRoot() bool { return p.role == RoleDesignated || p.role == RoleRoot }

// SetPriority sets the port priority, rounded down to a multiple of 16;
// out of 0 to 240 it is ignored.
func (p *Port) SetPriority(prio int) {
	if prio < 0 || prio > MaxPortPriority {
		return
	}
	prio -= prio % PortPriorityStep
	if uint16(prio) == p.priority {
		return
	}
	p.priority = uint16(prio)
	p.id = p.num | p.priority<<8
	p.br.reselect = true
	p.br.update()
}

// SetPathCost sets the port's path cost; out of 1 to 200000000 it is
// ignored.
func (p *Port) SetPathCost(c uint32) {
	if c < 1 || c > MaxPathCost || c == p.pathCost {
		return
	}
	p.pathCost = c
	p.br.reselect = true
	p.br.update()
}

// SetOperational tells the tree whether the port's link is up.
func (p *Port) SetOperational(up bool) {
	if up == p.operational {
		return
	}
	p.operational = up
	p.info = infoDisabled
	p.proposing, p.proposed, p.agree, p.agreed = false, false, false, false
	p.rcvdWhile, p.fdWhile, p.edgeWhile, p.tcWhile = 0, 0, 0, 0
	p.resetEdge()
	p.tcActive, p.tcAck = false, false
	p.checkRSTP()
	p.UptimeMS = 0
	if up {
		p.info = infoAged
		p.TX, p.RX, p.Errors = 0, 0, 0
	}
	p.br.reselect = true
	p.br.update()
}

func (p *Port) setState(s State) {
	if s == p.state {
		return
	}
	if p.state.Learns() && !s.Learns() && !p.isDesignatedOrRoot() {
		p.fdbFlush = true // what it learned is stale (17.29.6 INACTIVE)
	}
	if s == Forwarding && !p.operEdge {
		// DETECTED the first time in the role; ACTIVE already, a
		// change to signal but not to flush for.
		p.br.topologyChange(p, true, !p.tcActive)
		p.tcActive = true
	}
	p.state = s
	p.changed = true
}
