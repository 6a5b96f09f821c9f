package ofproto

import (
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// LACP (IEEE 802.1AX) for a bond, as ovs-vswitchd's lib/lacp.c runs it:
// each member keeps its partner's last information block and a status —
// current (heard from within 3 intervals), expired (one timeout missed:
// the partner is asked for fast PDUs) or defaulted (nothing heard: no
// partner). update_attached picks the lead member by priority and attaches
// the members whose partner is the lead's system and key; the bond is
// negotiated when some member is attached. A member may carry traffic
// when it is attached and its partner says it is in sync (or, with
// lacp-fallback-ab, when it is defaulted). PDUs go out every second (fast)
// or 30 s (slow), as the partner's timeout bit asks, and at once when the
// actor information changes in a way the partner must hear of.
//
// The machine itself does no I/O: ProcessPDU takes a received payload,
// Run advances the timers and returns the PDUs to send; the bond's runner
// (lacp_bond.go) feeds it and sends them through the datapath.

// LACPConfig is a bond's LACP settings (Port lacp and other_config).
type LACPConfig struct {
	Active      bool    // lacp=active; false is passive
	Fast        bool    // other_config:lacp-time=fast
	SysID       [6]byte // other_config:lacp-system-id, else the bridge's MAC; never zero
	SysPriority uint16  // other_config:lacp-system-priority, else 65534 for a bond
	FallbackAB  bool    // other_config:lacp-fallback-ab
}

// LACPMemberConfig is one member's LACP settings (Interface
// other_config). A zero PortID means the member's OpenFlow port number,
// a zero PortPriority 65535, a zero Key the key member's port id.
type LACPMemberConfig struct {
	PortID, PortPriority, Key uint16
}

// LACP timing, as OVS's.
const (
	lacpFastTx       = time.Second
	lacpSlowTx       = 30 * time.Second
	lacpRxMultiplier = 3
)

type lacpMemberStatus uint8

const (
	lacpCurrent lacpMemberStatus = iota
	lacpExpired
	lacpDefaulted
)

func (s lacpMemberStatus) String() string {
	switch s {
	case lacpCurrent:
		return "current"
	case lacpExpired:
		return "expired"
	}
	return "defaulted"
}

// LACPStatus is a bond's LACP status, as bond/show's lacp_status says it.
type LACPStatus uint8

const (
	LACPOff        LACPStatus = iota // no LACP
	LACPConfigured                   // LACP runs but nothing is negotiated
	LACPNegotiated                   // some member is attached
)

func (s LACPStatus) String() string {
	switch s {
	case LACPNegotiated:
		return "negotiated"
	case LACPConfigured:
		return "configured"
	}
	return "off"
}

// lacpMember is one member's state.
type lacpMember struct {
	name         string
	portID       uint16
	portPriority uint16
	key          uint16
	status       lacpMemberStatus
	attached     bool
	carrierUp    bool
	partner      lacpInfo
	nttActor     lacpInfo  // what the partner last said of us: a change of ours it lacks is sent at once
	txAt, rxAt   time.Time // next transmission; when the partner's information expires (zero: past)
	order        int       // registration order: the first registered is the key member

	rxPDUs, rxBad, rxMarker, txPDUs     uint32
	linkExpired, linkDefaulted, carrier uint32
}

// LACP is one bond's LACP machine. Its methods are safe for concurrent
// use (the upcall handlers call ProcessPDU, the bond's runner Run).
type LACP struct {
	mu         sync.Mutex
	name       string
	cfg        LACPConfig
	members    map[string]*lacpMember
	keyMember  *lacpMember
	negotiated bool
	update     bool // update_attached must run
	// published is the fingerprint Run last reported, so a change made
	// between Runs (a PDU that brings sync) is reported too.
	published string
	nextOrder int
	log       *slog.Logger
}

// NewLACP returns the LACP machine of bond name with cfg. log, if set,
// gets OVS's lacp module messages.
func NewLACP(name string, cfg LACPConfig, log *slog.Logger) *LACP {
	return &LACP{name: name, cfg: cfg, members: map[string]*lacpMember{}, update: true, log: log}
}

// RegisterMember adds member name with its settings (portID already
// resolved, nonzero), or updates them; as lacp_member_register, a change
// of id, priority or key expires the partner when the bond is active or
// negotiated.
func (l *LACP) RegisterMember(name string, portID, portPriority, key uint16) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.members[name]
	if m == nil {
		m = &lacpMember{name: name, order: l.nextOrder}
		l.nextOrder++
		l.members[name] = m
		l.setDefaulted(m)
		if l.keyMember == nil {
			l.keyMember = m
		}
	}
	if m.portID != portID || m.portPriority != portPriority || m.key != key {
		m.portID, m.portPriority, m.key = portID, portPriority, key
		l.update = true
		if l.cfg.Active || l.negotiated {
			l.setExpired(m, time.Now())
		}
	}
}

