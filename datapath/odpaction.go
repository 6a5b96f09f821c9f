package datapath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
)

// Datapath actions: the payload of OVS_FLOW_ATTR_ACTIONS and
// OVS_PACKET_ATTR_ACTIONS, a sequence of OVS_ACTION_ATTR_* attributes
// (linux/openvswitch.h) that the kernel runs in order. An empty sequence
// drops the packet. The Append* builders append one action each and never
// allocate when b has room; ActionIter decodes them in place.

// ActionType is an OVS_ACTION_ATTR_* attribute type.
type ActionType uint16

// OVS_ACTION_ATTR_* (enum ovs_action_attr), all that kernel 6.1 accepts.
const (
	ActionOutput      ActionType = 1  // u32 port
	ActionUserspace   ActionType = 2  // nested OVS_USERSPACE_ATTR_*
	ActionSet         ActionType = 3  // one nested OVS_KEY_ATTR_*
	ActionPushVLAN    ActionType = 4  // struct ovs_action_push_vlan
	ActionPopVLAN     ActionType = 5  // no payload
	ActionSample      ActionType = 6  // nested OVS_SAMPLE_ATTR_*
	ActionRecirc      ActionType = 7  // u32 recirculation ID
	ActionHash        ActionType = 8  // struct ovs_action_hash
	ActionPushMPLS    ActionType = 9  // struct ovs_action_push_mpls (8 bytes with padding)
	ActionPopMPLS     ActionType = 10 // be16 ethertype
	ActionSetMasked   ActionType = 11 // one nested OVS_KEY_ATTR_* with value then mask
	ActionCT          ActionType = 12 // nested OVS_CT_ATTR_*
	ActionTrunc       ActionType = 13 // u32 maximum length
	ActionPushEth     ActionType = 14 // struct ovs_action_push_eth
	ActionPopEth      ActionType = 15 // no payload
	ActionCTClear     ActionType = 16 // no payload
	ActionPushNSH     ActionType = 17 // nested OVS_NSH_KEY_ATTR_*
	ActionPopNSH      ActionType = 18 // no payload
	ActionMeter       ActionType = 19 // u32 meter ID
	ActionClone       ActionType = 20 // nested actions
	ActionCheckPktLen ActionType = 21 // nested OVS_CHECK_PKT_LEN_ATTR_*
	ActionAddMPLS     ActionType = 22 // struct ovs_action_add_mpls
	ActionDecTTL      ActionType = 23 // nested OVS_DEC_TTL_ATTR_*
	actionMax                    = 23
)

// Nested attribute types of the compound actions.
const (
	userspaceAttrPID           = 1
	userspaceAttrUserdata      = 2
	userspaceAttrEgressTunPort = 3
	userspaceAttrActions       = 4

	sampleAttrProbability = 1
	sampleAttrActions     = 2

	cplAttrPktLen           = 1
	cplAttrActionsGreater   = 2
	cplAttrActionsLessEqual = 3

	decTTLAttrAction = 1

	ctAttrCommit      = 1
	ctAttrZone        = 2
	ctAttrMark        = 3
	ctAttrLabels      = 4
	ctAttrHelper      = 5
	ctAttrNAT         = 6
	ctAttrForceCommit = 7
	ctAttrEventMask   = 8
	ctAttrTimeout     = 9

	natAttrSrc         = 1
	natAttrDst         = 2
	natAttrIPMin       = 3
	natAttrIPMax       = 4
	natAttrProtoMin    = 5
	natAttrProtoMax    = 6
	natAttrPersistent  = 7
	natAttrProtoHash   = 8
	natAttrProtoRandom = 9
)

// HashAlgL4 is OVS_HASH_ALG_L4, the only hash algorithm kernel 6.1 has.
const HashAlgL4 = 0

// MPLSL3Tunnel is the tun_flags bit of an add_mpls action that inserts the
// label stack entry before the L3 header instead of at the packet's start.
const MPLSL3Tunnel = 1

// ErrAction is wrapped by every error ActionIter reports for malformed
// actions.
var ErrAction = errors.New("malformed datapath action")

func actionErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrAction, fmt.Sprintf(format, args...))
}

// Userspace is the argument of a userspace action: send the packet up to
// the netlink socket PID as an OVS_PACKET_CMD_ACTION upcall.
type Userspace struct {
	PID uint32 // netlink port ID; the kernel rejects 0
	// Userdata is copied into the upcall's OVS_PACKET_ATTR_USERDATA; nil
	// for none. Decoded, it aliases the action buffer.
	Userdata []byte
	// WithActions asks the kernel to include the flow's actions in the
	// upcall (OVS_USERSPACE_ATTR_ACTIONS).
	WithActions bool
	// TunnelOutPort, when HasTunnelOutPort, is the tunnel port whose
	// egress tunnel key the upcall should carry.
	TunnelOutPort    uint32
	HasTunnelOutPort bool
}

// CT is the argument of a ct (conntrack) action.
type CT struct {
	Commit      bool
	ForceCommit bool
	Zone        uint16 // 0 is the default zone and is not encoded
	// Mark and Labels are set on the connection under their masks when the
	// mask is non-zero.
	Mark, MarkMask     uint32
	Labels, LabelsMask [16]byte
	// Helper and Timeout name a conntrack helper ("ftp") and a timeout
	// policy; empty for none. Decoded, they alias the action buffer and
	// exclude the NUL the kernel requires (the builder appends it).
	Helper, Timeout []byte
	// EventMask, when HasEventMask, limits the conntrack events reported.
	EventMask    uint32
	HasEventMask bool
	NAT          NAT
	HasNAT       bool // a nat() clause, possibly with no options
}

