package openflow

import (
	"fmt"

	"github.com/govswitch/govswitch/flow"
)

// OpenFlow 1.1 action types (OFPAT11_*) that differ from 1.3: 1.1 still
// has one action per field it can rewrite, and no set_field. Types 11-24
// (TTLs, push/pop, set_queue, group) are numbered as in 1.3.
const (
	Act11SetVLANVID uint16 = 1
	Act11SetVLANPCP uint16 = 2
	Act11SetDlSrc   uint16 = 3
	Act11SetDlDst   uint16 = 4
	Act11SetNwSrc   uint16 = 5
	Act11SetNwDst   uint16 = 6
	Act11SetNwTos   uint16 = 7
	Act11SetNwECN   uint16 = 8
	Act11SetTpSrc   uint16 = 9
	Act11SetTpDst   uint16 = 10
)

// DecodeActions11 appends the OpenFlow 1.1 actions in b (an action list of
// exactly len(b) bytes) to dst. The field-rewriting actions decode as
// ActSetField, as their 1.0 counterparts do.
func DecodeActions11(dst []Action, b []byte) ([]Action, error) {
	const v = Version11
	for len(b) > 0 {
		act, typ, rest, err := splitAction(v, b)
		if err != nil {
			return dst, err
		}
		b = rest
		want := 8
		switch typ {
		case Act13Output, Act11SetDlSrc, Act11SetDlDst:
			want = 16
		case ActVendorType:
			want = len(act)
		}
		if len(act) != want {
			return dst, errOf(v, kActBadLen, "action type %d: length %d, want %d", typ, len(act), want)
		}
		setf := func(f Field, val []byte) Action {
			a := Action{Type: ActSetField, Field: f}
			copy(a.Value[:], val)
			return a
		}
		var a Action
		switch typ {
		case Act11SetVLANVID:
			vid := u16(act[4:])
			if vid > flow.VLANVIDMask {
				return dst, errOf(v, kActBadArgument, "set_vlan_vid %d", vid)
			}
			a = setf(FieldVLANVID, act[4:6])
		case Act11SetVLANPCP:
			if act[4] > 7 {
				return dst, errOf(v, kActBadArgument, "set_vlan_pcp %d", act[4])
			}
			a = setf(FieldVLANPCP, act[4:5])
		case Act11SetDlSrc:
			a = setf(FieldEthSrc, act[4:10])
		case Act11SetDlDst:
			a = setf(FieldEthDst, act[4:10])
		case Act11SetNwSrc:
			a = setf(FieldIPv4Src, act[4:8])
		case Act11SetNwDst:
			a = setf(FieldIPv4Dst, act[4:8])
		case Act11SetNwTos:
			if act[4]&3 != 0 {
				return dst, errOf(v, kActBadArgument, "set_nw_tos %#02x touches ECN bits", act[4])
			}
			a = setf(FieldIPTOS, act[4:5])
		case Act11SetTpSrc:
			a = setf(FieldTpSrc, act[4:6])
		case Act11SetTpDst:
			a = setf(FieldTpDst, act[4:6])
		case Act13Output:
			a = Action{Type: ActOutput, Port: u32(act[4:]), MaxLen: u16(act[8:])}
		case Act13CopyTTLOut:
			a = Action{Type: ActCopyTTLOut}
		case Act13CopyTTLIn:
			a = Action{Type: ActCopyTTLIn}
		case Act13SetMPLSTTL:
			a = Action{Type: ActSetMPLSTTL, TTL: act[4]}
		case Act13DecMPLSTTL:
			a = Action{Type: ActDecMPLSTTL}
		case Act13PushVLAN:
			a = Action{Type: ActPushVLAN, EthType: u16(act[4:])}
			if a.EthType != flow.EthTypeVLAN && a.EthType != flow.EthTypeQinQ {
				return dst, errOf(v, kActBadArgument, "push_vlan ethertype %#04x", a.EthType)
			}
		case Act13PopVLAN:
			a = Action{Type: ActStripVLAN}
		case Act13PushMPLS:
			a = Action{Type: ActPushMPLS, EthType: u16(act[4:])}
			if a.EthType != flow.EthTypeMPLS && a.EthType != flow.EthTypeMPLSM {
				return dst, errOf(v, kActBadArgument, "push_mpls ethertype %#04x", a.EthType)
			}
		case Act13PopMPLS:
			a = Action{Type: ActPopMPLS, EthType: u16(act[4:])}
		case Act13SetQueue:
			a = Action{Type: ActSetQueue, Queue: u32(act[4:])}
		case Act13Group:
			a = Action{Type: ActGroup, Group: u32(act[4:])}
		case Act13SetNwTTL:
			a = Action{Type: ActSetNwTTL, TTL: act[4]}
		case Act13DecNwTTL:
			a = Action{Type: ActDecNwTTL}
		case ActVendorType:
			if a, err = decodeVendorAction(v, act); err != nil {
				return dst, err
			}
		default:
			// set_nw_ecn and the MPLS label/TC setters have no field
			// here to set: refused, not ignored.
			return dst, errOf(v, kActBadType, "action type %d", typ)
		}
		dst = append(dst, a)
	}
	return dst, nil
}

