package rstp

// The protocol's machines (802.1D-2004 17.21-17.29), folded into event
// handlers: role selection (PRS) runs whenever a port's information or
// the bridge's changed; each port's role transitions (PRT), state
// transitions (PST), topology change (TCM) and transmission (PTX) follow
// at once. What the folding leaves out is said where it is.

// update runs role selection while one is asked for, then each port's
// transitions, then transmits what has become due.
func (b *Bridge) update() {
	for i := 0; b.reselect && i < 4; i++ {
		b.reselect = false
		b.selectRoles()
	}
	for _, p := range b.ports {
		p.transitions()
	}
	for _, p := range b.ports {
		p.transmit()
	}
}

// selectRoles is 17.21.25's updtRolesTree: the root port is the one
// whose root path priority vector is best and better than the bridge's
// own; every other port is Designated when the bridge's designated
// vector for it beats what it received, else Alternate (Backup when
// the better information is the bridge's own, from another port).
func (b *Bridge) selectRoles() {
	best := vector{root: b.id, bridge: b.id}
	var bestPort *Port
	for _, p := range b.ports {
		if !p.operational || p.info != infoReceived || p.prio.bridge.Address() == b.id.Address() {
			continue
		}
		c := vector{p.prio.root, p.prio.cost + p.pathCost, p.prio.bridge, p.prio.port}
		if c.cost < p.prio.cost {
			c.cost = ^uint32(0)
		}
		if c.less(best) || bestPort != nil && c == best && p.id < bestPort.id {
			best, bestPort = c, p
		}
	}
	oldRoot := b.rootPort
	if b.shiftFrom == nil && oldRoot != nil && bestPort != nil && bestPort != oldRoot && bestPort.role == RoleAlternate {
		// An alternate takes the old root port's place: the addresses
		// behind the one are behind the other now.
		b.shiftFrom, b.shiftTo = oldRoot, bestPort
	}
	b.root, b.rootPort = best, bestPort
	if bestPort == nil {
		b.rootTm = times{maxAge: b.maxAge, hello: HelloTime * 1000, fwdDelay: b.fwdDelay}
	} else {
		b.rootTm = bestPort.tm
		b.rootTm.messageAge += 1000
	}
	for _, p := range b.ports {
		desig := vector{best.root, best.cost, b.id, p.id}
		var role Role
		switch {
		case !p.operational:
			role = RoleDisabled
		case p == bestPort:
			role = RoleRoot
		case p.info == infoReceived && !desig.less(p.prio):
			role = RoleAlternate
			if p.prio.bridge.Address() == b.id.Address() {
				role = RoleBackup
			}
		default:
			role = RoleDesignated
			p.updtInfo(desig, b.rootTm)
		}
		if role != p.role {
			p.setRole(role)
		}
	}
	if oldRoot != bestPort {
		b.syncTree(nil) // a new root: no designated port may forward on old information
	}
}

// updtInfo makes the port's information the bridge's own (17.21.26).
// An agreement holds only while the information is no worse.
func (p *Port) updtInfo(desig vector, tm times) {
	if p.info == infoMine && p.prio == desig && p.tm == tm {
		return
	}
	if !(p.info == infoMine && !p.prio.less(desig)) {
		p.agreed = false
	}
	p.prio, p.tm, p.info = desig, tm, infoMine
	p.newInfo = true
}

// setRole is what the role transitions do on entering a role: a port
// that was not Designated becomes so discarding (a former root port
// must not forward on what it knew as one), and Alternate, Backup and
// Disabled ports discard at once and stop signalling topology changes.
func (p *Port) setRole(r Role) {
	p.role = r
	p.proposing = false
	p.fdWhile = p.fwdDelay()
	switch r {
	case RoleDesignated:
		p.agree, p.agreed = false, false
		p.helloWhen = 0
		if !p.operEdge {
			p.setState(Discarding)
		}
	case RoleRoot:
		p.agreed = false
	default:
		p.agreed = false
		p.tcWhile = 0
		p.setState(Discarding)
		if r == RoleDisabled {
			p.agree, p.proposed = false, false
		}
	}
	p.newInfo = r != RoleDisabled
}

// syncTree puts every designated port that could forward on information
// the bridge is about to replace (neither an edge nor agreed to) back to
// discarding; each proposes again (17.29.3's sync).
func (b *Bridge) syncTree(except *Port) {
	for _, q := range b.ports {
		if q != except && q.role == RoleDesignated && !q.operEdge && !q.agreed && q.state != Discarding {
			q.setState(Discarding)
			q.fdWhile = q.fwdDelay()
			q.proposing = false
		}
	}
}