// NAT is the network address translation clause of a ct action.
type NAT struct {
	Src, Dst bool // source or destination NAT; at most one
	// IPMin..IPMax is the address range and ProtoMin..ProtoMax the port
	// range; zero (invalid Addr, 0) for none. IPMax and ProtoMax may be
	// zero for a single value.
	IPMin, IPMax                       netip.Addr
	ProtoMin, ProtoMax                 uint16
	Persistent, ProtoHash, ProtoRandom bool
}

// Action is one decoded action. Type says which fields are meaningful;
// slices alias the buffer being decoded and stay valid as long as it does.
type Action struct {
	Type ActionType
	Data []byte // the raw payload

	Port      uint32    // ActionOutput
	Userspace Userspace // ActionUserspace
	VLAN      flow.VLAN // ActionPushVLAN: TPID and TCI (with flow.VLANPresent)
	SetAttr   KeyAttr   // ActionSet, ActionSetMasked: the key attribute set
	SetKey    []byte    // its value
	SetMask   []byte    // its mask (ActionSetMasked only)
	Actions   []byte    // nested actions of ActionSample, ActionClone, ActionDecTTL
	Prob      uint32    // ActionSample: probability, in units of 1/0xffffffff
	ID        uint32    // ActionRecirc recirculation ID, ActionMeter meter ID
	HashAlg   uint32    // ActionHash
	HashBasis uint32    // ActionHash
	MPLSLSE   uint32    // ActionPushMPLS, ActionAddMPLS: the label stack entry
	EthType   uint16    // ActionPushMPLS, ActionAddMPLS, ActionPopMPLS: the new ethertype
	MPLSFlags uint16    // ActionAddMPLS: MPLSL3Tunnel
	CT        CT        // ActionCT
	MaxLen    uint32    // ActionTrunc
	EthSrc    [6]byte   // ActionPushEth
	EthDst    [6]byte   // ActionPushEth
	PktLen    uint16    // ActionCheckPktLen
	IfGreater []byte    // ActionCheckPktLen: actions for longer packets
	IfLessEq  []byte    // ActionCheckPktLen: actions for the others
	NSH       flow.NSH  // ActionPushNSH: the header (odp_nsh.go)
	NSHMD2    []byte    // ActionPushNSH of MD type 2: its metadata TLVs
}

// actionLen is the payload size of each fixed-size action, -1 for
// variable ones.
var actionLen = [actionMax + 1]int8{
	ActionOutput: 4, ActionUserspace: -1, ActionSet: -1, ActionPushVLAN: 4,
	ActionPopVLAN: 0, ActionSample: -1, ActionRecirc: 4, ActionHash: 8,
	ActionPushMPLS: 8, ActionPopMPLS: 2, ActionSetMasked: -1, ActionCT: -1,
	ActionTrunc: 4, ActionPushEth: 12, ActionPopEth: 0, ActionCTClear: 0,
	ActionPushNSH: -1, ActionPopNSH: 0, ActionMeter: 4, ActionClone: -1,
	ActionCheckPktLen: -1, ActionAddMPLS: 8, ActionDecTTL: -1,
}

// ActionIter decodes a sequence of actions in place, without allocating.
// Nested action lists (sample, clone, check_pkt_len, dec_ttl) are handed
// out as bytes for a nested ActionIter; the iterator does not descend.
// Actions of unknown types are yielded with only Type and Data set.
//
//	it := datapath.NewActionIter(acts)
//	for it.Next() {
//		a := it.Action()
//		...
//	}
//	if err := it.Err(); err != nil { ... }
type ActionIter struct {
	attrs netlinkio.AttrIter
	a     Action
	err   error
}

// NewActionIter returns an iterator over the actions in b.
func NewActionIter(b []byte) ActionIter { return ActionIter{attrs: netlinkio.NewAttrIter(b)} }

// Next decodes the next action and reports whether there is one. It
// returns false at the end and on a malformed action, which Err reports.
func (it *ActionIter) Next() bool {
	if it.err != nil || !it.attrs.Next() {
		if it.err == nil {
			if err := it.attrs.Err(); err != nil {
				it.err = fmt.Errorf("%w: %w", ErrAction, err)
			}
		}
		return false
	}
	it.a = Action{Type: ActionType(it.attrs.Type()), Data: it.attrs.Data()}
	if err := decodeAction(&it.a); err != nil {
		it.err = err
		return false
	}
	return true
}

// Action returns the current action. It points into the iterator and is
// overwritten by the next call to Next.
func (it *ActionIter) Action() *Action { return &it.a }

// Err returns the error that ended the walk, or nil.
func (it *ActionIter) Err() error { return it.err }

// WalkActions calls fn for each action in b, in order, and stops at the
// first error fn returns or the first malformed action. It is ActionIter
// with a callback; the Action passed to fn is reused for the next one.
// Unlike ActionIter it may allocate once per call (fn's argument escapes).
func WalkActions(b []byte, fn func(a *Action) error) error {
	it := NewActionIter(b)
	for it.Next() {
		if err := fn(it.Action()); err != nil {
			return err
		}
	}
	return it.Err()
}

