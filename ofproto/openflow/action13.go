package openflow

import (
	"fmt"

	"github.com/govswitch/govswitch/flow"
)

// OpenFlow 1.3 action types (OFPAT_*).
const (
	Act13Output     uint16 = 0
	Act13CopyTTLOut uint16 = 11
	Act13CopyTTLIn  uint16 = 12
	Act13SetMPLSTTL uint16 = 15
	Act13DecMPLSTTL uint16 = 16
	Act13PushVLAN   uint16 = 17
	Act13PopVLAN    uint16 = 18
	Act13PushMPLS   uint16 = 19
	Act13PopMPLS    uint16 = 20
	Act13SetQueue   uint16 = 21
	Act13Group      uint16 = 22
	Act13SetNwTTL   uint16 = 23
	Act13DecNwTTL   uint16 = 24
	Act13SetField   uint16 = 25
	Act13PushPBB    uint16 = 26
	Act13PopPBB     uint16 = 27
	Act15Meter      uint16 = 29 // OpenFlow 1.5
)

// OpenFlow 1.3 instruction types (OFPIT_*).
const (
	Inst13GotoTable     uint16 = 1
	Inst13WriteMetadata uint16 = 2
	Inst13WriteActions  uint16 = 3
	Inst13ApplyActions  uint16 = 4
	Inst13ClearActions  uint16 = 5
	Inst13Meter         uint16 = 6
	Inst13Experimenter  uint16 = 0xffff
)

// DecodeActions13 appends the OpenFlow 1.3 actions in b (an action list of
// exactly len(b) bytes) to dst.
func DecodeActions13(dst []Action, b []byte) ([]Action, error) {
	return decodeActions13(dst, Version13, b)
}

// decodeActions13 decodes the action list of version v (1.2+), whose
// set_field may carry a mask from 1.5 on (setfield.go).
func decodeActions13(dst []Action, v uint8, b []byte) ([]Action, error) {
	for len(b) > 0 {
		act, typ, rest, err := splitAction(v, b)
		if err != nil {
			return dst, err
		}
		b = rest
		want := 8
		switch typ {
		case Act13Output:
			want = 16
		case Act13SetField, ActVendorType, Act15CopyField:
			want = len(act)
		}
		if len(act) != want {
			return dst, errOf(v, kActBadLen, "action type %d: length %d, want %d", typ, len(act), want)
		}
		var a Action
		switch typ {
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
		case Act15Meter:
			a = Action{Type: ActMeter, Queue: u32(act[4:])}
		case Act13SetNwTTL:
			a = Action{Type: ActSetNwTTL, TTL: act[4]}
		case Act13DecNwTTL:
			a = Action{Type: ActDecNwTTL}
		case Act13SetField:
			if a, err = decodeSetField(v, act); err != nil {
				return dst, err
			}
		case ActVendorType:
			if isONFCopyField(v, act) {
				a, err = decodeCopyField(v, act, 12)
			} else {
				a, err = decodeVendorAction(v, act)
			}
			if err != nil {
				return dst, err
			}
		case Act15CopyField:
			if v < Version15 {
				return dst, errOf(v, kActBadType, "action type %d", typ)
			}
			if a, err = decodeCopyField(v, act, 4); err != nil {
				return dst, err
			}
		default:
			return dst, errOf(v, kActBadType, "action type %d", typ)
		}
		dst = append(dst, a)
	}
	return dst, nil
}

// AppendActions13 appends acts as an OpenFlow 1.3 action list. 1.0-only
// forms are translated: set_vlan_vid/pcp become set_field, enqueue becomes
// set_queue then output; set_tp_src/dst (no protocol) fail.
func AppendActions13(b []byte, acts []Action) ([]byte, error) {
	return appendActions13(b, Version13, acts)
}

// appendActions13 appends acts as an action list of version v (1.2+):
// 1.5 has no NXAST_REG_LOAD, and 1.2 to 1.4 no masked set_field
// (setfield.go).
func appendActions13(b []byte, v uint8, acts []Action) ([]byte, error) {
	start := len(b)
	for i := range acts {
		var err error
		if b, err = appendAction13(b, &acts[i], v); err != nil {
			return b[:start], err
		}
	}
	return b, nil
}