// transitions are a port's role and state transitions after selection.
// The root port forwards at once (the rapid transition of 17.29.2, the
// old root port having been made to discard); a designated port forwards
// at once when it is an edge or its proposal was agreed to, else after
// two forward delays (learning, then forwarding); the rest discard. A
// root or alternate port answers a proposal with an agreement, the root
// port after syncing the designated ports.
func (p *Port) transitions() {
	switch p.role {
	case RoleDisabled:
		p.setState(Discarding)
	case RoleAlternate, RoleBackup:
		p.setState(Discarding)
		if p.proposed {
			p.proposed, p.agree, p.newInfo = false, true, true
		}
	case RoleRoot:
		if p.proposed {
			if !p.agree {
				p.br.syncTree(p)
			}
			p.proposed, p.agree, p.newInfo = false, true, true
		}
		p.setState(Forwarding)
	case RoleDesignated:
		switch {
		case p.operEdge || p.agreed:
			p.proposing = false
			p.setState(Forwarding)
		case p.state == Discarding && p.fdWhile == 0:
			p.setState(Learning)
			p.fdWhile = p.fwdDelay()
		case p.state == Learning && p.fdWhile == 0:
			p.setState(Forwarding)
		}
		if p.state != Forwarding && !p.proposing && !p.operEdge {
			p.proposing, p.newInfo = true, true
			p.edgeWhile = MigrateTime * 1000
		}
	}
	p.detectTC()
}

// detectTC is the topology change machine's way in and out of ACTIVE
// (17.29.6) after a port's transitions: one that leaves the root or
// designated role or turns out an edge goes back to LEARNING; a
// forwarding port that stops being an edge has changed the topology
// (DETECTED). setState detects the rest, as the port starts forwarding.
func (p *Port) detectTC() {
	switch {
	case !p.isDesignatedOrRoot() || p.operEdge:
		p.tcActive = false
	case !p.tcActive && p.state == Forwarding:
		p.tcActive = true
		p.br.topologyChange(p, true, true)
	}
}

// topologyChange is the topology change machine (17.29.6) for a port
// that started forwarding (detected) or received a TC: every other
// non-edge root or designated port, and a detecting port itself, sends
// TC for the next hello time plus a second. Where flush, the change
// propagates as setTcPropTree and PROPAGATING (17.21.18) do in
// ovs-vswitchd: every other active port flushes what it learned; the
// rest (edges, ports that have not forwarded in their role since they
// took it) keep theirs, and so does from.
func (b *Bridge) topologyChange(from *Port, detected, flush bool) {
	if detected {
		from.newTcWhile()
	}
	for _, q := range b.ports {
		if q != from && q.operational && q.isDesignatedOrRoot() && !q.operEdge {
			q.newTcWhile()
			if flush && q.tcActive {
				q.fdbFlush = true
			}
		}
	}
}

// newTcWhile starts signalling TC (17.21.7): for a hello time plus a
// second, at once, in RST BPDUs; in Configuration BPDUs to an 802.1D-1998
// bridge, for the bridge's max age plus forward delay, from the next
// hello on.
func (p *Port) newTcWhile() {
	switch {
	case p.tcWhile != 0:
	case p.sendSTP:
		p.tcWhile = p.br.maxAge + p.br.fwdDelay
	default:
		p.tcWhile = HelloTime*1000 + 1000
		p.newInfo = true
	}
}

// migState is a state of the port protocol migration machine (17.24).
type migState uint8

const (
	migCheckingRSTP migState = iota
	migSelectingSTP
	migSensing
)

// checkRSTP is CHECKING_RSTP, where a port starts (and starts again when
// its link comes or goes): it sends RST BPDUs for at least the migrate
// time, whatever it receives meanwhile.
func (p *Port) checkRSTP() {
	p.mig, p.sendSTP, p.mdelayWhile = migCheckingRSTP, false, MigrateTime*1000
}

// migrate runs the port protocol migration machine after a BPDU or its
// timer: once its migrate time is over, a port that receives an
// 802.1D-1998 BPDU while sending RST BPDUs falls back to Configuration
// BPDUs and TCNs (SELECTING_STP), for at least the migrate time; one
// that receives an RST BPDU while sending the old ones checks RSTP
// again.
func (p *Port) migrate() {
	for {
		switch p.mig {
		case migCheckingRSTP, migSelectingSTP:
			if p.mdelayWhile != 0 {
				return
			}
			p.mig, p.rcvdSTP, p.rcvdRSTP = migSensing, false, false
		case migSensing:
			switch {
			case p.sendSTP && p.rcvdRSTP:
				p.checkRSTP()
			case !p.sendSTP && p.rcvdSTP:
				p.mig, p.sendSTP, p.mdelayWhile = migSelectingSTP, true, MigrateTime*1000
				p.operEdge = false
			}
			return
		}
	}
}

// MCheck makes the port try RSTP again (17.19.13 mcheck): it sends RST
// BPDUs for the migrate time, and stays with them unless an 802.1D-1998
// bridge is still there to be heard after it. A port whose link is down
// starts so anyway when it comes up.
func (p *Port) MCheck() {
	if p.operational {
		p.checkRSTP()
	}
}