func decodeAction(a *Action) error {
	d := a.Data
	t := a.Type
	if t == 0 || t > actionMax {
		return nil
	}
	if want := int(actionLen[t]); want >= 0 && len(d) != want {
		return actionErr("action %d has %d bytes, want %d", t, len(d), want)
	}
	switch t {
	case ActionOutput:
		a.Port = binary.NativeEndian.Uint32(d)
	case ActionUserspace:
		return decodeUserspace(d, &a.Userspace)
	case ActionSet, ActionSetMasked:
		return decodeSet(a)
	case ActionPushVLAN:
		a.VLAN = flow.VLAN{TPID: binary.BigEndian.Uint16(d), TCI: binary.BigEndian.Uint16(d[2:])}
	case ActionSample:
		it := netlinkio.NewAttrIter(d)
		var seen uint8
		for it.Next() {
			switch it.Type() {
			case sampleAttrProbability:
				a.Prob = it.U32()
				seen |= 1
			case sampleAttrActions:
				a.Actions = it.Data()
				seen |= 2
			}
		}
		if err := it.Err(); err != nil {
			return actionErr("sample: %v", err)
		}
		if seen != 3 {
			return actionErr("sample without probability or actions")
		}
	case ActionRecirc, ActionMeter:
		a.ID = binary.NativeEndian.Uint32(d)
	case ActionHash:
		a.HashAlg = binary.NativeEndian.Uint32(d)
		a.HashBasis = binary.NativeEndian.Uint32(d[4:])
	case ActionPushMPLS, ActionAddMPLS:
		a.MPLSLSE = binary.BigEndian.Uint32(d)
		a.EthType = binary.BigEndian.Uint16(d[4:])
		if t == ActionAddMPLS {
			a.MPLSFlags = binary.NativeEndian.Uint16(d[6:])
		}
	case ActionPopMPLS:
		a.EthType = binary.BigEndian.Uint16(d)
	case ActionCT:
		return decodeCT(d, &a.CT)
	case ActionTrunc:
		a.MaxLen = binary.NativeEndian.Uint32(d)
	case ActionPushEth:
		copy(a.EthSrc[:], d[0:6])
		copy(a.EthDst[:], d[6:12])
	case ActionPushNSH:
		return decodePushNSH(a)
	case ActionClone:
		a.Actions = d
	case ActionCheckPktLen:
		it := netlinkio.NewAttrIter(d)
		var seen uint8
		for it.Next() {
			switch it.Type() {
			case cplAttrPktLen:
				a.PktLen = it.U16()
				seen |= 1
			case cplAttrActionsGreater:
				a.IfGreater = it.Data()
				seen |= 2
			case cplAttrActionsLessEqual:
				a.IfLessEq = it.Data()
				seen |= 4
			}
		}
		if err := it.Err(); err != nil {
			return actionErr("check_pkt_len: %v", err)
		}
		if seen != 7 {
			return actionErr("check_pkt_len without a length or both action lists")
		}
	case ActionDecTTL:
		it := netlinkio.NewAttrIter(d)
		found := false
		for it.Next() {
			if it.Type() == decTTLAttrAction {
				a.Actions = it.Data()
				found = true
			}
		}
		if err := it.Err(); err != nil {
			return actionErr("dec_ttl: %v", err)
		}
		if !found {
			return actionErr("dec_ttl without actions")
		}
	}
	return nil
}

func decodeUserspace(d []byte, u *Userspace) error {
	it := netlinkio.NewAttrIter(d)
	hasPID := false
	for it.Next() {
		switch it.Type() {
		case userspaceAttrPID:
			u.PID = it.U32()
			hasPID = true
		case userspaceAttrUserdata:
			u.Userdata = it.Data()
		case userspaceAttrEgressTunPort:
			u.TunnelOutPort = it.U32()
			u.HasTunnelOutPort = true
		case userspaceAttrActions:
			u.WithActions = true
		}
	}
	if err := it.Err(); err != nil {
		return actionErr("userspace: %v", err)
	}
	if !hasPID {
		return actionErr("userspace without a pid")
	}
	return nil
}

// setAttrLen is the value size of the key attributes a set action may
// carry (kernel validate_set); 0 for the others. The tunnel is nested.
func setAttrLen(t KeyAttr) int {
	switch t {
	case KeyAttrPriority, KeyAttrSkbMark, KeyAttrCtMark:
		return 4
	case KeyAttrCtLabels:
		return sizeLabels
	case KeyAttrEthernet:
		return sizeEthernet
	case KeyAttrIPv4:
		return sizeIPv4
	case KeyAttrIPv6:
		return sizeIPv6
	case KeyAttrTCP, KeyAttrUDP, KeyAttrSCTP:
		return sizeL4Ports
	case KeyAttrMPLS:
		return sizeMPLS
	case KeyAttrARP:
		return sizeARP
	case KeyAttrICMP, KeyAttrICMPv6:
		return sizeICMP
	case KeyAttrND:
		return sizeND
	case KeyAttrTunnel:
		return -1
	}
	return 0
}

func decodeSet(a *Action) error {
	d := a.Data
	it := netlinkio.NewAttrIter(d)
	if !it.Next() {
		if err := it.Err(); err != nil {
			return actionErr("set: %v", err)
		}
		return actionErr("set without a key attribute")
	}
	inner := it.Data()
	if netlinkio.Align(netlinkio.AttrHeaderLen+len(inner)) != len(d) {
		return actionErr("set must hold exactly one key attribute")
	}
	a.SetAttr = it.Type()
	if a.SetAttr == KeyAttrNSH {
		// Nested, each attribute its value and mask (odp_nsh.go); the
		// kernel takes NSH in masked sets only.
		if a.Type != ActionSetMasked {
			return actionErr("set of nsh must be masked")
		}
		var v, m flow.NSH
		if err := DecodeSetNSH(inner, &v, &m); err != nil {
			return err
		}
		a.SetKey = inner
		return nil
	}
	n := setAttrLen(a.SetAttr)
	switch {
	case n == 0:
		return actionErr("set of key attribute %d", a.SetAttr)
	case n < 0:
		if a.Type == ActionSetMasked {
			return actionErr("masked set of the tunnel")
		}
		var t flow.Tunnel
		if err := decodeTunnel(inner, &t); err != nil {
			return fmt.Errorf("%w: set tunnel: %w", ErrAction, err)
		}
		a.SetKey = inner
	case a.Type == ActionSet:
		if len(inner) != n {
			return actionErr("set of key attribute %d: %d bytes, want %d", a.SetAttr, len(inner), n)
		}
		a.SetKey = inner
	default:
		if len(inner) != 2*n {
			return actionErr("masked set of key attribute %d: %d bytes, want %d", a.SetAttr, len(inner), 2*n)
		}
		a.SetKey, a.SetMask = inner[:n:n], inner[n:]
		for i, v := range a.SetKey {
			if v&^a.SetMask[i] != 0 {
				return actionErr("masked set of key attribute %d has value bits outside its mask", a.SetAttr)
			}
		}
	}
	return nil
}