func act13(b []byte, typ uint16, n uint16) []byte { return be16(be16(b, typ), n) }

func appendAction13(b []byte, a *Action, v uint8) ([]byte, error) {
	switch a.Type {
	case ActOutput:
		return zeros(be16(be32(act13(b, Act13Output, 16), a.Port), a.MaxLen), 6), nil
	case ActEnqueue:
		b = be32(act13(b, Act13SetQueue, 8), a.Queue)
		return zeros(be16(be32(act13(b, Act13Output, 16), a.Port), 0), 6), nil
	case ActCopyTTLOut:
		return zeros(act13(b, Act13CopyTTLOut, 8), 4), nil
	case ActCopyTTLIn:
		return zeros(act13(b, Act13CopyTTLIn, 8), 4), nil
	case ActSetMPLSTTL:
		return append(act13(b, Act13SetMPLSTTL, 8), a.TTL, 0, 0, 0), nil
	case ActDecMPLSTTL:
		return zeros(act13(b, Act13DecMPLSTTL, 8), 4), nil
	case ActPushVLAN:
		return be16(be16(act13(b, Act13PushVLAN, 8), a.EthType), 0), nil
	case ActStripVLAN:
		return zeros(act13(b, Act13PopVLAN, 8), 4), nil
	case ActPushMPLS:
		return be16(be16(act13(b, Act13PushMPLS, 8), a.EthType), 0), nil
	case ActPopMPLS:
		return be16(be16(act13(b, Act13PopMPLS, 8), a.EthType), 0), nil
	case ActSetQueue:
		return be32(act13(b, Act13SetQueue, 8), a.Queue), nil
	case ActGroup:
		return be32(act13(b, Act13Group, 8), a.Group), nil
	case ActMeter:
		return be32(act13(b, Act15Meter, 8), a.Queue), nil
	case ActSetNwTTL:
		return append(act13(b, Act13SetNwTTL, 8), a.TTL, 0, 0, 0), nil
	case ActDecNwTTL:
		if a.IDs != nil {
			return appendDecTTLCntIDs(b, a)
		}
		return zeros(act13(b, Act13DecNwTTL, 8), 4), nil
	case ActSetVLANVID:
		sf := Action{Type: ActSetField, Field: FieldVLANVID}
		vid := a.VLANVID & flow.VLANVIDMask // no OFPVID_PRESENT, as ovs-ofctl sends it
		sf.Value[0], sf.Value[1] = byte(vid>>8), byte(vid)
		return appendSetField(b, &sf, v)
	case ActSetVLANPCP:
		sf := Action{Type: ActSetField, Field: FieldVLANPCP}
		sf.Value[0] = a.VLANPCP & 7
		return appendSetField(b, &sf, v)
	case ActSetField:
		return appendSetField(b, a, v)
	case ActRegLoad:
		return appendRegLoad(b, a, v)
	case ActRegMove:
		return appendRegMove(b, a, v)
	case ActResubmit, ActVendor, ActCTClear, ActNAT, ActStackPush, ActStackPop:
		return appendNXAction(b, a)
	case ActCT:
		return appendCT(b, a, v)
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
		return appendExtAction(b, a, v)
	case ActEncap, ActDecap:
		return appendEncap(b, a)
	case ActSetMPLSLabel, ActSetMPLSTC:
		return appendMPLSAction13(b, a)
	}
	return b, fmt.Errorf("openflow: action %s in OpenFlow 1.3: %w", a.Type, ErrUnsupported)
}

// DecodeInstructions13 parses an OpenFlow 1.3 instruction list of exactly
// len(b) bytes into in (which it resets). Action lists alias nothing but
// vendor action bodies.
func DecodeInstructions13(b []byte, in *Instructions) error {
	return decodeInstructions13(Version13, b, in)
}

// decodeInstructions13 is DecodeInstructions13 for version v (1.2+).
func decodeInstructions13(v uint8, b []byte, in *Instructions) error {
	return decodeInstructions(v, b, in, func(dst []Action, b []byte) ([]Action, error) {
		return decodeActions13(dst, v, b)
	})
}