// CarrierChanged tells the machine member's carrier is up or down, as
// lacp_member_carrier_changed.
func (l *LACP) CarrierChanged(name string, up bool, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.members[name]
	if m == nil {
		return
	}
	if m.status == lacpCurrent || l.cfg.Active {
		l.setExpired(m, now)
	}
	if m.carrierUp != up {
		m.carrierUp = up
		m.carrier++
	}
}

// setSysID changes the system id (the bridge's address changed), as
// lacp_configure: the attachments are recomputed.
func (l *LACP) setSysID(id [6]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id != ([6]byte{}) && id != l.cfg.SysID {
		l.cfg.SysID = id
		l.update = true
	}
}

// carrierFirst tells the machine member's carrier as first seen: up
// needs no expiry and is no change (lacp_member_may_enable marks the
// carrier up the same way).
func (l *LACP) carrierFirst(name string, up bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.members[name]; m != nil {
		m.carrierUp = up
	}
}

// carrierKnown reports member's carrier as the machine last heard it.
func (l *LACP) carrierKnown(name string) (up, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.members[name]; m != nil {
		return m.carrierUp, true
	}
	return false, false
}

// ProcessPDU takes the slow-protocols payload b received on member, as
// lacp_process_packet. It returns whether the member may now be enabled
// and whether the machine needs a Run (the partner's information
// changed).
func (l *LACP) ProcessPDU(name string, b []byte, now time.Time) (mayEnable, changed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.members[name]
	if m == nil {
		return false, false
	}
	m.rxPDUs++
	pdu, kind := parseLACPDU(b)
	switch kind {
	case lacpPDUMarker:
		m.rxMarker++
		return false, false
	case lacpPDUBad:
		m.rxBad++
		if l.log != nil {
			l.log.Warn(fmt.Sprintf("%s: received an unparsable LACP PDU.", l.name))
		}
		return false, false
	}
	if !m.carrierUp {
		if l.log != nil {
			l.log.Info(fmt.Sprintf("%s: carrier state is DOWN, dropping received LACP PDU.", m.name))
		}
		return false, true
	}
	m.status = lacpCurrent
	tx := lacpSlowTx
	if l.cfg.Fast {
		tx = lacpFastTx
	}
	m.rxAt = now.Add(lacpRxMultiplier * tx)
	m.nttActor = pdu.Partner
	if m.partner != pdu.Actor {
		l.update = true
		m.partner = pdu.Actor
		changed = true
	}
	return l.mayEnable(m), changed
}

// Status is the bond's LACP status.
func (l *LACP) Status() LACPStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.negotiated {
		return LACPNegotiated
	}
	return LACPConfigured
}

// MayEnable reports whether member may carry traffic, as
// lacp_member_may_enable (which is asked only while the carrier is up).
func (l *LACP) MayEnable(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.members[name]
	if m == nil {
		return false
	}
	return l.mayEnable(m)
}

func (l *LACP) mayEnable(m *lacpMember) bool {
	return m.attached && (m.partner.State&lacpStateSync != 0 || l.cfg.FallbackAB && m.status == lacpDefaulted)
}

// IsCurrent reports whether member has heard from a partner (Interface
// lacp_current); ok is false for no such member.
func (l *LACP) IsCurrent(name string) (current, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.members[name]; m != nil {
		return m.status != lacpDefaulted, true
	}
	return false, false
}

// lacpTx is a PDU Run wants sent on a member.
type lacpTx struct {
	Member string
	Actor  lacpInfo
	Partn  lacpInfo
}

