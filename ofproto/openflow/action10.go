package openflow

import (
	"fmt"

	"github.com/govswitch/govswitch/flow"
)

// OpenFlow 1.0 action types (OFPAT_*).
const (
	Act10Output     uint16 = 0
	Act10SetVLANVID uint16 = 1
	Act10SetVLANPCP uint16 = 2
	Act10StripVLAN  uint16 = 3
	Act10SetDlSrc   uint16 = 4
	Act10SetDlDst   uint16 = 5
	Act10SetNwSrc   uint16 = 6
	Act10SetNwDst   uint16 = 7
	Act10SetNwTos   uint16 = 8
	Act10SetTpSrc   uint16 = 9
	Act10SetTpDst   uint16 = 10
	Act10Enqueue    uint16 = 11
	ActVendorType   uint16 = 0xffff // OFPAT_VENDOR / OFPAT_EXPERIMENTER
)

// Nicira action subtypes (NXAST_*) this codec models.
const (
	NXASTResubmit      uint16 = 1
	NXASTSetTunnel     uint16 = 2
	NXASTSetQueue      uint16 = 4
	NXASTRegMove       uint16 = 6
	NXASTRegLoad       uint16 = 7
	NXASTRegLoad2      uint16 = 33
	NXASTSetTunnel64   uint16 = 9
	NXASTResubmitTable uint16 = 14
	// NXASTResubmitTableCT is resubmit(port,table,ct): the lookup sees the
	// conntrack original-direction tuple in place of the packet's
	// addresses, protocol and ports (OVS 2.8+).
	NXASTResubmitTableCT uint16 = 44
	NXASTDecTTL          uint16 = 18
	NXASTGroup           uint16 = 40 // group action in OpenFlow 1.0 (OVS)
)

// splitAction returns the first action of b, its type, and the rest, after
// checking its length: at least 8, a multiple of 8, within b.
func splitAction(v uint8, b []byte) (act []byte, typ uint16, rest []byte, err error) {
	if len(b) < 8 {
		return nil, 0, nil, errOf(v, kActBadLen, "%d trailing bytes in action list", len(b))
	}
	typ, n := u16(b), int(u16(b[2:]))
	if n < 8 || n%8 != 0 || n > len(b) {
		return nil, 0, nil, errOf(v, kActBadLen, "action type %d: length %d in %d bytes", typ, n, len(b))
	}
	return b[:n], typ, b[n:], nil
}

