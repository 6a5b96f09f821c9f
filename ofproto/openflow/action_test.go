package openflow

import (
	"errors"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

func TestActionsRoundTrip(t *testing.T) {
	var k flow.Key
	k.IPv4Dst = [4]byte{9, 9, 9, 9}
	k.Regs[4] = 0xdeadbeef
	k.IPv6Src = [16]byte{0xfe, 0x80, 15: 2}
	k.NwTos = 0x2e << 2
	all13 := []Action{
		Output(1, 0), Output(PortController, 128), {Type: ActCopyTTLOut}, {Type: ActCopyTTLIn},
		{Type: ActSetMPLSTTL, TTL: 9}, {Type: ActDecMPLSTTL}, {Type: ActPushVLAN, EthType: flow.EthTypeQinQ},
		{Type: ActStripVLAN}, {Type: ActPushMPLS, EthType: flow.EthTypeMPLS}, {Type: ActPopMPLS, EthType: flow.EthTypeIPv4},
		{Type: ActSetQueue, Queue: 4}, {Type: ActGroup, Group: 8}, {Type: ActSetNwTTL, TTL: 3}, {Type: ActDecNwTTL},
		SetField(FieldIPv4Dst, &k), SetField(FieldReg4, &k), SetField(FieldIPv6Src, &k), SetField(FieldIPDSCP, &k),
		Resubmit(5, TableAll), Resubmit(PortInPort, 3),
		{Type: ActRegLoad, Field: FieldReg2, Ofs: 4, NBits: 8, Load: 0xab},
		{Type: ActRegMove, Src: FieldXXReg0, SrcOfs: 0, Field: FieldXReg3, Ofs: 0, NBits: 64},
		{Type: ActVendor, Vendor: 0x00abcdef, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
	}
	all10 := []Action{
		Output(PortNormal, 0), Output(PortController, 0xffff), {Type: ActEnqueue, Port: 2, Queue: 1},
		{Type: ActSetVLANVID, VLANVID: 4095}, {Type: ActSetVLANPCP, VLANPCP: 7}, {Type: ActStripVLAN},
		SetField(FieldEthSrc, &k), SetField(FieldIPv4Dst, &k), SetField(FieldIPTOS, &k), SetField(FieldTpSrc, &k),
		{Type: ActSetQueue, Queue: 4}, {Type: ActDecNwTTL}, Resubmit(5, TableAll), Resubmit(PortInPort, 3),
		{Type: ActRegLoad, Field: FieldReg2, Ofs: 4, NBits: 8, Load: 0xab}, SetField(FieldTunnelID, &k),
		{Type: ActRegMove, Src: FieldEthSrc, SrcOfs: 0, Field: FieldEthDst, Ofs: 0, NBits: 48},
	}
	for _, tc := range []struct {
		name string
		enc  func([]byte, []Action) ([]byte, error)
		dec  func([]Action, []byte) ([]Action, error)
		acts []Action
	}{
		{"1.3", AppendActions13, DecodeActions13, all13},
		{"1.0", AppendActions10, DecodeActions10, all10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.enc(nil, tc.acts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.dec(nil, b)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.acts) {
				t.Fatalf("%d actions back, want %d", len(got), len(tc.acts))
			}
			for i := range got {
				if !got[i].Equal(tc.acts[i]) {
					t.Errorf("action %d: got %+v\nwant %+v", i, got[i], tc.acts[i])
				}
			}
		})
	}
}

// TestActionsAcrossVersions: one representation, each version's wire form.
func TestActionsAcrossVersions(t *testing.T) {
	var k flow.Key
	k.NwTos = 46 << 2
	k.Regs[0] = 7
	for _, tc := range []struct {
		name   string
		act    Action
		want10 string // hex of the 1.0 form, "" when 1.0 cannot carry it
		want13 string
	}{
		{"dscp", SetField(FieldIPDSCP, &k), "00080008b8000000", "0019001080001001 2e00000000000000"},
		{"register via reg_load in 1.0", SetField(FieldReg0, &k),
			"ffff001800002320 0007001f00010004 0000000000000007", "0019001000010004 0000000700000000"},
		{"enqueue becomes set_queue+output in 1.3", Action{Type: ActEnqueue, Port: 1, Queue: 2},
			"000b001000010000 0000000000000002", "0015000800000002 0000001000000001 0000000000000000"},
		{"set_vlan_vid becomes set_field in 1.3", Action{Type: ActSetVLANVID, VLANVID: 9},
			"0001000800090000", "0019001080000c02 0009000000000000"},
		{"push_vlan has no 1.0 form", Action{Type: ActPushVLAN, EthType: 0x8100}, "", "0011000881000000"},
		// 1.0 carries group as OVS's NXAST_GROUP (recorded from ovs-vswitchd's
		// NXST_GROUP_DESC reply).
		{"group is NXAST_GROUP in 1.0", Action{Type: ActGroup, Group: 1}, "ffff001000002320 0028000000000001", "0016000800000001"},
		{"set_tp_src has no 1.3 form", Action{Type: ActSetField, Field: FieldTpSrc, Value: [16]byte{0, 80}},
			"0009000800500000", ""},
		{"32-bit port has no 1.0 form", Output(0x10000, 0), "", "0000001000010000 0000000000000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []struct {
				want string
				enc  func([]byte, []Action) ([]byte, error)
			}{{tc.want10, AppendActions10}, {tc.want13, AppendActions13}} {
				b, err := v.enc([]byte{0xee}, []Action{tc.act})
				if v.want == "" {
					if !errors.Is(err, ErrUnsupported) || len(b) != 1 {
						t.Errorf("got % x, %v; want ErrUnsupported and the buffer untouched", b, err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if want := wire(t, v.want); string(b[1:]) != string(want) {
					t.Errorf("got % x\nwant % x", b[1:], want)
				}
			}
		})
	}
}

func TestActionDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    uint8
		in   string
		typ  uint16
		code uint16
	}{
		{"1.0 short list", Version10, "0000 0008 0001", ErrTypeBadAction, BadActionBadLen},
		{"1.0 zero length", Version10, "0000 0000 0001 0000", ErrTypeBadAction, BadActionBadLen},
		{"1.0 length past end", Version10, "0000 0010 0001 0000", ErrTypeBadAction, BadActionBadLen},
		{"1.0 length not multiple of 8", Version10, "0000 000c 0001 0000 00000000", ErrTypeBadAction, BadActionBadLen},
		{"1.0 output with 16 bytes", Version10, "0000 0010 0001 0000 0000000000000000", ErrTypeBadAction, BadActionBadLen},
		{"1.0 unknown type", Version10, "000c 0008 00000000", ErrTypeBadAction, BadActionBadType},
		{"1.0 vid above 4095", Version10, "0001 0008 1000 0000", ErrTypeBadAction, BadActionBadArgument},
		{"1.0 pcp above 7", Version10, "0002 0008 08 000000", ErrTypeBadAction, BadActionBadArgument},
		{"1.0 nw_tos with ECN bits", Version10, "0008 0008 01 000000", ErrTypeBadAction, BadActionBadArgument},
		{"NX resubmit wrong length", Version10, "ffff 0018 00002320 0001 0000 00000000 0000000000000000", ErrTypeBadAction, BadActionBadLen},
		{"NX reg_load unknown field", Version10, "ffff 0018 00002320 0007 001f 7fff0004 0000000000000000", ErrTypeBadAction, BadActionBadType},
		{"NX reg_load past field end", Version10, "ffff 0018 00002320 0007 005f 00010004 0000000000000001", ErrTypeBadAction, BadActionBadArgument},
		{"NX reg_load value wider than n_bits", Version10, "ffff 0018 00002320 0007 0000 00010004 0000000000000002", ErrTypeBadAction, BadActionBadArgument},
		{"1.3 unknown type", Version13, "0001 0008 00000000", ErrTypeBadAction, BadActionBadType},
		{"1.3 output with 8 bytes", Version13, "0000 0008 00000001", ErrTypeBadAction, BadActionBadLen},
		{"1.3 push_vlan bad ethertype", Version13, "0011 0008 0800 0000", ErrTypeBadAction, BadActionBadArgument},
		{"1.3 set_field with mask", Version13, "0019 0010 80000b08 0a000001 ff000000", ErrTypeBadAction, BadAction13BadSetLen},
		// A well-formed mask is OpenFlow 1.5's: ONF's experimenter error
		// 4250 (OVS's OFPBAC_BAD_SET_MASK) before.
		{"1.3 set_field masked ipv4_src", Version13, "0019 0010 80001708 0a000000 ff000000", Err13TypeExperimenter, onfBadSetMask},
		{"1.3 set_field nonzero padding", Version13, "0019 0010 80001604 0a000001 00000001", ErrTypeBadAction, BadAction13BadSetArgment},
		{"1.3 set_field unknown field", Version13, "0019 0010 80007e04 00000000 00000000", ErrTypeBadAction, BadAction13BadSetType},
		{"1.3 set_field value past action", Version13, "0019 0008 80000b04", ErrTypeBadAction, BadAction13BadSetLen},
		{"1.3 set_field out of range", Version13, "0019 0010 80000c02 2000 000000000000", ErrTypeBadAction, BadActionBadArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec := DecodeActions10
			if tc.v == Version13 {
				dec = DecodeActions13
			}
			_, err := dec(nil, wire(t, tc.in))
			var e *Error
			if !errors.As(err, &e) || e.Type != tc.typ || e.Code != tc.code || e.Version != tc.v {
				t.Fatalf("got %v, want type %d code %d", err, tc.typ, tc.code)
			}
		})
	}
}

func TestInstructionErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		code uint16
	}{
		{"unknown instruction", "0007 0008 00000000", BadInst13UnknownInst},
		{"short", "0001 0008 02", BadInst13BadLen},
		{"goto_table with 16 bytes", "0001 0010 02000000 0000000000000000", BadInst13BadLen},
		{"duplicate goto_table", "0001 0008 02000000 0001 0008 03000000", BadInst13UnsupInst},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := DecodeInstructions13(wire(t, tc.in), &Instructions{})
			var e *Error
			if !errors.As(err, &e) || e.Type != Err13TypeBadInstruction || e.Code != tc.code {
				t.Fatalf("got %v, want BAD_INSTRUCTION code %d", err, tc.code)
			}
		})
	}
	in := Instructions{Write: []Action{}, Clear: true, WriteMetadata: true, Metadata: 1, MetadataMask: 1}
	b, err := AppendInstructions13(nil, &in)
	if err != nil {
		t.Fatal(err)
	}
	var back Instructions
	if err := DecodeInstructions13(b, &back); err != nil || !back.Clear || back.Write == nil || !back.WriteMetadata {
		t.Fatalf("empty write-actions, clear, write-metadata: %+v, %v", back, err)
	}
}

func TestApplySetField(t *testing.T) {
	var src flow.Key
	src.VLANs[0].TCI = 0x0005 // as ovs-ofctl sends set_field:5->vlan_vid
	a := SetField(FieldVLANVID, &src)
	var k flow.Key
	k.VLANs[0].TCI = 0x1000 | 7<<13 | 100
	if !a.ApplySetField(&k) || k.VLANs[0].TCI != 0x1000|7<<13|5 {
		t.Fatalf("vlan_vid: TCI %#x", k.VLANs[0].TCI)
	}
	src.NwTos = 0xfc
	a = SetField(FieldIPDSCP, &src)
	k.NwTos = 0x03
	if !a.ApplySetField(&k) || k.NwTos != 0xff {
		t.Fatalf("ip_dscp: tos %#x", k.NwTos)
	}
	if (&Action{Type: ActOutput}).ApplySetField(&k) {
		t.Fatal("ApplySetField on an output action")
	}
}

func TestVendorActionError(t *testing.T) {
	acts, err := DecodeActions10(nil, wire(t, "ffff 0010 00002320 00fe 000000000000")) // no NXAST_* subtype
	if err != nil || len(acts) != 1 || acts[0].Type != ActVendor {
		t.Fatalf("%+v %v", acts, err)
	}
	if e := VendorActionError(Version10, &acts[0]); e.Type != ErrTypeBadAction || e.Code != BadActionBadVendorType {
		t.Fatalf("Nicira: %v", e)
	}
	if e := VendorActionError(Version13, &Action{Type: ActVendor, Vendor: 1}); e.Code != BadActionBadVendor {
		t.Fatalf("foreign vendor: %v", e)
	}
}