func decodeCT(d []byte, ct *CT) error {
	it := netlinkio.NewAttrIter(d)
	for it.Next() {
		data := it.Data()
		switch it.Type() {
		case ctAttrCommit:
			ct.Commit = true
		case ctAttrForceCommit:
			ct.ForceCommit = true
		case ctAttrZone:
			ct.Zone = it.U16()
		case ctAttrMark:
			if len(data) != 8 {
				return actionErr("ct mark: %d bytes, want 8", len(data))
			}
			ct.Mark = binary.NativeEndian.Uint32(data)
			ct.MarkMask = binary.NativeEndian.Uint32(data[4:])
		case ctAttrLabels:
			if len(data) != 32 {
				return actionErr("ct labels: %d bytes, want 32", len(data))
			}
			copy(ct.Labels[:], data[:16])
			copy(ct.LabelsMask[:], data[16:])
		case ctAttrHelper:
			ct.Helper = cString(data)
		case ctAttrTimeout:
			ct.Timeout = cString(data)
		case ctAttrEventMask:
			ct.EventMask = it.U32()
			ct.HasEventMask = true
		case ctAttrNAT:
			ct.HasNAT = true
			if err := decodeNAT(data, &ct.NAT); err != nil {
				return err
			}
		}
	}
	if err := it.Err(); err != nil {
		return actionErr("ct: %v", err)
	}
	return nil
}

// cString returns b up to its first NUL.
func cString(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i:i]
		}
	}
	return b
}

func decodeNAT(d []byte, n *NAT) error {
	it := netlinkio.NewAttrIter(d)
	for it.Next() {
		data := it.Data()
		switch it.Type() {
		case natAttrSrc:
			n.Src = true
		case natAttrDst:
			n.Dst = true
		case natAttrIPMin, natAttrIPMax:
			var ip netip.Addr
			switch len(data) {
			case 4:
				ip = netip.AddrFrom4([4]byte(data))
			case 16:
				ip = netip.AddrFrom16([16]byte(data))
			default:
				return actionErr("nat address of %d bytes", len(data))
			}
			if it.Type() == natAttrIPMin {
				n.IPMin = ip
			} else {
				n.IPMax = ip
			}
		case natAttrProtoMin:
			n.ProtoMin = it.U16()
		case natAttrProtoMax:
			n.ProtoMax = it.U16()
		case natAttrPersistent:
			n.Persistent = true
		case natAttrProtoHash:
			n.ProtoHash = true
		case natAttrProtoRandom:
			n.ProtoRandom = true
		}
	}
	if err := it.Err(); err != nil {
		return actionErr("nat: %v", err)
	}
	if n.Src && n.Dst {
		return actionErr("nat is both src and dst")
	}
	return nil
}

// ---- Builders.

// AppendOutput appends an output action to datapath port port.
func AppendOutput(b []byte, port uint32) []byte {
	return netlinkio.AppendU32(b, uint16(ActionOutput), port)
}

// AppendUserspace appends a userspace action sending the packet to the
// netlink socket pid with userdata (nil for none).
func AppendUserspace(b []byte, pid uint32, userdata []byte) []byte {
	return AppendUserspaceAction(b, &Userspace{PID: pid, Userdata: userdata})
}

// AppendUserspaceAction appends a userspace action with every option u
// has.
func AppendUserspaceAction(b []byte, u *Userspace) []byte {
	b, start := netlinkio.BeginNested(b, uint16(ActionUserspace))
	b = netlinkio.AppendU32(b, userspaceAttrPID, u.PID)
	if u.Userdata != nil {
		b = netlinkio.AppendAttr(b, userspaceAttrUserdata, u.Userdata)
	}
	if u.HasTunnelOutPort {
		b = netlinkio.AppendU32(b, userspaceAttrEgressTunPort, u.TunnelOutPort)
	}
	if u.WithActions {
		b = netlinkio.AppendFlag(b, userspaceAttrActions)
	}
	return netlinkio.EndNested(b, start)
}

// AppendPushVLAN appends a push_vlan action for a tag with TPID tpid
// (0x8100 or 0x88a8) and TCI tci. The kernel requires the TCI's
// flow.VLANPresent bit, so it is set here; it is not written to the wire.
func AppendPushVLAN(b []byte, tpid, tci uint16) []byte {
	b, p := netlinkio.AppendReserve(b, uint16(ActionPushVLAN), 4)
	binary.BigEndian.PutUint16(p, tpid)
	binary.BigEndian.PutUint16(p[2:], tci|flow.VLANPresent)
	return b
}

// AppendPopVLAN appends a pop_vlan action.
func AppendPopVLAN(b []byte) []byte { return netlinkio.AppendFlag(b, uint16(ActionPopVLAN)) }

