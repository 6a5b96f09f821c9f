package openflow

import "fmt"

// NXFlowMonitorCancel is NXT_FLOW_MONITOR_CANCEL: stop monitor ID.
type NXFlowMonitorCancel struct {
	Envelope
	ID uint32
}

func (m *NXFlowMonitorCancel) Append(b []byte) ([]byte, error) {
	b, start, err := appendMonitorMsgHeader(b, &m.Envelope, NXTFlowMonitorCancel, ONFTFlowMonitorCancel)
	if err != nil {
		return b, err
	}
	return finish(be32(b, m.ID), start)
}

// NXFlowMonitorFlowControl is NXT_FLOW_MONITOR_PAUSED (the switch stopped
// sending updates: the connection's queue filled) or, with Resumed,
// NXT_FLOW_MONITOR_RESUMED (it caught up and sends them again).
type NXFlowMonitorFlowControl struct {
	Envelope
	Resumed bool
}

func (m *NXFlowMonitorFlowControl) Append(b []byte) ([]byte, error) {
	sub := NXTFlowMonitorPaused
	if m.Resumed {
		sub = NXTFlowMonitorResumed
	}
	onf := ONFTFlowMonitorPaused
	if m.Resumed {
		onf = ONFTFlowMonitorResumed
	}
	b, start, err := appendMonitorMsgHeader(b, &m.Envelope, sub, onf)
	if err != nil {
		return b, err
	}
	return finish(b, start)
}

// appendMonitorMsgHeader starts a flow monitor control message: Nicira
// (nx) in OpenFlow 1.0, ONF experimenter (onf) in 1.3.
func appendMonitorMsgHeader(b []byte, e *Envelope, nx, onf uint32) ([]byte, int, error) {
	if e.Version == Version13 {
		b, start := begin(b, e.Version, TypeVendor, e.Xid)
		return be32(be32(b, ONFVendorID), onf), start, nil
	}
	if e.Version != Version10 {
		return b, 0, fmt.Errorf("openflow: flow monitor messages in OpenFlow %s: %w", versionName(e.Version), ErrUnsupported)
	}
	return appendNXHeader(b, e, nx)
}

// Flow monitors: NXST_FLOW_MONITOR (the Nicira stats message, OpenFlow
// 1.0) and OFPMP_FLOW_MONITOR (OpenFlow 1.4 and 1.5). One version-
// independent form serves both, in OpenFlow 1.4's numbering, as
// ovs-vswitchd keeps them.
const (
	NXSTFlowMonitor  uint32 = 2
	StatsFlowMonitor uint16 = 16 // OFPMP_FLOW_MONITOR, 1.4+
)

// Flow monitor flags (OFPFMF_*, 1.4 numbering).
const (
	MonitorInitial      uint16 = 1 << 0
	MonitorAdd          uint16 = 1 << 1
	MonitorRemoved      uint16 = 1 << 2
	MonitorModify       uint16 = 1 << 3
	MonitorInstructions uint16 = 1 << 4
	MonitorNoAbbrev     uint16 = 1 << 5
	MonitorOnlyOwn      uint16 = 1 << 6
)

// Flow update events (OFPFME_*, 1.4 numbering).
const (
	UpdateInitial  uint16 = 0
	UpdateAdded    uint16 = 1
	UpdateRemoved  uint16 = 2
	UpdateModified uint16 = 3
	UpdateAbbrev   uint16 = 4
	UpdatePaused   uint16 = 5
	UpdateResumed  uint16 = 6
)

// Flow monitor commands (OFPFMC_*, 1.4).
const (
	MonitorCmdAdd    uint8 = 0
	MonitorCmdModify uint8 = 1
	MonitorCmdDelete uint8 = 2
)