// Run advances the machine to now, as lacp_run: partners time out, the
// attachments are recomputed when something changed, and the PDUs due
// are appended to tx. changed says a member's status, attachment or
// may-enable changed (the bond must choose again).
func (l *LACP) Run(now time.Time, tx []lacpTx) (_ []lacpTx, changed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.sorted() {
		if !now.Before(m.rxAt) {
			switch m.status {
			case lacpCurrent:
				l.setExpired(m, now)
				m.linkExpired++
			case lacpExpired:
				l.setDefaulted(m)
				m.linkDefaulted++
			}
		}
	}
	if l.update {
		l.updateAttached()
	}
	for _, m := range l.sorted() {
		if !l.mayTx(m) {
			continue
		}
		actor := l.actor(m)
		if !now.Before(m.txAt) || !infoTxEqual(&actor, &m.nttActor) {
			m.nttActor = actor
			tx = append(tx, lacpTx{Member: m.name, Actor: actor, Partn: m.partner})
			m.txPDUs++
			d := lacpSlowTx
			if m.partner.State&lacpStateTime != 0 {
				d = lacpFastTx
			}
			m.txAt = now.Add(d)
		}
	}
	fp := l.fingerprint()
	changed = fp != l.published
	l.published = fp
	return tx, changed
}

// NextWake is when Run must next be called (the earliest transmission or
// expiry), as lacp_wait.
func (l *LACP) NextWake() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var t time.Time
	min := func(u time.Time) {
		if t.IsZero() || u.Before(t) {
			t = u
		}
	}
	for _, m := range l.members {
		if l.mayTx(m) {
			min(m.txAt)
		}
		if m.status != lacpDefaulted {
			min(m.rxAt)
		}
	}
	return t
}

// fingerprint is what the bond's choice depends on, to tell a change.
func (l *LACP) fingerprint() string {
	s := fmt.Sprint(l.negotiated)
	for _, m := range l.sorted() {
		s += fmt.Sprintf(" %s:%d:%t:%t", m.name, m.status, m.attached, l.mayEnable(m))
	}
	return s
}

// sorted is the members by registration order (OVS walks a hash map; an
// order of our own keeps runs reproducible).
func (l *LACP) sorted() []*lacpMember {
	ms := make([]*lacpMember, 0, len(l.members))
	for _, m := range l.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].order < ms[j].order })
	return ms
}

// updateAttached is lacp_update_attached: choose the lead member and
// attach the members that share its partner's system and key.
func (l *LACP) updateAttached() {
	l.update = false
	var lead, leadCurrent *lacpMember
	var leadPri lacpInfo
	leadEnable := false
	for _, m := range l.sorted() {
		if m.status == lacpCurrent && m.attached {
			pri := l.priority(m)
			if leadCurrent == nil || pri.priorityLess(&leadPri) {
				leadCurrent, lead, leadPri, leadEnable = m, m, pri, true
			}
		}
	}
	for _, m := range l.sorted() {
		m.attached = false
		if m.partner.SysID == l.cfg.SysID {
			if l.log != nil {
				l.log.Warn(fmt.Sprintf("member %s: Loopback detected. Interface is connected to its own bond", m.name))
			}
			continue
		}
		if m.status == lacpDefaulted {
			if l.cfg.FallbackAB {
				m.attached = true
			}
			continue
		}
		pri := l.priority(m)
		enable := l.mayEnable(m)
		if leadCurrent == nil || m.partner.SysID == leadCurrent.partner.SysID {
			m.attached = true
		}
		if m.attached && (lead == nil || enable && !leadEnable || enable == leadEnable && pri.priorityLess(&leadPri)) {
			lead, leadEnable, leadPri = m, enable, pri
		}
	}
	l.negotiated = lead != nil
	if lead != nil {
		for _, m := range l.members {
			if l.cfg.FallbackAB && m.status == lacpDefaulted || lead.partner.Key != m.partner.Key || lead.partner.SysID != m.partner.SysID {
				m.attached = false
			}
		}
	}
}

func (l *LACP) setDefaulted(m *lacpMember) {
	m.partner = lacpInfo{}
	l.update = true
	m.status = lacpDefaulted
}

func (l *LACP) setExpired(m *lacpMember, now time.Time) {
	m.status = lacpExpired
	m.partner.State |= lacpStateTime
	m.partner.State &^= lacpStateSync
	m.rxAt = now.Add(lacpRxMultiplier * lacpFastTx)
}

// aggKey is the aggregation key: the key member's key, or its port id.
func (l *LACP) aggKey() uint16 {
	if l.keyMember == nil {
		return 0
	}
	if l.keyMember.key != 0 {
		return l.keyMember.key
	}
	return l.keyMember.portID
}