// DecodeActions10 appends the OpenFlow 1.0 actions in b (an action list of
// exactly len(b) bytes) to dst. Vendor actions other than the Nicira ones
// this codec models decode as ActVendor.
func DecodeActions10(dst []Action, b []byte) ([]Action, error) {
	for len(b) > 0 {
		act, typ, rest, err := splitAction(Version10, b)
		if err != nil {
			return dst, err
		}
		b = rest
		want := 8
		switch typ {
		case Act10SetDlSrc, Act10SetDlDst, Act10Enqueue:
			want = 16
		case ActVendorType:
			want = len(act)
		}
		if len(act) != want {
			return dst, errOf(Version10, kActBadLen, "action type %d: length %d, want %d", typ, len(act), want)
		}
		var a Action
		switch typ {
		case Act10Output:
			a = Action{Type: ActOutput, Port: Port10To32(u16(act[4:])), MaxLen: u16(act[6:])}
		case Act10SetVLANVID:
			vid := u16(act[4:])
			if vid > flow.VLANVIDMask {
				return dst, errOf(Version10, kActBadArgument, "set_vlan_vid %d", vid)
			}
			a = Action{Type: ActSetVLANVID, VLANVID: vid}
		case Act10SetVLANPCP:
			if act[4] > 7 {
				return dst, errOf(Version10, kActBadArgument, "set_vlan_pcp %d", act[4])
			}
			a = Action{Type: ActSetVLANPCP, VLANPCP: act[4]}
		case Act10StripVLAN:
			a = Action{Type: ActStripVLAN}
		case Act10SetDlSrc, Act10SetDlDst:
			f := FieldEthSrc
			if typ == Act10SetDlDst {
				f = FieldEthDst
			}
			a = Action{Type: ActSetField, Field: f}
			copy(a.Value[:], act[4:10])
		case Act10SetNwSrc, Act10SetNwDst:
			f := FieldIPv4Src
			if typ == Act10SetNwDst {
				f = FieldIPv4Dst
			}
			a = Action{Type: ActSetField, Field: f}
			copy(a.Value[:], act[4:8])
		case Act10SetNwTos:
			if act[4]&3 != 0 {
				return dst, errOf(Version10, kActBadArgument, "set_nw_tos %#02x touches ECN bits", act[4])
			}
			a = Action{Type: ActSetField, Field: FieldIPTOS}
			a.Value[0] = act[4]
		case Act10SetTpSrc, Act10SetTpDst:
			f := FieldTpSrc
			if typ == Act10SetTpDst {
				f = FieldTpDst
			}
			a = Action{Type: ActSetField, Field: f}
			copy(a.Value[:], act[4:6])
		case Act10Enqueue:
			a = Action{Type: ActEnqueue, Port: Port10To32(u16(act[4:])), Queue: u32(act[12:])}
		case ActVendorType:
			a, err = decodeVendorAction(Version10, act)
			if err != nil {
				return dst, err
			}
		default:
			return dst, errOf(Version10, kActBadType, "action type %d", typ)
		}
		dst = append(dst, a)
	}
	return dst, nil
}