// FlowMonitor is one monitor of a flow monitor request.
type FlowMonitor struct {
	ID       uint32
	Flags    uint16 // Monitor*
	OutPort  uint32 // 32-bit numbering; PortAny for any
	OutGroup uint32 // 1.4+; GroupAny for any
	TableID  uint8  // TableAll for every table
	Command  uint8  // 1.4+ (MonitorCmd*); 1.0 always adds
	Match    Match
}

// FlowMonitorRequest is NXST_FLOW_MONITOR / OFPMP_FLOW_MONITOR request:
// one or more monitors.
type FlowMonitorRequest struct {
	Envelope
	Flags    uint16
	Monitors []FlowMonitor
}

// FlowUpdate is one entry of a flow monitor reply. Abbrev updates carry
// only Xid; paused and resumed (1.4) nothing.
type FlowUpdate struct {
	Event        uint16 // Update*
	Reason       uint8  // removed only (OFPRR_*)
	TableID      uint8
	Priority     uint16
	IdleTimeout  uint16
	HardTimeout  uint16
	Cookie       uint64
	Match        Match
	Instructions Instructions // 1.0: Apply only
	Xid          uint32       // abbrev
}

// FlowMonitorReply is NXST_FLOW_MONITOR / OFPMP_FLOW_MONITOR reply: the
// initial flows (with the request's xid) or, with xid 0, updates.
type FlowMonitorReply struct {
	Envelope
	Flags   uint16
	Updates []FlowUpdate
}

// NX flow monitor flags and events, and their mapping.
const (
	nxfmfOwn = 1 << 5
)

func nxToMonitorFlags(f uint16) uint16 {
	out := f & 0x1f
	if f&nxfmfOwn != 0 {
		out |= MonitorOnlyOwn
	}
	return out
}

func monitorToNXFlags(f uint16) uint16 {
	out := f & 0x1f
	if f&MonitorOnlyOwn != 0 {
		out |= nxfmfOwn
	}
	return out
}

var nxEventOf = map[uint16]uint16{UpdateInitial: 0, UpdateAdded: 0, UpdateRemoved: 1, UpdateModified: 2, UpdateAbbrev: 3}
var eventOfNX = [...]uint16{UpdateAdded, UpdateRemoved, UpdateModified, UpdateAbbrev}

// decodeFlowMonitorNX decodes NXST_FLOW_MONITOR (OpenFlow 1.0: NXM
// matches, actions) and ONFST_FLOW_MONITOR (1.3: the same layout with OXM
// matches and instructions).
func decodeFlowMonitorNX(env Envelope, flags uint16, b []byte, reply bool) (Msg, error) {
	v := env.Version
	onf := v == Version13
	if !reply {
		m := &FlowMonitorRequest{Envelope: env, Flags: flags}
		for len(b) > 0 {
			if len(b) < 16 {
				return nil, badLen(v, "flow monitor request", len(b), 16)
			}
			fm := FlowMonitor{ID: u32(b), Flags: u16(b[4:]), OutGroup: GroupAny}
			if fm.Flags&^0x3f != 0 {
				return nil, nxFMBadFlags(v, fm.Flags)
			}
			fm.Flags = nxToMonitorFlags(fm.Flags)
			if onf {
				fm.OutPort, fm.TableID = u32(b[8:]), b[12]
				n, err := DecodeOXM(b[16:], &fm.Match)
				if err != nil {
					return nil, err
				}
				b = b[16+n:]
			} else {
				fm.OutPort, fm.TableID = Port10To32(u16(b[6:])), b[10]
				rest, err := nxmAt(v, b[16:], int(u16(b[8:])), &fm.Match)
				if err != nil {
					return nil, err
				}
				b = rest
			}
			m.Monitors = append(m.Monitors, fm)
		}
		return m, nil
	}
	m := &FlowMonitorReply{Envelope: env, Flags: flags}
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, badLen(v, "nx_flow_update_header", len(b), 4)
		}
		n, ev := int(u16(b)), u16(b[2:])
		if n < 8 || n%8 != 0 || n > len(b) {
			return nil, errOf(v, kBadLen, "flow update of length %d in %d bytes", n, len(b))
		}
		e := b[:n]
		b = b[n:]
		if int(ev) >= len(eventOfNX) {
			return nil, errOf(v, kBadType, "flow update event %d", ev)
		}
		u := FlowUpdate{Event: eventOfNX[ev]}
		if u.Event == UpdateAbbrev {
			if n != 8 {
				return nil, badLen(v, "nx_flow_update_abbrev", n, 8)
			}
			u.Xid = u32(e[4:])
			m.Updates = append(m.Updates, u)
			continue
		}
		if n < 24 {
			return nil, badLen(v, "nx_flow_update_full", n, 24)
		}
		reason := u16(e[4:])
		if reason > 0xff {
			return nil, errOf(v, kBadLen, "flow update reason %d", reason)
		}
		u.Reason, u.Priority, u.IdleTimeout, u.HardTimeout = uint8(reason), u16(e[6:]), u16(e[8:]), u16(e[10:])
		u.TableID, u.Cookie = e[14], u64(e[16:])
		if onf {
			n, err := DecodeOXM(e[24:], &u.Match)
			if err != nil {
				return nil, err
			}
			if err := DecodeInstructions13(e[24+n:], &u.Instructions); err != nil {
				return nil, err
			}
			m.Updates = append(m.Updates, u)
			continue
		}
		acts, err := nxmAt(v, e[24:], int(u16(e[12:])), &u.Match)
		if err != nil {
			return nil, err
		}
		if u.Instructions.Apply, err = DecodeActions10(nil, acts); err != nil {
			return nil, err
		}
		m.Updates = append(m.Updates, u)
	}
	return m, nil
}