// AppendActions11 appends acts as an OpenFlow 1.1 action list: set_field
// becomes the field's own 1.1 action where it has one, else Nicira loads
// (as for 1.0); enqueue becomes set_queue then output.
func AppendActions11(b []byte, acts []Action) ([]byte, error) {
	start := len(b)
	for i := range acts {
		var err error
		if b, err = appendAction11(b, &acts[i]); err != nil {
			return b[:start], err
		}
	}
	return b, nil
}

func appendAction11(b []byte, a *Action) ([]byte, error) {
	switch a.Type {
	case ActSetVLANVID:
		return be16(be16(act13(b, Act11SetVLANVID, 8), a.VLANVID&flow.VLANVIDMask), 0), nil
	case ActSetVLANPCP:
		return append(act13(b, Act11SetVLANPCP, 8), a.VLANPCP&7, 0, 0, 0), nil
	case ActSetField:
		if a.Masked && !legacySetField(a.Field) {
			return appendLoadSegments(b, a)
		}
		return appendSetField11(b, a)
	case ActResubmit, ActRegLoad, ActRegMove, ActVendor:
		return appendNXAction(b, a)
	case ActClone:
		return appendExtAction(b, a, Version11)
	}
	// The rest is numbered and laid out as in 1.3.
	return appendAction13(b, a, Version11)
}

func appendSetField11(b []byte, a *Action) ([]byte, error) {
	k, ok := a.setFieldKey()
	if !ok {
		return b, fmt.Errorf("openflow: set_field %s: bad value: %w", a.Field, ErrUnsupported)
	}
	switch a.Field {
	case FieldEthSrc, FieldEthDst:
		t, mac := Act11SetDlSrc, k.EthSrc
		if a.Field == FieldEthDst {
			t, mac = Act11SetDlDst, k.EthDst
		}
		return zeros(append(act13(b, t, 16), mac[:]...), 6), nil
	case FieldIPv4Src, FieldIPv4Dst:
		t, ip := Act11SetNwSrc, k.IPv4Src
		if a.Field == FieldIPv4Dst {
			t, ip = Act11SetNwDst, k.IPv4Dst
		}
		return append(act13(b, t, 8), ip[:]...), nil
	case FieldIPTOS, FieldIPDSCP:
		return append(act13(b, Act11SetNwTos, 8), k.NwTos&0xfc, 0, 0, 0), nil
	case FieldTpSrc, FieldTCPSrc, FieldUDPSrc, FieldSCTPSrc:
		return be16(be16(act13(b, Act11SetTpSrc, 8), k.TpSrc), 0), nil
	case FieldTpDst, FieldTCPDst, FieldUDPDst, FieldSCTPDst:
		return be16(be16(act13(b, Act11SetTpDst, 8), k.TpDst), 0), nil
	case FieldVLANVID:
		return be16(be16(act13(b, Act11SetVLANVID, 8), k.VLANs[0].TCI&flow.VLANVIDMask), 0), nil
	case FieldVLANPCP:
		return append(act13(b, Act11SetVLANPCP, 8), byte(k.VLANs[0].TCI>>13), 0, 0, 0), nil
	}
	// Tunnel ids and everything else NXM names: Nicira actions, which
	// read the same in 1.0 and 1.1.
	return appendSetField10(b, a)
}

// DecodeInstructions11 parses an OpenFlow 1.1 instruction list of exactly
// len(b) bytes into in (which it resets). 1.1 numbers its instructions as
// 1.3 does but has no meter instruction, and its action lists are 1.1's.
func DecodeInstructions11(b []byte, in *Instructions) error {
	return decodeInstructions(Version11, b, in, DecodeActions11)
}

// AppendInstructions11 appends in as an OpenFlow 1.1 instruction list, in
// the order the pipeline runs them. A meter instruction fails: 1.1 has none.
func AppendInstructions11(b []byte, in *Instructions) ([]byte, error) {
	if in.Meter != 0 {
		return b, fmt.Errorf("openflow: meter instruction in OpenFlow 1.1: %w", ErrUnsupported)
	}
	return appendInstructions(b, len(b), in, AppendActions11)
}