// decodeVendorAction decodes a whole vendor/experimenter action (len >= 8).
func decodeVendorAction(v uint8, act []byte) (Action, error) {
	vendor := u32(act[4:])
	if vendor != NXVendorID || len(act) < 16 {
		return Action{Type: ActVendor, Vendor: vendor, Data: act[8:]}, nil
	}
	sub := u16(act[8:])
	need := func(n int) error {
		if len(act) != n {
			return errOf(v, kActBadLen, "Nicira action %d: length %d, want %d", sub, len(act), n)
		}
		return nil
	}
	switch sub {
	case NXASTStackPush, NXASTStackPop:
		if err := need(24); err != nil {
			return Action{}, err
		}
		return decodeStack(v, sub, act)
	case NXASTClone, NXASTOutputTrunc, NXASTCheckPktLarger:
		return decodeExtAction(v, sub, act)
	case NXASTEncap, NXASTDecap:
		if a, ok := decodeEncap(v, sub, act); ok {
			return a, nil
		}
	case NXASTPushMPLS, NXASTPopMPLS, NXASTSetMPLSTTL, NXASTDecMPLSTTL, NXASTSetMPLSLabel, NXASTSetMPLSTC:
		if v == Version10 { // OpenFlow 1.1+ has its own (action_mpls.go)
			return decodeMPLSAction(v, sub, act)
		}
	case NXASTCT:
		return decodeCT(v, act)
	case NXASTLearn, NXASTLearn2:
		return decodeLearn(v, sub, act)
	case NXASTConjunction:
		return decodeConjunction(v, act)
	case NXASTOutputReg:
		return decodeOutputReg(v, act)
	case NXASTOutputReg2:
		return decodeOutputReg2(v, act)
	case NXASTRegLoad2:
		return decodeRegLoad2(v, act) // field_tunmd.go
	case NXASTSample, NXASTSample2, NXASTSample3:
		return decodeSample(v, sub, act) // action_sample.go
	case NXASTMultipath:
		return decodeMultipath(v, act) // action_multipath.go
	case NXASTBundle, NXASTBundleLoad:
		return decodeBundle(v, sub, act) // action_bundle.go
	case NXASTFinTimeout:
		return decodeFinTimeout(v, act) // action_fintimeout.go
	case NXASTDeleteField:
		return decodeDeleteField(v, act) // action_deletefield.go
	case NXASTExit:
		if err := need(16); err != nil {
			return Action{}, err
		}
		return Action{Type: ActExit}, nil
	case NXASTNAT:
		return decodeNAT(v, act)
	case NXASTCTClear:
		if err := need(16); err != nil {
			return Action{}, err
		}
		return Action{Type: ActCTClear}, nil
	case NXASTController, NXASTController2, NXASTNote:
		if err := checkNXController(v, sub, act[8:]); err != nil {
			return Action{}, err
		}
	case NXASTResubmit, NXASTResubmitTable, NXASTResubmitTableCT:
		if err := need(16); err != nil {
			return Action{}, err
		}
		a := Action{Type: ActResubmit, Port: Port10To32(u16(act[10:])), Table: TableAll}
		if sub != NXASTResubmit {
			// The table forms carry a table and three bytes of
			// padding that must be zero, as ovs-vswitchd requires;
			// plain resubmit ignores both.
			if act[13]|act[14]|act[15] != 0 {
				return Action{}, errOf(v, kActBadArgument, "resubmit: nonzero padding")
			}
			a.Table = act[12]
			a.CtOrig = sub == NXASTResubmitTableCT
		}
		return a, nil
	case NXASTSetTunnel:
		if err := need(16); err != nil {
			return Action{}, err
		}
		a := Action{Type: ActSetField, Field: FieldTunnelID}
		copy(a.Value[4:8], act[12:16])
		return a, nil
	case NXASTSetTunnel64:
		if err := need(24); err != nil {
			return Action{}, err
		}
		a := Action{Type: ActSetField, Field: FieldTunnelID}
		copy(a.Value[:8], act[16:24])
		return a, nil
	case NXASTSetQueue:
		if err := need(16); err != nil {
			return Action{}, err
		}
		return Action{Type: ActSetQueue, Queue: u32(act[12:])}, nil
	case NXASTDecTTL:
		if err := need(16); err != nil {
			return Action{}, err
		}
		return Action{Type: ActDecNwTTL}, nil
	case NXASTDecTTLCntIDs:
		return decodeDecTTLCntIDs(v, act)
	case NXASTGroup:
		if err := need(16); err != nil {
			return Action{}, err
		}
		return Action{Type: ActGroup, Group: u32(act[12:])}, nil
	case NXASTRegMove:
		if v >= Version15 {
			// OpenFlow 1.5 has copy_field instead (action_copyfield.go).
			return Action{}, errOf(v, kActBadVendorType, "NXAST_REG_MOVE in OpenFlow 1.5")
		}
		if len(act) < 24 || len(act)%8 != 0 {
			return Action{}, errOf(v, kActBadLen, "move: length %d", len(act))
		}
		return decodeRegMove(v, act)
	case NXASTRegLoad:
		if v >= Version15 {
			// OpenFlow 1.5 has set_field with a mask instead (setfield.go).
			return Action{}, errOf(v, kActBadVendorType, "NXAST_REG_LOAD in OpenFlow 1.5")
		}
		if err := need(24); err != nil {
			return Action{}, err
		}
		ofsNBits, dstHdr := u16(act[10:]), u32(act[12:])
		f := FieldByHeader(dstHdr)
		if f == FieldNone || fields[f].enc == 0 || !actionHeaderFits(f, dstHdr) {
			return Action{}, errOf(v, kActBadSetType, "load: destination %08x", dstHdr)
		}
		a := Action{Type: ActRegLoad, Field: f, Ofs: ofsNBits >> 6, NBits: ofsNBits&0x3f + 1, Load: u64(act[16:])}
		if int(a.Ofs)+int(a.NBits) > 8*f.Size() || (a.NBits < 64 && a.Load>>a.NBits != 0) {
			return Action{}, errOf(v, kActBadArgument, "load: %d bits at %d into %s", a.NBits, a.Ofs, f)
		}
		return a, nil
	}
	return Action{Type: ActVendor, Vendor: vendor, Data: act[8:]}, nil
}