// AppendSet appends a set action that writes key attribute attr, filled
// from k: KeyAttrEthernet (addresses), KeyAttrIPv4 (addresses, TOS, TTL;
// the protocol and fragment type must equal the flow's), KeyAttrIPv6,
// KeyAttrTCP, KeyAttrUDP, KeyAttrSCTP (ports), KeyAttrMPLS (top label
// stack entry), KeyAttrPriority, KeyAttrSkbMark, KeyAttrCtMark,
// KeyAttrCtLabels, or KeyAttrTunnel (the tunnel to encapsulate in on
// output). Any other attr is a programming error and panics.
func AppendSet(b []byte, attr KeyAttr, k *flow.Key) []byte {
	n := setAttrLen(attr)
	if n == 0 {
		panic(fmt.Sprintf("datapath: set of key attribute %d", attr))
	}
	b, start := netlinkio.BeginNested(b, uint16(ActionSet))
	if n < 0 {
		b = appendTunnel(b, KeyAttrTunnel, &k.Tunnel, &k.Tunnel, false)
	} else {
		var p []byte
		b, p = netlinkio.AppendReserve(b, attr, n)
		putSetValue(p, attr, k)
	}
	return netlinkio.EndNested(b, start)
}

// AppendSetMasked appends a masked set action that writes the bits m
// selects of key attribute attr from k (see AppendSet for the attributes;
// the tunnel cannot be masked and panics). The value is written masked, as
// the kernel requires, and the IP protocol, fragment type and flow label
// bits above 20, which the kernel does not let a set change, are left out
// of the mask.
func AppendSetMasked(b []byte, attr KeyAttr, k *flow.Key, m *flow.Mask) []byte {
	n := setAttrLen(attr)
	if n <= 0 {
		panic(fmt.Sprintf("datapath: masked set of key attribute %d", attr))
	}
	mm := *m
	mm.NwProto, mm.NwFrag = 0, 0
	mm.IPv6Label &= 0x000fffff
	v := k.Apply(&mm)
	b, start := netlinkio.BeginNested(b, uint16(ActionSetMasked))
	b, p := netlinkio.AppendReserve(b, attr, 2*n)
	putSetValue(p[:n], attr, &v)
	putSetValue(p[n:], attr, mm.Key())
	return netlinkio.EndNested(b, start)
}

// AppendSetAttr appends a set action carrying the raw payload data of key
// attribute attr, for attributes the typed builders do not cover.
func AppendSetAttr(b []byte, attr KeyAttr, data []byte) []byte {
	b, start := netlinkio.BeginNested(b, uint16(ActionSet))
	b = netlinkio.AppendAttr(b, attr, data)
	return netlinkio.EndNested(b, start)
}

// AppendSetMaskedAttr appends a masked set action carrying raw value and
// mask payloads of equal length for key attribute attr.
func AppendSetMaskedAttr(b []byte, attr KeyAttr, value, mask []byte) []byte {
	b, start := netlinkio.BeginNested(b, uint16(ActionSetMasked))
	b, p := netlinkio.AppendReserve(b, attr, len(value)+len(mask))
	copy(p, value)
	copy(p[len(value):], mask)
	return netlinkio.EndNested(b, start)
}

// putSetValue writes the struct ovs_key_* of attr from v into p.
func putSetValue(p []byte, attr KeyAttr, v *flow.Key) {
	switch attr {
	case KeyAttrPriority:
		binary.NativeEndian.PutUint32(p, v.Priority)
	case KeyAttrSkbMark:
		binary.NativeEndian.PutUint32(p, v.Mark)
	case KeyAttrCtMark:
		binary.NativeEndian.PutUint32(p, v.CtMark)
	case KeyAttrCtLabels:
		copy(p, v.CtLabels[:])
	case KeyAttrEthernet:
		copy(p[0:6], v.EthSrc[:])
		copy(p[6:12], v.EthDst[:])
	case KeyAttrIPv4:
		copy(p[0:4], v.IPv4Src[:])
		copy(p[4:8], v.IPv4Dst[:])
		p[8], p[9], p[10], p[11] = v.NwProto, v.NwTos, v.NwTTL, fragToODP(v.NwFrag)
	case KeyAttrIPv6:
		copy(p[0:16], v.IPv6Src[:])
		copy(p[16:32], v.IPv6Dst[:])
		binary.BigEndian.PutUint32(p[32:], v.IPv6Label)
		p[36], p[37], p[38], p[39] = v.NwProto, v.NwTos, v.NwTTL, fragToODP(v.NwFrag)
	case KeyAttrTCP, KeyAttrUDP, KeyAttrSCTP:
		binary.BigEndian.PutUint16(p, v.TpSrc)
		binary.BigEndian.PutUint16(p[2:], v.TpDst)
	case KeyAttrMPLS:
		binary.BigEndian.PutUint32(p, v.MPLSLSE)
	case KeyAttrARP, KeyAttrICMP, KeyAttrICMPv6, KeyAttrND:
		putSlowSetValue(p, attr, v) // odpaction_slow.go
	}
}