// nxFMBadFlags is OFPERR_OFPMOFC_BAD_FLAGS as OVS sends it in OpenFlow
// 1.0: (1, 518).
func nxFMBadFlags(v uint8, f uint16) *Error {
	return &Error{Version: v, Type: ErrTypeBadRequest, Code: 518, Err: ErrUnsupported,
		Detail: fmt.Sprintf("flow monitor flags %#x", f)}
}

func decodeFlowMonitor14(env Envelope, flags uint16, b []byte, reply bool) (Msg, error) {
	v := env.Version
	if !reply {
		m := &FlowMonitorRequest{Envelope: env, Flags: flags}
		for len(b) > 0 {
			if len(b) < 16 {
				return nil, badLen(v, "ofp14_flow_monitor_request", len(b), 16)
			}
			fm := FlowMonitor{ID: u32(b), OutPort: u32(b[4:]), OutGroup: u32(b[8:]), Flags: u16(b[12:]),
				TableID: b[14], Command: b[15]}
			n, err := DecodeOXM(b[16:], &fm.Match)
			if err != nil {
				return nil, err
			}
			m.Monitors = append(m.Monitors, fm)
			b = b[16+n:]
		}
		return m, nil
	}
	m := &FlowMonitorReply{Envelope: env, Flags: flags}
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, badLen(v, "ofp_flow_update_header", len(b), 4)
		}
		n, ev := int(u16(b)), u16(b[2:])
		if n < 8 || n%8 != 0 || n > len(b) {
			return nil, errOf(v, kBadLen, "flow update of length %d in %d bytes", n, len(b))
		}
		e := b[:n]
		b = b[n:]
		u := FlowUpdate{Event: ev}
		switch ev {
		case UpdateAbbrev, UpdatePaused, UpdateResumed:
			if n != 8 {
				return nil, badLen(v, "short flow update", n, 8)
			}
			if ev == UpdateAbbrev {
				u.Xid = u32(e[4:])
			}
		case UpdateInitial, UpdateAdded, UpdateRemoved, UpdateModified:
			if n < 24 {
				return nil, badLen(v, "ofp_flow_update_full", n, 24)
			}
			u.TableID, u.Reason, u.IdleTimeout, u.HardTimeout = e[4], e[5], u16(e[6:]), u16(e[8:])
			u.Priority, u.Cookie = u16(e[10:]), u64(e[16:])
			mn, err := DecodeOXM(e[24:], &u.Match)
			if err != nil {
				return nil, err
			}
			if err := decodeInstructions13(v, e[24+mn:], &u.Instructions); err != nil {
				return nil, err
			}
		default:
			return nil, errOf(v, kBadType, "flow update event %d", ev)
		}
		m.Updates = append(m.Updates, u)
	}
	return m, nil
}