// SendsSTP reports whether the port talks 802.1D-1998 to its link (the
// port protocol migration machine fell back to it).
func (p *Port) SendsSTP() bool { return p.sendSTP }

// expire advances a running timer (non-zero, in ms) by ms and reports
// whether it ran out.
func expire(t *int, ms int) bool {
	if *t == 0 {
		return false
	}
	*t -= ms
	if *t <= 0 {
		*t = 0
		return true
	}
	return false
}

// Tick advances the timers by ms milliseconds.
func (b *Bridge) Tick(ms int) {
	if ms <= 0 {
		return
	}
	ms = min(ms, 3600_000)
	b.txSecMS += ms
	for ; b.txSecMS >= 1000; b.txSecMS -= 1000 {
		for _, p := range b.ports {
			if p.txCount > 0 {
				p.txCount--
			}
		}
	}
	for _, p := range b.ports {
		if !p.operational {
			continue
		}
		p.UptimeMS += ms
		if expire(&p.rcvdWhile, ms) && p.info == infoReceived {
			p.info = infoAged // the designated bridge went quiet (17.27 AGED)
			b.reselect = true
		}
		expire(&p.fdWhile, ms)
		if expire(&p.mdelayWhile, ms) {
			p.migrate()
		}
		if expire(&p.edgeWhile, ms) && p.autoEdge && !p.sendSTP && p.proposing && p.role == RoleDesignated {
			p.operEdge = true // nothing answered: no bridge on the link (17.25)
		}
		expire(&p.tcWhile, ms)
		if p.role == RoleDesignated {
			if p.helloWhen -= ms; p.helloWhen <= 0 {
				p.newInfo = true
			}
		}
	}
	b.update()
}

// Receive processes a BPDU (the bytes after the LLC header) received on
// p. A bad BPDU counts in p.Errors and is returned as the error.
//
// An 802.1D-1998 Configuration BPDU is taken as a designated port's
// information without proposal or agreement, and a TCN as a topology
// change; the port goes on sending RST BPDUs (no protocol migration,
// 17.24, to the old protocol's BPDUs).
func (b *Bridge) Receive(p *Port, bpdu []byte) error {
	if !p.operational || p.state == Disabled {
		return nil
	}
	m, err := Decode(bpdu)
	if err != nil {
		p.Errors++
		return err
	}
	p.RX++
	p.operEdge = false
	if p.proposing {
		p.edgeWhile = MigrateTime * 1000
	}
	tc := m.Flags&FlagTC != 0
	if m.Type == TypeRST {
		p.rcvdSTP, p.rcvdRSTP = false, true
	} else {
		p.rcvdSTP, p.rcvdRSTP = true, false
	}
	p.migrate()
	switch m.Type {
	case TypeTCN:
		tc = true
	case TypeConfig:
		m.Flags |= wireRoleDesig << flagRoleShift
		b.receiveInfo(p, &m)
	default:
		b.receiveInfo(p, &m)
	}
	b.update()
	// Only a TC that reaches an active port (NOTIFIED_TC) flushes;
	// elsewhere the topology change machine drops it (LEARNING).
	if tc && p.isDesignatedOrRoot() {
		active := p.tcActive && !p.operEdge
		if active && m.Type == TypeTCN {
			p.newTcWhile() // NOTIFIED_TCN
		}
		if active && p.role == RoleDesignated {
			p.tcAck = true // owed to an 802.1D-1998 bridge's TCN or TC
		}
		b.topologyChange(p, false, active)
		b.update()
	}
	return nil
}