// DecodeSet decodes the value and mask of a set or masked set action into
// the fields of k and m it covers (m all ones over them for a plain set);
// other fields are left alone. A tunnel set fills k.Tunnel.
func (a *Action) DecodeSet(k *flow.Key, m *flow.Mask) error {
	if a.Type != ActionSet && a.Type != ActionSetMasked {
		return actionErr("DecodeSet of action %d", a.Type)
	}
	if a.SetAttr == KeyAttrNSH {
		return DecodeSetNSH(a.SetKey, &k.NSH, &m.NSH)
	}
	if a.SetAttr == KeyAttrTunnel {
		k.Tunnel = flow.Tunnel{}
		m.Tunnel = flow.Tunnel{}
		if err := decodeTunnel(a.SetKey, &k.Tunnel); err != nil {
			return err
		}
		exact := flow.ExactMask()
		m.Tunnel = exact.Tunnel
		return nil
	}
	getSetValue(a.SetKey, a.SetAttr, k)
	if a.SetMask != nil {
		getSetValue(a.SetMask, a.SetAttr, m.Key())
		// A mask's frag byte is a bit mask, not a fragment type.
		if a.SetAttr == KeyAttrIPv4 || a.SetAttr == KeyAttrIPv6 {
			m.NwFrag = 0
			if a.SetMask[len(a.SetMask)-1] != 0 {
				m.NwFrag = flow.FragAny | flow.FragLater
			}
		}
	} else {
		fillSetMask(a.SetAttr, m)
	}
	return nil
}

// getSetValue reads the struct ovs_key_* of attr from p into v.
func getSetValue(p []byte, attr KeyAttr, v *flow.Key) {
	switch attr {
	case KeyAttrPriority:
		v.Priority = binary.NativeEndian.Uint32(p)
	case KeyAttrSkbMark:
		v.Mark = binary.NativeEndian.Uint32(p)
	case KeyAttrCtMark:
		v.CtMark = binary.NativeEndian.Uint32(p)
	case KeyAttrCtLabels:
		copy(v.CtLabels[:], p)
	case KeyAttrEthernet:
		copy(v.EthSrc[:], p[0:6])
		copy(v.EthDst[:], p[6:12])
	case KeyAttrIPv4:
		copy(v.IPv4Src[:], p[0:4])
		copy(v.IPv4Dst[:], p[4:8])
		v.NwProto, v.NwTos, v.NwTTL = p[8], p[9], p[10]
		v.NwFrag = fragFromODP(p[11])
	case KeyAttrIPv6:
		copy(v.IPv6Src[:], p[0:16])
		copy(v.IPv6Dst[:], p[16:32])
		v.IPv6Label = binary.BigEndian.Uint32(p[32:])
		v.NwProto, v.NwTos, v.NwTTL = p[36], p[37], p[38]
		v.NwFrag = fragFromODP(p[39])
	case KeyAttrTCP, KeyAttrUDP, KeyAttrSCTP:
		v.TpSrc = binary.BigEndian.Uint16(p)
		v.TpDst = binary.BigEndian.Uint16(p[2:])
	case KeyAttrMPLS:
		v.MPLSLSE = binary.BigEndian.Uint32(p)
	case KeyAttrARP, KeyAttrICMP, KeyAttrICMPv6, KeyAttrND:
		getSlowSetValue(p, attr, v) // odpaction_slow.go
	}
}

func fragFromODP(f uint8) uint8 {
	switch f {
	case fragFirst:
		return flow.FragAny
	case fragLater:
		return flow.FragAny | flow.FragLater
	}
	return 0
}

// fillSetMask sets every bit of m that a plain set of attr writes.
func fillSetMask(attr KeyAttr, m *flow.Mask) {
	e := flow.ExactMask()
	switch attr {
	case KeyAttrPriority:
		m.Priority = e.Priority
	case KeyAttrSkbMark:
		m.Mark = e.Mark
	case KeyAttrCtMark:
		m.CtMark = e.CtMark
	case KeyAttrCtLabels:
		m.CtLabels = e.CtLabels
	case KeyAttrEthernet:
		m.EthSrc, m.EthDst = e.EthSrc, e.EthDst
	case KeyAttrIPv4:
		m.IPv4Src, m.IPv4Dst, m.NwTos, m.NwTTL = e.IPv4Src, e.IPv4Dst, e.NwTos, e.NwTTL
	case KeyAttrIPv6:
		m.IPv6Src, m.IPv6Dst, m.NwTos, m.NwTTL = e.IPv6Src, e.IPv6Dst, e.NwTos, e.NwTTL
		m.IPv6Label = 0x000fffff
	case KeyAttrTCP, KeyAttrUDP, KeyAttrSCTP:
		m.TpSrc, m.TpDst = e.TpSrc, e.TpDst
	case KeyAttrMPLS:
		m.MPLSLSE = e.MPLSLSE
	case KeyAttrARP:
		m.IPv4Src, m.IPv4Dst, m.NwProto, m.ArpSHA, m.ArpTHA = e.IPv4Src, e.IPv4Dst, e.NwProto, e.ArpSHA, e.ArpTHA
	case KeyAttrICMP, KeyAttrICMPv6:
		m.TpSrc, m.TpDst = 0x00ff, 0x00ff
	case KeyAttrND:
		m.NDTarget, m.NDSLL, m.NDTLL = e.NDTarget, e.NDSLL, e.NDTLL
	}
}

// AppendMeteredUserspace appends a userspace action to pid with userdata
// that only the packets datapath meter meterID passes reach, the meter's
// drop ending only the userspace action: sample(sample=100%,
// actions(meter(meterID),userspace(...))), as ovs-vswitchd meters
// packet-ins. It does not allocate once b has room.
func AppendMeteredUserspace(b []byte, meterID, pid uint32, userdata []byte) []byte {
	b, start := netlinkio.BeginNested(b, uint16(ActionSample))
	b = netlinkio.AppendU32(b, sampleAttrProbability, 0xffffffff)
	b, acts := netlinkio.BeginNested(b, sampleAttrActions)
	b = AppendMeter(b, meterID)
	b = AppendUserspace(b, pid, userdata)
	b = netlinkio.EndNested(b, acts)
	return netlinkio.EndNested(b, start)
}