// decodeRegMove decodes an NXAST_REG_MOVE: n_bits, src_ofs, dst_ofs,
// then the source and destination field headers (4 bytes each, 8 for an
// experimenter field; unmasked, length the field's width), then zero
// padding to a multiple of 8 (24 bytes with two 4-byte headers).
func decodeRegMove(v uint8, act []byte) (Action, error) {
	nBits, srcOfs, dstOfs := u16(act[10:]), u16(act[12:]), u16(act[14:])
	src, sh, n := pullActionField(act[16:])
	dst, dh, m := pullActionField(act[16+n:])
	if n == 0 || m == 0 || src == FieldNone || dst == FieldNone {
		return Action{}, errOf(v, kActBadSetType, "move: field %08x -> %08x", sh, dh)
	}
	for _, c := range act[16+n+m:] {
		if c != 0 {
			return Action{}, errOf(v, kActBadArgument, "move: nonzero padding")
		}
	}
	a := Action{Type: ActRegMove, Src: src, SrcOfs: srcOfs, Field: dst, Ofs: dstOfs, NBits: nBits}
	if nBits == 0 || int(srcOfs)+int(nBits) > src.Bits() || int(dstOfs)+int(nBits) > dst.Bits() {
		return Action{}, errOf(v, kActBadArgument, "move: %d bits from %s[%d] to %s[%d]", nBits, src, srcOfs, dst, dstOfs)
	}
	return a, nil
}

// VendorActionError returns the error that rejects an ActVendor action in
// version v: bad vendor for a foreign vendor, bad vendor type for a Nicira
// action this codec does not model.
func VendorActionError(v uint8, a *Action) *Error {
	if a.Vendor == NXVendorID {
		return errOf(v, kActBadVendorType, "Nicira action not supported")
	}
	return errOf(v, kActBadVendor, "vendor %#08x", a.Vendor)
}

// AppendActions10 appends acts as an OpenFlow 1.0 action list. Actions 1.0
// cannot express fail with ErrUnsupported.
func AppendActions10(b []byte, acts []Action) ([]byte, error) {
	start := len(b)
	for i := range acts {
		var err error
		if b, err = appendAction10(b, &acts[i]); err != nil {
			return b[:start], err
		}
	}
	return b, nil
}

func appendAction10(b []byte, a *Action) ([]byte, error) {
	switch a.Type {
	case ActOutput:
		p, ok := Port32To10(a.Port)
		if !ok {
			return b, fmt.Errorf("openflow: output port %d in OpenFlow 1.0: %w", a.Port, ErrUnsupported)
		}
		return be16(be16(be16(be16(b, Act10Output), 8), p), a.MaxLen), nil
	case ActEnqueue:
		p, ok := Port32To10(a.Port)
		if !ok {
			return b, fmt.Errorf("openflow: enqueue port %d in OpenFlow 1.0: %w", a.Port, ErrUnsupported)
		}
		b = be16(be16(be16(b, Act10Enqueue), 16), p)
		return be32(zeros(b, 6), a.Queue), nil
	case ActSetVLANVID:
		return be16(be16(be16(be16(b, Act10SetVLANVID), 8), a.VLANVID&flow.VLANVIDMask), 0), nil
	case ActSetVLANPCP:
		return append(be16(be16(b, Act10SetVLANPCP), 8), a.VLANPCP&7, 0, 0, 0), nil
	case ActStripVLAN:
		return zeros(be16(be16(b, Act10StripVLAN), 8), 4), nil
	case ActSetField:
		return appendSetField10(b, a)
	case ActSetQueue:
		return be32(be16(nxActionHeader(b, 16, NXASTSetQueue), 0), a.Queue), nil
	case ActDecNwTTL:
		if a.IDs != nil {
			return appendDecTTLCntIDs(b, a)
		}
		return zeros(nxActionHeader(b, 16, NXASTDecTTL), 6), nil
	case ActGroup:
		return be32(zeros(nxActionHeader(b, 16, NXASTGroup), 2), a.Group), nil
	case ActResubmit, ActRegLoad, ActRegMove, ActVendor, ActCTClear, ActNAT, ActStackPush, ActStackPop:
		return appendNXAction(b, a)
	case ActCT:
		return appendCT(b, a, Version10)
	case ActLearn:
		return appendLearn(b, a)
	case ActConj:
		return appendConjunction(b, a), nil
	case ActOutputReg:
		return appendOutputReg(b, a)
	case ActSample:
		return appendSample(b, a)
	case ActMultipath:
		return appendMultipath(b, a)
	case ActBundle:
		return appendBundle(b, a)
	case ActExit:
		return zeros(nxActionHeader(b, 16, NXASTExit), 6), nil
	case ActFinTimeout:
		return appendFinTimeout(b, a), nil
	case ActDeleteField:
		return appendDeleteField(b, a) // action_deletefield.go
	case ActClone, ActOutputTrunc, ActCheckPktLarger:
		return appendExtAction(b, a, Version10)
	case ActEncap, ActDecap:
		return appendEncap(b, a)
	case ActPushMPLS, ActPopMPLS, ActSetMPLSTTL, ActDecMPLSTTL, ActSetMPLSLabel, ActSetMPLSTC:
		return appendMPLSAction10(b, a)
	}
	return b, fmt.Errorf("openflow: action %s in OpenFlow 1.0: %w", a.Type, ErrUnsupported)
}