// receiveInfo is the port information machine's receipt (17.27, 17.21.8
// rcvInfo): superior designated information replaces the port's, a
// repeat refreshes it, inferior information from a designated port is
// answered with the bridge's own (and disputed when that port learns),
// and a root or alternate port's BPDU carries its agreement.
func (b *Bridge) receiveInfo(p *Port, m *BPDU) {
	msg := vector{m.RootID, m.RootPathCost, m.BridgeID, m.PortID}
	if int(m.MessageAge)+256 > int(m.MaxAge) {
		// Aged out on the way (17.21.23: no time left to live). What
		// this sender told before goes too, at once: information
		// circling after the root went away dies here, at max age.
		if p.info == infoReceived && msg.bridge.Address() == p.prio.bridge.Address() && msg.port&0xfff == p.prio.port&0xfff {
			p.info = infoAged
			b.reselect = true
		}
		return
	}
	mt := times{ticksToMS(m.MessageAge), ticksToMS(m.MaxAge), ticksToMS(m.HelloTime), ticksToMS(m.ForwardDelay)}
	switch m.Role() {
	case wireRoleDesig:
		sameSender := msg.bridge.Address() == p.prio.bridge.Address() && msg.port&0xfff == p.prio.port&0xfff
		switch {
		case p.info == infoReceived && msg == p.prio && mt == p.tm:
			p.recordProposal(m)
			p.rcvdWhile = rcvdInfoWhile(mt)
		case msg.less(p.prio) || sameSender || msg == p.prio:
			if m.Flags&FlagLearning != 0 {
				// checkBPDUConsistency (802.1Q-2008, as ovs-vswitchd):
				// better information from a port that already learns
				// voids what the other ports were agreed to.
				for _, q := range b.ports {
					if q != p {
						q.agreed = false
					}
				}
			}
			p.agreed, p.proposing = false, false
			if !(p.info == infoReceived && !p.prio.less(msg)) {
				p.agree = false
			}
			p.prio, p.tm, p.info = msg, mt, infoReceived
			p.recordProposal(m)
			p.rcvdWhile = rcvdInfoWhile(mt)
			b.reselect = true
		default:
			if p.role == RoleDesignated {
				p.newInfo = true // tell the other bridge what is better
				if m.Flags&FlagLearning != 0 {
					// Disputed (802.1Q-2008, as ovs-vswitchd): the other
					// end learns or forwards on worse information, so
					// it has not heard ours; what it agreed to is void.
					p.agreed = false
					if !p.operEdge && p.state != Discarding {
						p.setState(Discarding)
						p.fdWhile, p.proposing = p.fwdDelay(), false
					}
				}
			}
		}
	case wireRoleRoot, wireRoleAltBack:
		if p.role == RoleDesignated && !msg.less(p.prio) {
			p.agreed = m.Flags&FlagAgreement != 0
			if p.agreed {
				p.proposing = false
			}
		}
	}
}

func (p *Port) recordProposal(m *BPDU) {
	if m.Flags&FlagProposal != 0 {
		p.proposed = true
	}
}

// rcvdInfoWhile is how long received information lives: three of its
// hello times (17.21.23).
func rcvdInfoWhile(t times) int {
	return 3 * min(max(t.hello, 1000), 10000)
}

// transmit sends the port's BPDU when there is news (17.26), at most
// TransmitHoldCount a second; what is held back goes at the next tick.
func (p *Port) transmit() {
	b := p.br
	if !p.newInfo || !p.operational || p.role == RoleDisabled || p.txCount >= TransmitHoldCount {
		return
	}
	p.newInfo = false
	if p.role == RoleDesignated {
		p.helloWhen = HelloTime * 1000
	}
	if b.rootTm.messageAge > b.rootTm.maxAge {
		return // the root's information is too old to pass on
	}
	m := BPDU{Version: VersionRSTP, Type: TypeRST, Flags: p.role.wire() << flagRoleShift, RootID: b.root.root,
		RootPathCost: b.root.cost, BridgeID: b.id, PortID: p.id, MessageAge: msToTicks(b.rootTm.messageAge),
		MaxAge: msToTicks(b.rootTm.maxAge), HelloTime: msToTicks(HelloTime * 1000),
		ForwardDelay: msToTicks(b.rootTm.fwdDelay)}
	if p.role == RoleDesignated && p.proposing {
		m.Flags |= FlagProposal
	}
	if p.role != RoleDesignated && p.agree {
		m.Flags |= FlagAgreement
	}
	if p.state.Learns() {
		m.Flags |= FlagLearning
	}
	if p.state.Forwards() {
		m.Flags |= FlagForwarding
	}
	if p.tcWhile != 0 {
		m.Flags |= FlagTC
	}
	if p.sendSTP {
		// To an 802.1D-1998 bridge (17.21.19-21): a designated port
		// sends Configuration BPDUs, with TC and TCA only; the root
		// port a TCN; the others nothing. As ovs-vswitchd, both are the
		// RST BPDU's 36 bytes long, the rest zero (which an 802.1D
		// bridge that wants a 4-byte TCN, ovs-vswitchd's among them,
		// counts as a bad BPDU).
		switch p.role {
		case RoleDesignated:
			m.Version, m.Type, m.Flags = VersionSTP, TypeConfig, m.Flags&FlagTC
			if p.tcAck {
				m.Flags |= FlagTCA
			}
			p.tcAck = false
			b.buf = append(m.Append(b.buf[:0]), 0)
		case RoleRoot:
			b.buf = append(b.buf[:0], make([]byte, RSTLen)...)
			b.buf[3] = TypeTCN
		default:
			return
		}
		p.txCount++
		p.TX++
		if b.Send != nil {
			b.Send(p, b.buf)
		}
		return
	}
	p.tcAck = false
	p.txCount++
	p.TX++
	b.buf = m.Append(b.buf[:0])
	if b.Send != nil {
		b.Send(p, b.buf)
	}
}