func (m *FlowMonitorRequest) Append(b []byte) ([]byte, error) {
	v := m.Version
	nx := v < Version14
	b, start, err := monitorHeader(b, &m.Envelope, false, m.Flags)
	if err != nil {
		return b, err
	}
	for i := range m.Monitors {
		fm := &m.Monitors[i]
		if v == Version13 {
			at := len(b)
			b = be16(be16(be32(b, fm.ID), monitorToNXFlags(fm.Flags)), 0)
			b = append(be32(b, fm.OutPort), fm.TableID, 0, 0, 0)
			if b, err = AppendOXMV(b, v, &fm.Match); err != nil {
				return b[:start], err
			}
			n := int(u16(b[at+18:]))
			b[at+6], b[at+7] = byte(n>>8), byte(n)
			continue
		}
		if nx {
			p, ok := Port32To10(fm.OutPort)
			if !ok {
				return b[:start], fmt.Errorf("openflow: out_port %d in OpenFlow 1.0: %w", fm.OutPort, ErrUnsupported)
			}
			at := len(b)
			b = be16(be16(be32(b, fm.ID), monitorToNXFlags(fm.Flags)), p)
			b = append(zeros(b, 2), fm.TableID, 0, 0, 0, 0, 0)
			var n int
			if b, n, err = appendNXMPadded(b, &fm.Match); err != nil {
				return b[:start], err
			}
			b[at+8], b[at+9] = byte(n>>8), byte(n)
			continue
		}
		b = be16(be32(be32(be32(b, fm.ID), fm.OutPort), fm.OutGroup), fm.Flags)
		b = append(b, fm.TableID, fm.Command)
		if b, err = AppendOXMV(b, v, &fm.Match); err != nil {
			return b[:start], err
		}
	}
	return finish(b, start)
}

// monitorHeader appends the stats header of a flow monitor message in e's
// version: NXST (1.0), ONFST (1.3) or OFPMP (1.4+).
func monitorHeader(b []byte, e *Envelope, reply bool, flags uint16) ([]byte, int, error) {
	switch e.Version {
	case Version10:
		return statsHeader(b, e, reply, StatsFlowMonitor, flags, true, NXSTFlowMonitor)
	case Version13:
		t := Type13MultipartRequest
		if reply {
			t = Type13MultipartReply
		}
		b, start := begin(b, e.Version, t, e.Xid)
		b = be32(zeros(be16(be16(b, StatsVendor), flags), 4), ONFVendorID)
		return be32(b, ONFSTFlowMonitor), start, nil
	}
	return statsHeader(b, e, reply, StatsFlowMonitor, flags, false, 0)
}

func (m *FlowMonitorReply) Append(b []byte) ([]byte, error) {
	v := m.Version
	b, start, err := monitorHeader(b, &m.Envelope, true, m.Flags)
	if err != nil {
		return b, err
	}
	for i := range m.Updates {
		if b, err = appendFlowUpdate(b, v, &m.Updates[i]); err != nil {
			return b[:start], err
		}
	}
	return finish(b, start)
}