// AppendSample appends a sample action that runs actions on a fraction
// probability/0xffffffff of packets (0xffffffff: all of them).
func AppendSample(b []byte, probability uint32, actions []byte) []byte {
	b, start := netlinkio.BeginNested(b, uint16(ActionSample))
	b = netlinkio.AppendU32(b, sampleAttrProbability, probability)
	b = netlinkio.AppendAttr(b, sampleAttrActions, actions)
	return netlinkio.EndNested(b, start)
}

// AppendRecirc appends a recirc action: look the packet up again with its
// key's recirculation ID set to id.
func AppendRecirc(b []byte, id uint32) []byte {
	return netlinkio.AppendU32(b, uint16(ActionRecirc), id)
}

// AppendHash appends a hash action that computes the packet's dp_hash with
// algorithm alg (HashAlgL4) and basis.
func AppendHash(b []byte, alg, basis uint32) []byte {
	b, p := netlinkio.AppendReserve(b, uint16(ActionHash), 8)
	binary.NativeEndian.PutUint32(p, alg)
	binary.NativeEndian.PutUint32(p[4:], basis)
	return b
}

// AppendPushMPLS appends a push_mpls action pushing label stack entry lse
// and setting the ethertype to ethType (0x8847 or 0x8848).
func AppendPushMPLS(b []byte, lse uint32, ethType uint16) []byte {
	// sizeof(struct ovs_action_push_mpls) is 8: the kernel wants the
	// struct's tail padding too.
	b, p := netlinkio.AppendReserve(b, uint16(ActionPushMPLS), 8)
	binary.BigEndian.PutUint32(p, lse)
	binary.BigEndian.PutUint16(p[4:], ethType)
	return b
}

// AppendAddMPLS appends an add_mpls action: push_mpls that inserts the
// entry before the L3 header when flags has MPLSL3Tunnel.
func AppendAddMPLS(b []byte, lse uint32, ethType, flags uint16) []byte {
	b, p := netlinkio.AppendReserve(b, uint16(ActionAddMPLS), 8)
	binary.BigEndian.PutUint32(p, lse)
	binary.BigEndian.PutUint16(p[4:], ethType)
	binary.NativeEndian.PutUint16(p[6:], flags)
	return b
}

// AppendPopMPLS appends a pop_mpls action that sets the ethertype to
// ethType once the top label stack entry is gone.
func AppendPopMPLS(b []byte, ethType uint16) []byte {
	return netlinkio.AppendBE16(b, uint16(ActionPopMPLS), ethType)
}

// AppendCT appends a ct action.
func AppendCT(b []byte, ct *CT) []byte {
	b, start := netlinkio.BeginNested(b, uint16(ActionCT))
	if ct.Commit {
		b = netlinkio.AppendFlag(b, ctAttrCommit)
	}
	if ct.ForceCommit {
		b = netlinkio.AppendFlag(b, ctAttrForceCommit)
	}
	if ct.Zone != 0 {
		b = netlinkio.AppendU16(b, ctAttrZone, ct.Zone)
	}
	if ct.MarkMask != 0 {
		var p []byte
		b, p = netlinkio.AppendReserve(b, ctAttrMark, 8)
		binary.NativeEndian.PutUint32(p, ct.Mark)
		binary.NativeEndian.PutUint32(p[4:], ct.MarkMask)
	}
	if ct.LabelsMask != [16]byte{} {
		var p []byte
		b, p = netlinkio.AppendReserve(b, ctAttrLabels, 32)
		copy(p, ct.Labels[:])
		copy(p[16:], ct.LabelsMask[:])
	}
	if len(ct.Helper) != 0 {
		b = appendCString(b, ctAttrHelper, ct.Helper)
	}
	if len(ct.Timeout) != 0 {
		b = appendCString(b, ctAttrTimeout, ct.Timeout)
	}
	if ct.HasEventMask {
		b = netlinkio.AppendU32(b, ctAttrEventMask, ct.EventMask)
	}
	if ct.HasNAT {
		b = appendNAT(b, &ct.NAT)
	}
	return netlinkio.EndNested(b, start)
}

func appendCString(b []byte, typ uint16, s []byte) []byte {
	b, p := netlinkio.AppendReserve(b, typ, len(s)+1)
	copy(p, s) // the reserved payload is zeroed: the NUL is there
	return b
}

func appendNAT(b []byte, n *NAT) []byte {
	b, start := netlinkio.BeginNested(b, ctAttrNAT)
	if n.Src {
		b = netlinkio.AppendFlag(b, natAttrSrc)
	}
	if n.Dst {
		b = netlinkio.AppendFlag(b, natAttrDst)
	}
	b = appendAddr(b, natAttrIPMin, n.IPMin)
	b = appendAddr(b, natAttrIPMax, n.IPMax)
	if n.ProtoMin != 0 {
		b = netlinkio.AppendU16(b, natAttrProtoMin, n.ProtoMin)
	}
	if n.ProtoMax != 0 {
		b = netlinkio.AppendU16(b, natAttrProtoMax, n.ProtoMax)
	}
	if n.Persistent {
		b = netlinkio.AppendFlag(b, natAttrPersistent)
	}
	if n.ProtoHash {
		b = netlinkio.AppendFlag(b, natAttrProtoHash)
	}
	if n.ProtoRandom {
		b = netlinkio.AppendFlag(b, natAttrProtoRandom)
	}
	return netlinkio.EndNested(b, start)
}