func appendSetField10(b []byte, a *Action) ([]byte, error) {
	if a.Masked && !legacySetField(a.Field) {
		return appendLoadSegments(b, a)
	}
	k, ok := a.setFieldKey()
	if !ok {
		return b, fmt.Errorf("openflow: set_field %s: bad value: %w", a.Field, ErrUnsupported)
	}
	switch a.Field {
	case FieldEthSrc, FieldEthDst:
		t, mac := Act10SetDlSrc, k.EthSrc
		if a.Field == FieldEthDst {
			t, mac = Act10SetDlDst, k.EthDst
		}
		return zeros(append(be16(be16(b, t), 16), mac[:]...), 6), nil
	case FieldIPv4Src, FieldIPv4Dst:
		t, ip := Act10SetNwSrc, k.IPv4Src
		if a.Field == FieldIPv4Dst {
			t, ip = Act10SetNwDst, k.IPv4Dst
		}
		return append(be16(be16(b, t), 8), ip[:]...), nil
	case FieldIPTOS, FieldIPDSCP:
		return append(be16(be16(b, Act10SetNwTos), 8), k.NwTos&0xfc, 0, 0, 0), nil
	case FieldTpSrc, FieldTCPSrc, FieldUDPSrc, FieldSCTPSrc:
		return be16(be16(be16(be16(b, Act10SetTpSrc), 8), k.TpSrc), 0), nil
	case FieldTpDst, FieldTCPDst, FieldUDPDst, FieldSCTPDst:
		return be16(be16(be16(be16(b, Act10SetTpDst), 8), k.TpDst), 0), nil
	case FieldVLANVID:
		return be16(be16(be16(be16(b, Act10SetVLANVID), 8), k.VLANs[0].TCI&flow.VLANVIDMask), 0), nil
	case FieldVLANPCP:
		return append(be16(be16(b, Act10SetVLANPCP), 8), byte(k.VLANs[0].TCI>>13), 0, 0, 0), nil
	case FieldTunnelID:
		return be64(zeros(nxActionHeader(b, 24, NXASTSetTunnel64), 6), k.Tunnel.ID), nil
	}
	if a.Field.IsTunMetadata() || a.Field.IsExperimenter() {
		return appendRegLoad2(b, a) // field_tunmd.go
	}
	// Anything else NXM can name becomes a full-width NXAST_REG_LOAD; a
	// field wider than 64 bits (xxreg, ipv6_src) one load per 64 bits,
	// the least significant first, as ovs-vswitchd encodes it.
	n := a.Field.Size()
	if _, ok := a.Field.Header(true); !ok || n > 16 {
		return b, fmt.Errorf("openflow: set_field %s in OpenFlow 1.0: %w", a.Field, ErrUnsupported)
	}
	start := len(b)
	for end := n; end > 0; end -= 8 {
		from := max(end-8, 0)
		var v uint64
		for _, c := range a.Value[from:end] {
			v = v<<8 | uint64(c)
		}
		var err error
		b, err = appendNXAction(b, &Action{Type: ActRegLoad, Field: a.Field, Ofs: uint16(8 * (n - end)),
			NBits: uint16(8 * (end - from)), Load: v})
		if err != nil {
			return b[:start], err
		}
	}
	return b, nil
}