// appendFlowUpdate appends one update in version v's form.
func appendFlowUpdate(b []byte, v uint8, u *FlowUpdate) ([]byte, error) {
	at := len(b)
	var err error
	if v < Version14 {
		ev, ok := nxEventOf[u.Event]
		if !ok {
			return b, fmt.Errorf("openflow: flow update event %d in OpenFlow 1.0: %w", u.Event, ErrUnsupported)
		}
		if u.Event == UpdateAbbrev {
			return be32(be16(be16(b, 8), ev), u.Xid), nil
		}
		b = zeros(b, 4) // length and event, filled in below
		b = be16(be16(be16(be16(b, uint16(u.Reason)), u.Priority), u.IdleTimeout), u.HardTimeout)
		b = zeros(b, 2) // match_len, filled in below
		b = be64(append(b, u.TableID, 0), u.Cookie)
		if v == Version13 {
			mat := len(b)
			if b, err = AppendOXMV(b, v, &u.Match); err != nil {
				return b[:at], err
			}
			b[at+12], b[at+13] = b[mat+2], b[mat+3] // the ofp_match's own length
			if b, err = AppendInstructions13(b, &u.Instructions); err != nil {
				return b[:at], err
			}
			b[at+2], b[at+3] = byte(ev>>8), byte(ev)
			return endUpdate(b, at)
		}
		var n int
		if b, n, err = appendNXMPadded(b, &u.Match); err != nil {
			return b[:at], err
		}
		b[at+12], b[at+13] = byte(n>>8), byte(n)
		if !u.Instructions.onlyApply() {
			return b[:at], fmt.Errorf("openflow: instructions in an OpenFlow 1.0 flow update: %w", ErrUnsupported)
		}
		if b, err = AppendActions10(b, u.Instructions.Apply); err != nil {
			return b[:at], err
		}
		b[at+2], b[at+3] = byte(ev>>8), byte(ev)
	} else {
		switch u.Event {
		case UpdateAbbrev, UpdatePaused, UpdateResumed:
			return be32(be16(be16(b, 8), u.Event), u.Xid*boolU32(u.Event == UpdateAbbrev)), nil
		}
		b = be16(zeros(b, 2), u.Event)
		b = be16(be16(be16(append(b, u.TableID, u.Reason), u.IdleTimeout), u.HardTimeout), u.Priority)
		b = be64(zeros(b, 4), u.Cookie)
		if b, err = AppendOXMV(b, v, &u.Match); err != nil {
			return b[:at], err
		}
		if b, err = appendInstructions13(b, v, &u.Instructions); err != nil {
			return b[:at], err
		}
	}
	return endUpdate(b, at)
}

// endUpdate fills in the length of the update that starts at at.
func endUpdate(b []byte, at int) ([]byte, error) {
	n := len(b) - at
	if n > 0xffff {
		return b[:at], fmt.Errorf("openflow: flow update of %d bytes: %w", n, ErrTooLong)
	}
	b[at], b[at+1] = byte(n>>8), byte(n)
	return b, nil
}

// ONF experimenter numbers of the OpenFlow 1.3 flow monitor extension.
const (
	ONFSTFlowMonitor       uint32 = 1870
	ONFTFlowMonitorCancel  uint32 = 1870
	ONFTFlowMonitorPaused  uint32 = 1871
	ONFTFlowMonitorResumed uint32 = 1872
)

func boolU32(x bool) uint32 {
	if x {
		return 1
	}
	return 0
}

// decodeONFMonitorMsg decodes the OpenFlow 1.3 ONF flow monitor cancel,
// paused and resumed messages.
func decodeONFMonitorMsg(env Envelope, sub uint32, rest []byte) (Msg, error) {
	if sub == ONFTFlowMonitorCancel {
		if len(rest) != 4 {
			return nil, badLen(env.Version, "ONFT_FLOW_MONITOR_CANCEL", len(rest), 4)
		}
		return &NXFlowMonitorCancel{Envelope: env, ID: u32(rest)}, nil
	}
	if len(rest) != 0 {
		return nil, badLen(env.Version, "ONFT_FLOW_MONITOR_PAUSED/RESUMED", len(rest), 0)
	}
	return &NXFlowMonitorFlowControl{Envelope: env, Resumed: sub == ONFTFlowMonitorResumed}, nil
}