func appendAddr(b []byte, typ uint16, ip netip.Addr) []byte {
	switch {
	case ip.Is4():
		a := ip.As4()
		return netlinkio.AppendAttr(b, typ, a[:])
	case ip.Is6():
		a := ip.As16()
		return netlinkio.AppendAttr(b, typ, a[:])
	}
	return b
}

// AppendCTClear appends a ct_clear action.
func AppendCTClear(b []byte) []byte { return netlinkio.AppendFlag(b, uint16(ActionCTClear)) }

// AppendTrunc appends a trunc action: later outputs send at most maxLen
// bytes (the kernel requires at least 14).
func AppendTrunc(b []byte, maxLen uint32) []byte {
	return netlinkio.AppendU32(b, uint16(ActionTrunc), maxLen)
}

// AppendPushEth appends a push_eth action adding an Ethernet header to a
// packet that has none.
func AppendPushEth(b []byte, src, dst [6]byte) []byte {
	b, p := netlinkio.AppendReserve(b, uint16(ActionPushEth), 12)
	copy(p, src[:])
	copy(p[6:], dst[:])
	return b
}

// AppendPopEth appends a pop_eth action.
func AppendPopEth(b []byte) []byte { return netlinkio.AppendFlag(b, uint16(ActionPopEth)) }

// AppendPopNSH appends a pop_nsh action.
func AppendPopNSH(b []byte) []byte { return netlinkio.AppendFlag(b, uint16(ActionPopNSH)) }

// AppendMeter appends a meter action through meter id.
func AppendMeter(b []byte, id uint32) []byte {
	return netlinkio.AppendU32(b, uint16(ActionMeter), id)
}

// AppendClone appends a clone action: run actions on a copy of the
// packet, leaving the original and its key as they were.
func AppendClone(b []byte, actions []byte) []byte {
	return netlinkio.AppendAttr(b, uint16(ActionClone), actions)
}

// AppendCheckPktLen appends a check_pkt_len action: ifGreater runs for
// packets longer than pktLen bytes, ifLessEqual for the others. pktLen
// must not be zero.
func AppendCheckPktLen(b []byte, pktLen uint16, ifGreater, ifLessEqual []byte) []byte {
	b, start := netlinkio.BeginNested(b, uint16(ActionCheckPktLen))
	b = netlinkio.AppendU16(b, cplAttrPktLen, pktLen)
	b = netlinkio.AppendAttr(b, cplAttrActionsGreater, ifGreater)
	b = netlinkio.AppendAttr(b, cplAttrActionsLessEqual, ifLessEqual)
	return netlinkio.EndNested(b, start)
}

// AppendDecTTL appends a dec_ttl action: decrement the IP TTL or hop
// limit, running actions (usually a userspace action) instead when it
// would reach zero.
func AppendDecTTL(b []byte, actions []byte) []byte {
	b, start := netlinkio.BeginNested(b, uint16(ActionDecTTL))
	b = netlinkio.AppendAttr(b, decTTLAttrAction, actions)
	return netlinkio.EndNested(b, start)
}

// AppendAction appends a as decoded by ActionIter, re-encoded by the
// builders: a decoded action list can be copied, filtered or rewritten
// action by action. Nested action lists and unknown actions are copied as
// they are; a push_vlan gains the present bit the kernel requires.
func AppendAction(b []byte, a *Action) []byte {
	switch a.Type {
	case ActionOutput:
		return AppendOutput(b, a.Port)
	case ActionUserspace:
		return AppendUserspaceAction(b, &a.Userspace)
	case ActionSet:
		if a.SetAttr == KeyAttrTunnel {
			b, start := netlinkio.BeginNested(b, uint16(ActionSet))
			b = netlinkio.AppendAttr(b, KeyAttrTunnel, a.SetKey)
			return netlinkio.EndNested(b, start)
		}
		return AppendSetAttr(b, a.SetAttr, a.SetKey)
	case ActionSetMasked:
		return AppendSetMaskedAttr(b, a.SetAttr, a.SetKey, a.SetMask)
	case ActionPushVLAN:
		return AppendPushVLAN(b, a.VLAN.TPID, a.VLAN.TCI)
	case ActionPopVLAN:
		return AppendPopVLAN(b)
	case ActionSample:
		return AppendSample(b, a.Prob, a.Actions)
	case ActionRecirc:
		return AppendRecirc(b, a.ID)
	case ActionHash:
		return AppendHash(b, a.HashAlg, a.HashBasis)
	case ActionPushMPLS:
		return AppendPushMPLS(b, a.MPLSLSE, a.EthType)
	case ActionAddMPLS:
		return AppendAddMPLS(b, a.MPLSLSE, a.EthType, a.MPLSFlags)
	case ActionPopMPLS:
		return AppendPopMPLS(b, a.EthType)
	case ActionCT:
		return AppendCT(b, &a.CT)
	case ActionTrunc:
		return AppendTrunc(b, a.MaxLen)
	case ActionPushEth:
		return AppendPushEth(b, a.EthSrc, a.EthDst)
	case ActionPopEth:
		return AppendPopEth(b)
	case ActionCTClear:
		return AppendCTClear(b)
	case ActionPopNSH:
		return AppendPopNSH(b)
	case ActionPushNSH:
		return AppendPushNSH(b, &a.NSH, a.NSHMD2)
	case ActionMeter:
		return AppendMeter(b, a.ID)
	case ActionClone:
		return AppendClone(b, a.Actions)
	case ActionCheckPktLen:
		return AppendCheckPktLen(b, a.PktLen, a.IfGreater, a.IfLessEq)
	case ActionDecTTL:
		return AppendDecTTL(b, a.Actions)
	}
	return netlinkio.AppendAttr(b, uint16(a.Type), a.Data)
}