// nxActionHeader appends type, length, NX vendor id and subtype.
func nxActionHeader(b []byte, n, sub uint16) []byte {
	return be16(be32(be16(be16(b, ActVendorType), n), NXVendorID), sub)
}

// appendNXAction appends a Nicira (or other vendor) action; the same bytes
// serve OpenFlow 1.0 vendor and 1.3 experimenter actions.
func appendNXAction(b []byte, a *Action) ([]byte, error) {
	switch a.Type {
	case ActResubmit:
		p, ok := Port32To10(a.Port)
		if !ok {
			return b, fmt.Errorf("openflow: resubmit in_port %d: %w", a.Port, ErrUnsupported)
		}
		sub := NXASTResubmitTable
		switch {
		case a.CtOrig:
			sub = NXASTResubmitTableCT
		case a.Table == TableAll:
			sub = NXASTResubmit
		}
		return append(be16(nxActionHeader(b, 16, sub), p), a.Table, 0, 0, 0), nil
	case ActRegLoad:
		h, ok := a.Field.Header(true)
		if !ok || a.NBits == 0 || a.NBits > 64 || int(a.Ofs)+int(a.NBits) > 8*a.Field.Size() {
			return b, fmt.Errorf("openflow: load of %d bits at %d into %s: %w", a.NBits, a.Ofs, a.Field, ErrUnsupported)
		}
		b = be16(nxActionHeader(b, 24, NXASTRegLoad), a.Ofs<<6|(a.NBits-1))
		return be64(be32(b, h), a.Load), nil
	case ActRegMove:
		if actionFieldLen(a.Src) == 0 || actionFieldLen(a.Field) == 0 || a.NBits == 0 ||
			int(a.SrcOfs)+int(a.NBits) > 8*a.Src.Size() || int(a.Ofs)+int(a.NBits) > 8*a.Field.Size() {
			return b, fmt.Errorf("openflow: move of %d bits from %s[%d] to %s[%d]: %w", a.NBits, a.Src, a.SrcOfs, a.Field, a.Ofs, ErrUnsupported)
		}
		start := len(b)
		n := 16 + actionFieldLen(a.Src) + actionFieldLen(a.Field)
		b = be16(be16(be16(nxActionHeader(b, uint16((n+7)&^7), NXASTRegMove), a.NBits), a.SrcOfs), a.Ofs)
		b, _ = appendActionField(b, a.Src, true)
		b, _ = appendActionField(b, a.Field, true)
		return pad8(b, start), nil
	case ActStackPush, ActStackPop:
		return appendStack(b, a)
	case ActCTClear:
		return zeros(nxActionHeader(b, 16, NXASTCTClear), 6), nil
	case ActNAT:
		return appendNAT(b, a.NAT)
	case ActVendor:
		n := 8 + len(a.Data)
		if n%8 != 0 || n > 0xffff {
			return b, fmt.Errorf("openflow: vendor action body of %d bytes is not 8-byte aligned: %w", len(a.Data), ErrBadLength)
		}
		return append(be32(be16(be16(b, ActVendorType), uint16(n)), a.Vendor), a.Data...), nil
	}
	return b, fmt.Errorf("openflow: %s is not a vendor action: %w", a.Type, ErrUnsupported)
}