// decodeInstructions parses an instruction list of version v (1.1+),
// whose action lists decodeActions reads. 1.1 and 1.2 number their
// instructions as 1.3 does but have no meter instruction.
func decodeInstructions(v uint8, b []byte, in *Instructions, decodeActions func([]Action, []byte) ([]Action, error)) error {
	last := uint16(Inst13Meter)
	if v < Version13 {
		last = Inst13ClearActions
	}
	*in = Instructions{}
	var seen uint8
	for len(b) > 0 {
		if len(b) < 8 {
			return errOf(v, kInstBadLen, "%d trailing bytes in instructions", len(b))
		}
		typ, n := u16(b), int(u16(b[2:]))
		if n < 8 || n%8 != 0 || n > len(b) {
			return errOf(v, kInstBadLen, "instruction %d: length %d in %d bytes", typ, n, len(b))
		}
		inst := b[:n]
		b = b[n:]
		if typ >= Inst13GotoTable && typ <= last {
			if seen&(1<<typ) != 0 {
				return errOf(v, kInstDup, "instruction %d twice", typ)
			}
			seen |= 1 << typ
		}
		fixed := func(want int) error {
			if n != want {
				return errOf(v, kInstBadLen, "instruction %d: length %d, want %d", typ, n, want)
			}
			return nil
		}
		var err error
		switch typ {
		case Inst13GotoTable:
			if err = fixed(8); err == nil {
				in.GotoTable, in.Table = true, inst[4]
			}
		case Inst13WriteMetadata:
			if err = fixed(24); err == nil {
				in.WriteMetadata, in.Metadata, in.MetadataMask = true, u64(inst[8:]), u64(inst[16:])
			}
		case Inst13WriteActions:
			in.Write, err = decodeActions(make([]Action, 0, (n-8)/8), inst[8:])
		case Inst13ApplyActions:
			in.Apply, err = decodeActions(make([]Action, 0, (n-8)/8), inst[8:])
		case Inst13ClearActions:
			if err = fixed(8); err == nil {
				in.Clear = true
			}
		case Inst13Meter:
			if v < Version13 {
				return errOf(v, kInstUnknown, "instruction type %d", typ)
			}
			if err = fixed(8); err == nil {
				in.Meter = u32(inst[4:])
			}
		default:
			return errOf(v, kInstUnknown, "instruction type %d", typ)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// AppendInstructions13 appends in as an OpenFlow 1.3 instruction list, in
// the order the pipeline runs them.
func AppendInstructions13(b []byte, in *Instructions) ([]byte, error) {
	return appendInstructions13(b, Version13, in)
}

// appendInstructions13 is AppendInstructions13 for version v (1.2+).
func appendInstructions13(b []byte, v uint8, in *Instructions) ([]byte, error) {
	start := len(b)
	if in.Meter != 0 {
		b = be32(act13(b, Inst13Meter, 8), in.Meter)
	}
	return appendInstructions(b, start, in, func(b []byte, acts []Action) ([]byte, error) {
		return appendActions13(b, v, acts)
	})
}

// appendInstructions appends in's instructions but the meter, whose
// action lists appendActions writes; on error it returns b cut to start.
func appendInstructions(b []byte, start int, in *Instructions, appendActions func([]byte, []Action) ([]byte, error)) ([]byte, error) {
	list := func(typ uint16, acts []Action) error {
		at := len(b)
		b = zeros(act13(b, typ, 0), 4)
		var err error
		if b, err = appendActions(b, acts); err != nil {
			return err
		}
		return putLen16(b, at+2, at)
	}
	if len(in.Apply) > 0 {
		if err := list(Inst13ApplyActions, in.Apply); err != nil {
			return b[:start], err
		}
	}
	if in.Clear {
		b = zeros(act13(b, Inst13ClearActions, 8), 4)
	}
	if in.Write != nil {
		if err := list(Inst13WriteActions, in.Write); err != nil {
			return b[:start], err
		}
	}
	if in.WriteMetadata {
		b = be64(be64(zeros(act13(b, Inst13WriteMetadata, 24), 4), in.Metadata), in.MetadataMask)
	}
	if in.GotoTable {
		b = append(act13(b, Inst13GotoTable, 8), in.Table, 0, 0, 0)
	}
	return b, nil
}