// actor is member_get_actor: what we say of ourselves on m.
func (l *LACP) actor(m *lacpMember) lacpInfo {
	var st uint8
	if l.cfg.Active {
		st |= lacpStateAct
	}
	if l.cfg.Fast {
		st |= lacpStateTime
	}
	if m.attached {
		st |= lacpStateSync
	}
	switch m.status {
	case lacpDefaulted:
		st |= lacpStateDef
	case lacpExpired:
		st |= lacpStateExp
	}
	if len(l.members) > 1 {
		st |= lacpStateAgg
	}
	if m.attached || !l.negotiated {
		st |= lacpStateCol | lacpStateDist
	}
	return lacpInfo{SysPriority: l.cfg.SysPriority, SysID: l.cfg.SysID, Key: l.aggKey(),
		PortPriority: m.portPriority, PortID: m.portID, State: st}
}

// priority is member_get_priority: the information block of the higher
// priority system of the link, without key and state.
func (l *LACP) priority(m *lacpMember) lacpInfo {
	var p lacpInfo
	switch ap, pp := l.cfg.SysPriority, m.partner.SysPriority; {
	case ap < pp:
		p = l.actor(m)
	case pp < ap:
		p = m.partner
	case macLess(l.cfg.SysID, m.partner.SysID):
		p = l.actor(m)
	default:
		p = m.partner
	}
	p.Key, p.State = 0, 0
	return p
}

func macLess(a, b [6]byte) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func (l *LACP) mayTx(m *lacpMember) bool {
	return m.carrierUp && (l.cfg.Active || m.status != lacpDefaulted)
}

// infoTxEqual is info_tx_equal: a and b differ in nothing that needs a
// transmission.
func infoTxEqual(a, b *lacpInfo) bool {
	const bits = lacpStateAct | lacpStateTime | lacpStateSync | lacpStateAgg
	return (a.State^b.State)&bits == 0 && a.PortID == b.PortID && a.PortPriority == b.PortPriority &&
		a.Key == b.Key && a.SysPriority == b.SysPriority && a.SysID == b.SysID
}

// LACPInfo is an information block as lacp/show prints it.
type LACPInfo struct {
	SysID               [6]byte
	SysPriority, PortID uint16
	PortPriority, Key   uint16
	State               uint8
}

func exportInfo(i lacpInfo) LACPInfo {
	return LACPInfo{SysID: i.SysID, SysPriority: i.SysPriority, PortID: i.PortID, PortPriority: i.PortPriority, Key: i.Key, State: i.State}
}

// LACPMemberShow is one member in lacp/show and lacp/show-stats.
type LACPMemberShow struct {
	Name                 string
	Status               string // current, expired, defaulted
	Attached             bool
	PortID, PortPriority uint16
	MayEnable            bool
	Actor, Partner       LACPInfo

	TxPDUs, RxPDUs, RxBad, RxMarker uint32
	LinkExpired, LinkDefaulted      uint32
	CarrierChanged                  uint32
}

// LACPShow is a bond's LACP machine as lacp/show prints it.
type LACPShow struct {
	Name        string
	Active      bool
	Negotiated  bool
	SysID       [6]byte
	SysPriority uint16
	// Key is the aggregation key; HasKey is false with no members.
	Key     uint16
	HasKey  bool
	Fast    bool
	Members []LACPMemberShow // by name
}

// Show returns the machine's state for lacp/show.
func (l *LACP) Show() LACPShow {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := LACPShow{Name: l.name, Active: l.cfg.Active, Negotiated: l.negotiated, SysID: l.cfg.SysID,
		SysPriority: l.cfg.SysPriority, Key: l.aggKey(), HasKey: l.keyMember != nil, Fast: l.cfg.Fast}
	for _, m := range l.members {
		s.Members = append(s.Members, LACPMemberShow{Name: m.name, Status: m.status.String(), Attached: m.attached,
			PortID: m.portID, PortPriority: m.portPriority, MayEnable: l.mayEnable(m),
			Actor: exportInfo(l.actor(m)), Partner: exportInfo(m.partner),
			TxPDUs: m.txPDUs, RxPDUs: m.rxPDUs, RxBad: m.rxBad, RxMarker: m.rxMarker,
			LinkExpired: m.linkExpired, LinkDefaulted: m.linkDefaulted, CarrierChanged: m.carrier})
	}
	sort.Slice(s.Members, func(i, j int) bool { return s.Members[i].Name < s.Members[j].Name })
	return s
}
