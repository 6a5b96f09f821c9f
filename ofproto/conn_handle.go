package ofproto

import (
	"errors"
	"fmt"
	"time"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Switch description (OFPST_DESC), what ovs-ofctl dump-desc prints.
const (
	DescMfr    = "govswitch"
	DescHW     = "govswitchd"
	DescSW     = "govswitch 0.1"
	DescSerial = "None"
	DescDP     = "None"
)

// handle processes one message of the peer, in arrival order; it returns
// an error only when the connection must close.
func (c *Conn) handle(raw []byte) error {
	v := c.Version()
	h, err := openflow.ParseHeader(raw)
	if err != nil {
		return err
	}
	if h.Version != v && h.Type != openflow.TypeHello {
		return c.sendError(raw, openflow.ErrTypeBadRequest, openflow.BadRequestBadVersion)
	}
	msg, err := openflow.Decode(raw)
	if err != nil {
		var oe *openflow.Error
		if errors.As(err, &oe) {
			if oe.Version != v {
				if oe.Version >= openflow.Version13 && v >= openflow.Version12 {
					// 1.2 to 1.5 number these codes alike.
					e := *oe
					e.Version = v
					oe = &e
				} else {
					// The codec names codes in the message's version;
					// answer in the connection's.
					oe = &openflow.Error{Version: v, Type: openflow.ErrTypeBadRequest, Code: openflow.BadRequestBadVersion}
				}
			}
			return c.queueMsg(oe.Reply(raw))
		}
		return c.sendError(raw, openflow.ErrTypeBadRequest, openflow.BadRequestBadLen)
	}
	env := openflow.Envelope{Version: v, Xid: h.Xid}
	switch m := msg.(type) {
	case *openflow.Hello, *openflow.EchoReply, *openflow.BarrierReply:
		return nil
	case *openflow.ErrorMsg:
		c.log.Info("peer reported an error", "type", m.Type, "code", m.Code, "xid", m.Xid)
		return nil
	case *openflow.EchoRequest:
		return c.queueMsg(&openflow.EchoReply{Envelope: env, Data: m.Data})
	case *openflow.FeaturesRequest:
		return c.features(env)
	case *openflow.GetConfigRequest:
		c.mu.Lock()
		msl := c.missSendLen
		flags := openflow.ConfigFragNormal
		// OFPC_INVALID_TTL_TO_CONTROLLER (before 1.3) is the
		// invalid_ttl bit of the connection's packet-in mask, as in OVS.
		if env.Version < openflow.Version13 && c.async.PacketInMask[0]&(1<<ReasonInvalidTTL) != 0 {
			flags |= configInvalidTTLToController
		}
		c.mu.Unlock()
		return c.queueMsg(&openflow.GetConfigReply{Envelope: env, Flags: flags, MissSendLen: msl})
	case *openflow.SetConfig:
		c.mu.Lock()
		c.missSendLen = m.MissSendLen
		if env.Version < openflow.Version13 {
			if m.Flags&configInvalidTTLToController != 0 {
				c.async.PacketInMask[0] |= 1 << ReasonInvalidTTL
			} else {
				c.async.PacketInMask[0] &^= 1 << ReasonInvalidTTL
			}
		}
		c.mu.Unlock()
		c.setServiceAsync(m.MissSendLen)
		return nil
	case *openflow.BarrierRequest:
		// Messages are handled one at a time, so everything before the
		// barrier is done in the tables; Sync makes it done in the
		// datapath too, so the next packet meets the new rules.
		c.m.b.Udpif.Sync()
		return c.queueMsg(&openflow.BarrierReply{Envelope: env})
	case *openflow.FlowMod:
		return c.flowMod(raw, m)
	case *openflow.PacketOut:
		return c.packetOut(raw, m)
	case *openflow.PortMod:
		return c.portMod(raw, m)
	case *openflow.RoleRequest:
		return c.roleRequest(raw, m)
	case *openflow.GetAsyncRequest:
		c.mu.Lock()
		a := c.async
		c.mu.Unlock()
		return c.queueMsg(&openflow.GetAsyncReply{Envelope: env, AsyncConfig: a})
	case *openflow.SetAsync:
		c.mu.Lock()
		c.async.Merge(&m.AsyncConfig, m.Props)
		c.mu.Unlock()
		return nil
	case *openflow.BundleControl:
		return c.bundleControl(raw, m)
	case *openflow.BundleAdd:
		return c.bundleAdd(raw, m)
	case *openflow.NXSetFlowFormat:
		if m.Format != openflow.NXFlowFormatOpenFlow10 && m.Format != openflow.NXFlowFormatNXM {
			return c.sendError(raw, openflow.ErrTypeBadRequest, openflow.BadRequestEPerm)
		}
		c.mu.Lock()
		c.nxmFlows = m.Format == openflow.NXFlowFormatNXM
		c.mu.Unlock()
		return nil
	case *openflow.NXSetPacketInFormat:
		return c.setPacketInFormat(raw, m)
	case *openflow.TLVTableMod:
		return c.tlvTableMod(raw, m)
	case *openflow.TLVTableRequest:
		return c.tlvTableRequest(m)
	case *openflow.CtFlushZone:
		return c.ctFlushZone(raw, m)
	case *openflow.CtFlush:
		return c.ctFlush(raw, m)
	case *openflow.NXSetControllerID:
		c.mu.Lock()
		c.ctrlID = m.ID
		c.mu.Unlock()
		return nil
	case *openflow.FlowMonitorRequest:
		return c.flowMonitorRequest(raw, m)
	case *openflow.NXFlowMonitorCancel:
		return c.cancelFlowMonitor(raw, m)
	case *openflow.PacketIn2:
		if m.Resume {
			return c.resume(raw, m)
		}
	case *openflow.NXFlowModTableID:
		c.mu.Lock()
		c.tableIDExt = m.Enable
		c.mu.Unlock()
		return nil
	case *openflow.DescStatsRequest:
		d := c.m.b.Description()
		return c.queueMsg(&openflow.DescStatsReply{Envelope: env, Mfr: d.Mfr, HW: d.HW, SW: d.SW, Serial: d.Serial, DP: d.DP})
	case *openflow.FlowStatsRequest:
		return c.flowStats(env, m)
	case *openflow.AggregateStatsRequest:
		return c.aggregateStats(env, m)
	case *openflow.IPFIXStatsRequest:
		return c.ipfixStats(raw, env, m) // conn_ipfix.go
	case *openflow.TableStatsRequest:
		return c.tableStats(env)
	case *openflow.PortStatsRequest:
		return c.portStats(raw, env, m)
	case *openflow.PortDescRequest:
		ports := c.m.ofPorts(v)
		if m.PortNo != openflow.PortAny {
			ports = onlyPort(ports, m.PortNo)
		}
		return c.sendParts(len(ports), func(lo, hi int) openflow.Msg {
			return &openflow.PortDescReply{Envelope: env, Ports: ports[lo:hi]}
		})
	case *openflow.QueueStatsRequest:
		// The switch has no queues: an empty answer is the truthful one.
		return c.queueMsg(&openflow.QueueStatsReply{Envelope: env})
	case *openflow.TableFeaturesRequest:
		if len(m.Tables) > 0 {
			return c.sendError(raw, openflow.Err13TypeTableFeatFailed, openflow.TableFeaturesFailed13EPerm)
		}
		tables := tableFeatures()
		return c.sendParts(len(tables), func(lo, hi int) openflow.Msg {
			return &openflow.TableFeaturesReply{Envelope: env, Tables: tables[lo:hi]}
		})
	}
	if ok, err := c.handleGroupMeter(raw, env, msg); ok {
		return err
	}
	// Anything else is a message only a switch sends, or one this switch
	// does not implement.
	return c.sendError(raw, openflow.ErrTypeBadRequest, openflow.BadRequestBadType)
}

// sendError answers raw with OFPT_ERROR type/code in the connection's
// version, quoting the first 64 bytes of raw.
func (c *Conn) sendError(raw []byte, typ, code uint16) error {
	e := &openflow.Error{Version: c.Version(), Type: typ, Code: code}
	if typ == openflow.Err13TypeExperimenter || c.Version() < openflow.Version13 && code >= nxErrorCodes10 {
		e.Experimenter = openflow.NXVendorID // the switch's only vendor errors are Nicira's
	}
	return c.queueMsg(e.Reply(raw))
}

// isSlave reports whether the connection may not change the switch; if so
// it has answered raw with the error.
func (c *Conn) isSlave(raw []byte) (bool, error) {
	if c.Role() != openflow.RoleSlave {
		return false, nil
	}
	code := openflow.BadRequest13IsSlave
	if c.Version() <= openflow.Version11 {
		code = openflow.BadRequestEPerm // no IS_SLAVE before 1.2
	}
	return true, c.sendError(raw, openflow.ErrTypeBadRequest, code)
}

// sendParts sends a multipart reply of n entries built by build(lo, hi),
// split into as many messages as the 64 KiB limit needs, each but the last
// flagged REPLY_MORE. An encoding error other than length is returned and
// nothing is sent.
func (c *Conn) sendParts(n int, build func(lo, hi int) openflow.Msg) error {
	var parts [][]byte
	var rec func(lo, hi int) error
	rec = func(lo, hi int) error {
		b, err := build(lo, hi).Append(c.m.getBuf())
		if err == nil {
			parts = append(parts, b)
			return nil
		}
		c.m.putBuf(b)
		if hi-lo > 1 && errors.Is(err, openflow.ErrTooLong) {
			mid := (lo + hi) / 2
			if err := rec(lo, mid); err != nil {
				return err
			}
			return rec(mid, hi)
		}
		return err
	}
	if err := rec(0, n); err != nil {
		for _, p := range parts {
			c.m.putBuf(p)
		}
		return fmt.Errorf("stats reply: %w", err)
	}
	for i, p := range parts {
		if i < len(parts)-1 {
			p[11] |= byte(openflow.StatsReplyMore) // flags are bytes 10-11 in every version
		}
		if !c.enqueue(p, true) {
			for _, q := range parts[i+1:] {
				c.m.putBuf(q)
			}
			return errConnClosed
		}
	}
	return nil
}

// onlyPort keeps the port numbered no (none if it is absent), for a 1.5
// port-desc request that names one.
func onlyPort(ports []openflow.Port, no uint32) []openflow.Port {
	for _, p := range ports {
		if p.PortNo == no {
			return []openflow.Port{p}
		}
	}
	return nil
}

// ofPort converts a bridge port to its OpenFlow description in version v;
// ok is false for a port 1.0 cannot number.
func ofPort(p *Port, v uint8) (openflow.Port, bool) {
	op := openflow.Port{PortNo: p.OFPort, HWAddr: p.HWAddr, Name: p.Name}
	if v == openflow.Version10 {
		if _, ok := openflow.Port32To10(p.OFPort); !ok {
			return op, false
		}
	}
	op.Config = portConfig(p)
	op.State |= stpPortState(p, v) // xlate_stp.go
	if p.LinkDown {
		op.State |= ofppsLinkDown // linkstate.go
	}
	if v != openflow.Version10 {
		op.Config &^= openflow.Port10ConfigNoFlood // a 1.0 bit, reserved later
	}
	return op, true
}

// ofPorts lists the bridge's ports in version v.
func (m *ConnManager) ofPorts(v uint8) []openflow.Port {
	list := m.b.Ports.Snapshot().List()
	out := make([]openflow.Port, 0, len(list))
	for _, p := range list {
		if op, ok := ofPort(p, v); ok {
			out = append(out, op)
		}
	}
	return out
}

func (c *Conn) features(env openflow.Envelope) error {
	r := &openflow.FeaturesReply{Envelope: env, DatapathID: c.m.b.DatapathID(), NBuffers: 0, NTables: NumTables,
		Capabilities: openflow.CapFlowStats | openflow.CapTableStats | openflow.CapPortStats}
	if env.Version >= openflow.Version13 {
		// Group stats, as ovs-vswitchd advertises them (OFPC_GROUP_STATS).
		r.Capabilities |= openflow.Cap13Groups
	}
	if env.Version >= openflow.Version14 {
		// Bundles, as ovs-vswitchd advertises them from 1.4 on.
		r.Capabilities |= openflow.Cap14Bundles
	}
	if env.Version <= openflow.Version11 {
		r.Capabilities |= openflow.Cap10ARPMatch // OFPC_ARP_MATCH_IP, until 1.2 dropped it
	}
	if env.Version == openflow.Version10 {
		r.Actions = 0xfff // every OpenFlow 1.0 action
	}
	if env.Version < openflow.Version13 {
		// Up to 1.2 the ports travel in the features reply.
		r.Ports = c.m.ofPorts(env.Version)
	}
	b, err := r.Append(c.m.getBuf())
	if errors.Is(err, openflow.ErrTooLong) {
		// Too many ports for one message: send none, as OVS does, and
		// the client asks for the port descriptions.
		r.Ports = nil
		b, err = r.Append(b[:0])
	}
	if err != nil {
		c.m.putBuf(b)
		return err
	}
	if !c.enqueue(b, true) {
		return errConnClosed
	}
	return nil
}

// flowModError maps a flow table error to version v's error type and code.
func flowModError(v uint8, err error) (typ, code uint16) {
	k := ErrKind(err)
	if typ, code, ok := ctFlowModError(v, k); ok {
		return typ, code
	}
	if typ, code, ok := conjFlowModError(v, k); ok {
		return typ, code
	}
	switch k {
	case ErrUnsupportedAction:
		return openflow.ErrTypeBadAction, openflow.BadActionBadType
	case ErrUnsupportedVendor:
		return openflow.ErrTypeBadAction, openflow.BadActionBadVendor
	case ErrUnsupportedNXAction:
		return openflow.ErrTypeBadAction, openflow.BadActionBadVendorType
	case ErrBadArgument:
		return openflow.ErrTypeBadAction, openflow.BadActionBadArgument
	case ErrInvalidMeter:
		return openflow.Err13TypeMeterModFailed, openflow.MeterModFailed13InvalidMeter
	case ErrUnsupportedSetField:
		if v >= openflow.Version12 {
			return openflow.ErrTypeBadAction, openflow.BadAction13BadSetType
		}
		return openflow.ErrTypeBadAction, openflow.BadActionBadType
	}
	if v >= openflow.Version11 {
		switch k {
		case ErrOverlap:
			return openflow.Err13TypeFlowModFailed, openflow.FlowModFailed13Overlap
		case ErrTableFull:
			return openflow.Err13TypeFlowModFailed, openflow.FlowModFailed13TableFull
		case ErrBadTableID:
			return openflow.Err13TypeFlowModFailed, openflow.FlowModFailed13BadTableID
		case ErrBadCommand:
			return openflow.Err13TypeFlowModFailed, openflow.FlowModFailed13BadCommand
		case ErrBadOutPort:
			return openflow.ErrTypeBadAction, openflow.BadActionBadOutPort
		case ErrBadTimeout:
			return openflow.Err13TypeFlowModFailed, openflow.FlowModFailed13BadTimeout
		case ErrBadGotoTable:
			return openflow.Err13TypeBadInstruction, openflow.BadInst13BadTableID
		case ErrBadOutGroup:
			return openflow.ErrTypeBadAction, openflow.BadAction13BadOutGroup
		case ErrMatchInconsistent:
			return openflow.ErrTypeBadAction, openflow.BadAction13MatchIncons
		}
		return openflow.Err13TypeFlowModFailed, openflow.FlowModFailed13Unknown
	}
	switch k {
	case ErrOverlap:
		return openflow.Err10TypeFlowModFail, openflow.FlowModFailed10Overlap
	case ErrTableFull:
		return openflow.Err10TypeFlowModFail, openflow.FlowModFailed10AllTablesFull
	case ErrBadCommand:
		return openflow.Err10TypeFlowModFail, openflow.FlowModFailed10BadCommand
	case ErrBadOutPort:
		return openflow.ErrTypeBadAction, openflow.BadActionBadOutPort
	case ErrBadTimeout:
		return openflow.Err10TypeFlowModFail, openflow.FlowModFailed10BadEmergTimeout
	case ErrMatchInconsistent, ErrBadOutGroup:
		// OpenFlow 1.0 has neither code; its closest is a bad argument.
		return openflow.ErrTypeBadAction, openflow.BadActionBadArgument
	}
	// OpenFlow 1.0 has no bad-table code; OVS answers with its catch-all
	// "unsupported".
	return openflow.Err10TypeFlowModFail, openflow.FlowModFailed10Unsupported
}

// toFlowMod maps a wire flow mod onto the tables' version-independent
// form, with this connection's Nicira settings. ok false means it has
// already been answered with an error.
func (c *Conn) toFlowMod(m *openflow.FlowMod) (fm FlowMod, errType, errCode uint16, ok bool) {
	v := m.Version
	fm = FlowMod{Command: Command(m.Command), Table: m.TableID, Priority: m.Priority,
		Match:  classifier.Match{Key: m.Match.Key, Mask: m.Match.Mask},
		Cookie: m.Cookie, CookieMask: m.CookieMask, IdleTimeout: m.IdleTimeout, HardTimeout: m.HardTimeout,
		OutPort: m.OutPort, Importance: m.Importance, Instructions: m.Instructions, Origin: c, Xid: m.Xid}
	isModify := fm.Command == CmdModify || fm.Command == CmdModifyStrict
	fm.finAnyMatch = v == openflow.Version10 // xlate_fintimeout.go
	if v == openflow.Version10 {
		c.mu.Lock()
		ext := c.tableIDExt
		c.mu.Unlock()
		if !ext {
			fm.Table = openflow.TableAll
		}
		if m.Flags&openflow.Flow10Emerg != 0 {
			return fm, openflow.Err10TypeFlowModFail, openflow.FlowModFailed10Unsupported, false
		}
		fm.Flags = m.Flags & (FlagSendFlowRem | FlagCheckOverlap)
		if fm.Command == CmdAdd {
			// In OpenFlow 1.0 an add always resets the counters of the
			// flow it replaces; OVS records (and 1.3+ dumps show) that
			// as reset_counts.
			fm.Flags |= FlagResetCounts
		}
		// OpenFlow 1.0 selects by match only; a modify sets the cookie
		// and adds the flow when nothing matches.
		fm.CookieMask = 0
		if isModify {
			// All-ones is OVS's "leave the cookie alone" (ovs-ofctl
			// mod-flows without cookie=); a flow the modify adds then
			// gets cookie 0.
			fm.ModifyAdds = true
			if m.Cookie != ^uint64(0) {
				fm.SetCookie, fm.NewCookie = true, m.Cookie
			} else {
				fm.Cookie = 0
			}
		}
	} else {
		fm.Flags = m.Flags & (FlagSendFlowRem | FlagCheckOverlap | FlagResetCounts | FlagNoPktCounts | FlagNoBytCounts)
	}
	if fm.Command == CmdAdd && fm.Table == openflow.TableAll && v == openflow.Version10 {
		fm.Table = 0
	}
	if fm.Command < CmdDelete {
		// out_port filters deletes only.
		fm.OutPort = openflow.PortAny
	}
	return fm, 0, 0, true
}

func (c *Conn) flowMod(raw []byte, m *openflow.FlowMod) error {
	if slave, err := c.isSlave(raw); slave {
		return err
	}
	fm, typ, code, ok := c.toFlowMod(m)
	if !ok {
		return c.sendError(raw, typ, code)
	}
	if fm.Command >= CmdDelete && m.OutGroup != openflow.GroupAny {
		fm.OutGroup, fm.HasOutGroup = m.OutGroup, true
	}
	now := time.Now()
	var err error
	c.m.shieldFailOpen(fm.Command == CmdModify || fm.Command == CmdDelete, func() {
		err = c.m.b.Tables.Apply(&fm, now)
	})
	if err != nil {
		c.logRefusal("flow mod", err)
		return c.sendFlowModError(raw, err)
	}
	if m.BufferID != openflow.NoBuffer && fm.Command < CmdDelete {
		// The switch buffers no packets; the flow is in, but there is no
		// packet to apply it to.
		return c.sendError(raw, openflow.ErrTypeBadRequest, openflow.BadRequestBufferUnknown)
	}
	return nil
}

func (c *Conn) packetOut(raw []byte, m *openflow.PacketOut) error {
	if slave, err := c.isSlave(raw); slave {
		return err
	}
	v := c.Version()
	if m.BufferID != openflow.NoBuffer {
		return c.sendError(raw, openflow.ErrTypeBadRequest, openflow.BadRequestBufferUnknown)
	}
	in := m.InPort
	switch in {
	case openflow.PortController, openflow.PortLocal, openflow.PortAny:
	default:
		if in >= openflow.PortMax || c.m.b.Ports.Snapshot().ByOF(in) == nil {
			code := openflow.BadRequest13BadPort
			if v <= openflow.Version11 {
				code = openflow.BadRequestEPerm // no BAD_PORT before 1.2
			}
			return c.sendError(raw, openflow.ErrTypeBadRequest, code)
		}
	}
	if err := checkSupported(m.Actions); err != nil {
		typ, code := flowModError(v, err)
		c.logRefusal("packet-out", err)
		return c.sendError(raw, typ, code)
	}
	if err := checkResubmitCt(m.Actions, nil); err != nil {
		typ, code := flowModError(v, err)
		c.logRefusal("packet-out", err)
		return c.sendError(raw, typ, code)
	}
	if err := c.m.b.Tables.checkActionRefs(m.Actions); err != nil {
		c.logRefusal("packet-out", err)
		return c.sendFlowModError(raw, err)
	}
	if err := c.m.b.PacketOutPipeline(m.Data, in, &m.Pipeline, m.Actions); err != nil {
		if xe := (*ExecuteError)(nil); errors.As(err, &xe) {
			if warnAllowed(time.Now()) {
				c.log.Warn(xe.Error())
			}
			return nil
		}
		c.log.Info("packet-out failed", "err", err)
		return c.sendError(raw, openflow.ErrTypeBadAction, openflow.BadActionBadArgument)
	}
	return nil
}

func (c *Conn) portMod(raw []byte, m *openflow.PortMod) error {
	if slave, err := c.isSlave(raw); slave {
		return err
	}
	if typ, code, ok := c.checkPortMod(m); !ok {
		return c.sendError(raw, typ, code)
	}
	if !c.applyPortMod(m) {
		typ, code := c.portModErr(openflow.PortModFailedBadPort)
		return c.sendError(raw, typ, code)
	}
	return nil
}

// portModErr is OFPET_PORT_MOD_FAILED with code in the connection's
// version.
func (c *Conn) portModErr(code uint16) (uint16, uint16) {
	if c.Version() >= openflow.Version11 {
		return openflow.Err13TypePortModFailed, code
	}
	return openflow.Err10TypePortModFail, code
}

// checkPortMod checks that m names an existing port by its address.
func (c *Conn) checkPortMod(m *openflow.PortMod) (typ, code uint16, ok bool) {
	p := c.m.b.Ports.Snapshot().ByOF(m.PortNo)
	if p == nil {
		typ, code = c.portModErr(openflow.PortModFailedBadPort)
		return typ, code, false
	}
	if p.HWAddr != m.HWAddr {
		typ, code = c.portModErr(openflow.PortModFailedBadHWAddr)
		return typ, code, false
	}
	return 0, 0, true
}

// applyPortMod carries out a checked port mod; false if the port went
// away meanwhile.
func (c *Conn) applyPortMod(m *openflow.PortMod) bool {
	b := c.m.b
	p := b.Ports.Snapshot().ByOF(m.PortNo)
	if p == nil {
		return false
	}
	np, changed, err := b.ModPort(p.OFPort, m.Config, m.Mask, c.Version() == openflow.Version10)
	if err != nil {
		c.log.Warn("port mod", "port", p.Name, "err", err)
		return false
	}
	if !changed {
		return true
	}
	c.m.portEvent(PortEvent{Reason: openflow.PortReasonModify, Port: np})
	c.m.invalidate()
	return true
}

func (c *Conn) roleRequest(raw []byte, r *openflow.RoleRequest) error {
	m := c.m
	m.mu.Lock()
	switch r.Role {
	case openflow.RoleNoChange, openflow.RoleEqual:
	case openflow.RoleMaster, openflow.RoleSlave:
		if m.genSet && int64(r.GenerationID-m.genID) < 0 {
			m.mu.Unlock()
			return c.sendError(raw, openflow.Err13TypeRoleRequestFail, openflow.RoleRequestFailed13Stale)
		}
		m.genID, m.genSet = r.GenerationID, true
	default:
		m.mu.Unlock()
		return c.sendError(raw, openflow.Err13TypeRoleRequestFail, openflow.RoleRequestFailed13BadRole)
	}
	var demoted []*Conn
	if r.Role == openflow.RoleMaster {
		// There is one master: the old one becomes a slave.
		for o := range m.conns {
			if o != c {
				o.mu.Lock()
				if o.role == openflow.RoleMaster {
					o.role = openflow.RoleSlave
					if o.async.RoleStatusMask[1]&(1<<openflow.RoleReasonMasterRequest) != 0 {
						demoted = append(demoted, o)
					}
				}
				o.mu.Unlock()
			}
		}
	}
	c.mu.Lock()
	if r.Role != openflow.RoleNoChange {
		c.role = r.Role
	}
	role := c.role
	c.mu.Unlock()
	gen := m.genID
	m.mu.Unlock()
	for _, o := range demoted {
		// A master hears it was demoted: OFPT_ROLE_STATUS in 1.4+, the
		// ONF extension in 1.3, as ovs-vswitchd sends them.
		if v := o.Version(); v >= openflow.Version13 {
			st := &openflow.RoleStatus{Envelope: openflow.Envelope{Version: v, Xid: 0}, Role: openflow.RoleSlave,
				Reason: openflow.RoleReasonMasterRequest, GenerationID: gen}
			if b, err := st.Append(m.getBuf()); err == nil {
				o.enqueue(b, false)
			} else {
				m.putBuf(b)
			}
		}
	}
	return c.queueMsg(&openflow.RoleReply{Envelope: r.Envelope, Role: role, GenerationID: gen})
}

// statsRules returns the OpenFlow rules a flow or aggregate request
// selects; the fail-open rule (priority above 16 bits) is not one.
func (m *ConnManager) statsRules(req *openflow.FlowStatsRequest) []*Rule {
	cookie, mask := req.Cookie, req.CookieMask
	if req.Version == openflow.Version10 {
		mask = 0
	}
	rules := m.b.Tables.Select(req.TableID, &classifier.Match{Key: req.Match.Key, Mask: req.Match.Mask},
		cookie, mask, req.OutPort)
	out := rules[:0]
	for _, r := range rules {
		if r.Priority <= 0xffff && (req.OutGroup == openflow.GroupAny || r.Value.uses(refGroup, req.OutGroup)) {
			out = append(out, r)
		}
	}
	return out
}

// flowStatsEntry describes rule r at now for version v (nx: NXST_FLOW).
func flowStatsEntry(r *Rule, v uint8, nx bool, now time.Time) openflow.FlowStats {
	e := r.Value
	p, by := e.Stats()
	d := now.Sub(e.Created)
	if d < 0 {
		d = 0
	}
	idle, hard := e.Timeouts()
	fs := openflow.FlowStats{TableID: e.Table, DurationSec: uint32(d / time.Second),
		DurationNsec: uint32(d % time.Second), Priority: uint16(r.Priority), IdleTimeout: idle,
		HardTimeout: hard, Cookie: e.Cookie, PacketCount: p, ByteCount: by,
		Match: openflow.Match{Key: r.Match.Key, Mask: r.Match.Mask}, Instructions: e.Instructions}
	if v >= openflow.Version13 {
		fs.Flags = e.Flags
	}
	if v >= openflow.Version14 {
		fs.Importance = e.Importance
	}
	if v >= openflow.Version15 {
		// 1.5 carries the idle time (OXS), as ovs-vswitchd sends it.
		fs.IdleAge = ageSeconds(now.Sub(e.LastUsed()))
	}
	if nx {
		fs.IdleAge = ageSeconds(now.Sub(e.LastUsed()))
		fs.HardAge = ageSeconds(d)
	}
	return fs
}

// ageSeconds is an NXST_FLOW age: whole seconds plus one (0 = unknown).
func ageSeconds(d time.Duration) uint16 {
	s := d/time.Second + 1
	if s < 1 {
		s = 1
	}
	if s > 0xffff {
		s = 0xffff
	}
	return uint16(s)
}

func (c *Conn) flowStats(env openflow.Envelope, req *openflow.FlowStatsRequest) error {
	rules := c.m.statsRules(req)
	now := time.Now()
	stats := make([]openflow.FlowStats, len(rules))
	for i, r := range rules {
		stats[i] = flowStatsEntry(r, env.Version, req.NXM, now)
	}
	// Leave out flows the connection's format cannot express (an IPv6
	// match or goto_table in plain OpenFlow 1.0), as OVS does.
	scratch := c.m.getBuf()
	keep := stats[:0]
	for i := range stats {
		var err error
		scratch, err = (&openflow.FlowStatsReply{Envelope: env, NXM: req.NXM, Stats: stats[i : i+1]}).Append(scratch[:0])
		if err != nil {
			c.log.Debug("flow left out of flow stats", "err", err)
			continue
		}
		keep = append(keep, stats[i])
	}
	c.m.putBuf(scratch)
	stats = keep
	return c.sendParts(len(stats), func(lo, hi int) openflow.Msg {
		return &openflow.FlowStatsReply{Envelope: env, NXM: req.NXM, Stats: stats[lo:hi]}
	})
}

func (c *Conn) aggregateStats(env openflow.Envelope, req *openflow.AggregateStatsRequest) error {
	r := &openflow.AggregateStatsReply{Envelope: env, NXM: req.NXM}
	for _, rule := range c.m.statsRules((*openflow.FlowStatsRequest)(req)) {
		p, b := rule.Value.Stats()
		r.PacketCount += p
		r.ByteCount += b
		r.FlowCount++
	}
	return c.queueMsg(r)
}

// tableName is what table stats call table id: OVS's names.
func tableName(id int) string {
	if id == 0 {
		return "classifier"
	}
	return fmt.Sprintf("table%d", id)
}

func (c *Conn) tableStats(env openflow.Envelope) error {
	ts := c.m.b.Tables
	max := uint32(1000000)
	if ts.MaxFlows > 0 {
		max = uint32(ts.MaxFlows)
	}
	stats := make([]openflow.TableStats, NumTables)
	for id := range stats {
		n := ts.Table(uint8(id)).Snapshot().Len()
		if id == 0 && c.m.FailOpen() {
			n--
		}
		stats[id] = openflow.TableStats{TableID: uint8(id), Name: tableName(id), Wildcards: openflow.Wildcard10All,
			MaxEntries: max, ActiveCount: uint32(n), V11: tableStats11(env.Version, id)}
		if env.Version == openflow.Version11 || env.Version == openflow.Version12 {
			stats[id].Name = "" // ovs-vswitchd names no table in 1.1 and 1.2
		}
	}
	return c.sendParts(len(stats), func(lo, hi int) openflow.Msg {
		return &openflow.TableStatsReply{Envelope: env, Stats: stats[lo:hi]}
	})
}

func (c *Conn) portStats(raw []byte, env openflow.Envelope, req *openflow.PortStatsRequest) error {
	vports, err := c.m.b.DP.Vports()
	if err != nil {
		c.log.Warn("port stats: listing datapath ports", "err", err)
		return c.sendError(raw, openflow.ErrTypeBadRequest, openflow.BadRequestEPerm)
	}
	ports := c.m.b.Ports.Snapshot()
	var stats []openflow.PortStats
	for i := range vports {
		vp := &vports[i]
		p := ports.ByDP(vp.PortNo)
		if p == nil || req.PortNo != openflow.PortAny && req.PortNo != p.OFPort {
			continue
		}
		if _, ok := openflow.Port32To10(p.OFPort); !ok && env.Version == openflow.Version10 {
			continue
		}
		s := vp.Stats
		stats = append(stats, openflow.PortStats{PortNo: p.OFPort,
			RxPackets: s.RxPackets, TxPackets: s.TxPackets, RxBytes: s.RxBytes, TxBytes: s.TxBytes,
			RxDropped: s.RxDropped, TxDropped: s.TxDropped, RxErrors: s.RxErrors, TxErrors: s.TxErrors,
			// Counters the datapath does not keep are all-ones, as
			// OpenFlow asks; so is the unknown duration.
			RxFrameErr: ^uint64(0), RxOverErr: ^uint64(0), RxCRCErr: ^uint64(0), Collisions: ^uint64(0),
			DurationSec: ^uint32(0), DurationNsec: ^uint32(0)})
	}
	stats = appendPatchStats(stats, ports, req.PortNo, env.Version)
	if req.PortNo != openflow.PortAny && len(stats) == 0 {
		code := openflow.BadRequest13BadPort
		if env.Version <= openflow.Version11 {
			code = openflow.BadRequestEPerm // no BAD_PORT before 1.2
		}
		return c.sendError(raw, openflow.ErrTypeBadRequest, code)
	}
	return c.sendParts(len(stats), func(lo, hi int) openflow.Msg {
		return &openflow.PortStatsReply{Envelope: env, Stats: stats[lo:hi]}
	})
}

// OpenFlow 1.3 instruction and action types the switch carries out, for
// table features.
var (
	featInstructions = []uint16{1, 2, 3, 4, 5}         // goto_table, write_metadata, write/apply/clear actions
	featActions      = []uint16{0, 17, 18, 23, 24, 25} // output, push/pop_vlan, set/dec_nw_ttl, set_field
)

// tableFeatures describes every table truthfully and minimally: what it
// matches, the instructions and actions it takes, where it may go next.
func tableFeatures() []openflow.TableFeatures {
	ids := func(types []uint16) []byte {
		var b []byte
		for _, t := range types {
			b = append(b, byte(t>>8), byte(t), 0, 4)
		}
		return b
	}
	var fieldHdrs []byte
	for f := openflow.FieldNone + 1; f < openflow.NumFields; f++ {
		if h, ok := f.Header(false); ok && h>>16 == uint32(openflow.ClassOpenFlow) {
			fieldHdrs = append(fieldHdrs, byte(h>>24), byte(h>>16), byte(h>>8), byte(h))
		}
	}
	acts := ids(featActions)
	out := make([]openflow.TableFeatures, NumTables)
	for id := range out {
		insts := featInstructions
		if id == NumTables-1 {
			insts = insts[1:] // the last table has nowhere to go
		}
		var next []byte
		for n := id + 1; n < NumTables; n++ {
			next = append(next, byte(n))
		}
		out[id] = openflow.TableFeatures{TableID: uint8(id), Name: tableName(id), MetadataMatch: ^uint64(0),
			MetadataWrite: ^uint64(0), MaxEntries: 1000000, Properties: []openflow.TableFeatureProp{
				{Type: openflow.TFPInstructions, Data: ids(insts)},
				{Type: openflow.TFPNextTables, Data: next},
				{Type: openflow.TFPWriteActions, Data: acts},
				{Type: openflow.TFPApplyActions, Data: acts},
				{Type: openflow.TFPMatch, Data: fieldHdrs},
				{Type: openflow.TFPWildcards, Data: fieldHdrs},
				{Type: openflow.TFPWriteSetField, Data: fieldHdrs},
				{Type: openflow.TFPApplySetField, Data: fieldHdrs},
			}}
	}
	return out
}

// encodeAsync appends the asynchronous message ev, in c's version and
// formats, to b. Only the dispatcher goroutine calls it (it uses
// m.pinMsg).
func (m *ConnManager) encodeAsync(c *Conn, ev *asyncEvent, now time.Time, b []byte) ([]byte, error) {
	v := c.Version()
	c.mu.Lock()
	nxFlows, pinFormat := c.nxmFlows, c.pinFormat
	c.mu.Unlock()
	env := openflow.Envelope{Version: v}
	switch ev.kind {
	case asyncPacketIn:
		pin := &ev.pin
		p := m.b.Ports.Snapshot().ByDP(pin.Key.InPort)
		if p == nil {
			p = m.b.tunnelPortOf(&pin.Key) // xlate_tunnel.go
		}
		if p == nil && pin.Ext == nil {
			// (An extended packet-in names its OpenFlow in_port in
			// its metadata: from a bridge reached by a patch port.)
			return b, fmt.Errorf("packet-in from unknown datapath port %d", pin.Key.InPort)
		}
		reason := pin.Reason
		if v >= openflow.Version13 && ev.explicitMiss {
			reason = ReasonNoMatch
		}
		if pin.Ext != nil || pinFormat == openflow.NXPacketIn2Format {
			return m.encodePacketInExt(c, pin, p, reason, pinFormat, b)
		}
		// The switch buffers nothing, so the whole packet goes up
		// (buffer_id none), whatever max_len or miss_send_len say.
		if len(pin.Packet) > 0xffff-128 {
			return b, fmt.Errorf("packet of %d bytes too long for a packet-in", len(pin.Packet))
		}
		// The message lives in the manager, not on the stack: the codec
		// lets it escape, and this path must not allocate.
		msg := &m.pinMsg
		*msg = openflow.PacketIn{Envelope: env, NXM: pinFormat == openflow.NXPacketInNXM, BufferID: openflow.NoBuffer,
			TotalLen: uint16(len(pin.Packet)), InPort: p.OFPort, Reason: reason,
			TableID: pin.Table, Cookie: pin.Cookie, Data: pin.Packet}
		msg.Match.Key.InPort, msg.Match.Mask.InPort = p.OFPort, ^uint32(0)
		if pin.Conntracked {
			pinCtMetadata(&msg.Match, &pin.Key) // packetin_ct.go
		}
		b, err := msg.Append(b)
		msg.Data = nil
		return b, err
	case asyncPortStatus:
		op, ok := ofPort(&ev.port.Port, v)
		if !ok {
			return b, fmt.Errorf("port %d has no OpenFlow 1.0 number", ev.port.Port.OFPort)
		}
		msg := openflow.PortStatus{Envelope: env, Reason: ev.port.Reason, Port: op}
		return msg.Append(b)
	case asyncFlowRemoved:
		r := ev.rem.Rule
		e := r.Value
		p, by := e.Stats()
		d := ev.rem.At.Sub(e.Created)
		if d < 0 {
			d = 0
		}
		msg := openflow.FlowRemoved{Envelope: env, NXM: v == openflow.Version10 && nxFlows,
			Match: openflow.Match{Key: r.Match.Key, Mask: r.Match.Mask}, Cookie: e.Cookie,
			Priority: uint16(r.Priority), Reason: uint8(ev.rem.Reason), TableID: e.Table,
			DurationSec: uint32(d / time.Second), DurationNsec: uint32(d % time.Second),
			PacketCount: p, ByteCount: by}
		msg.IdleTimeout, msg.HardTimeout = e.Timeouts()
		return msg.Append(b)
	}
	return b, fmt.Errorf("unknown async event %d", ev.kind)
}

// fromTableMissEntry reports whether the packet-in came from a CONTROLLER
// action of a table-miss flow entry (priority 0, matching everything) in
// its table: the rule the packet's key selects there is such an entry and
// carries the packet-in's cookie.
func (m *ConnManager) fromTableMissEntry(pin *PacketIn) bool {
	p := m.b.Ports.Snapshot().ByDP(pin.Key.InPort)
	if p == nil {
		return false
	}
	k := pin.Key
	k.InPort = p.OFPort
	var wc flow.Mask
	r := m.b.Tables.Lookup(pin.Table, &k, &wc)
	return r != nil && r.Priority == 0 && r.Match.Mask == (flow.Mask{}) && r.Value.Cookie == pin.Cookie
}

// logRefusal logs a failed flow mod or packet-out: at WARN the first time
// an unimplemented action is refused (so the user learns what the switch
// cannot do), at DEBUG otherwise.
func (c *Conn) logRefusal(what string, err error) {
	if isUnsupported(err) && warnOnce(err) {
		c.log.Warn(what+" refused: the switch does not implement an action it holds", "err", err)
		return
	}
	c.log.Debug(what+" failed", "err", err)
}

// configInvalidTTLToController is OFPC_INVALID_TTL_TO_CONTROLLER, a
// switch config flag of OpenFlow 1.0 (an OVS extension) to 1.2.
const configInvalidTTLToController = 1 << 2
