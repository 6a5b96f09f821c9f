package openflow

import (
	"bytes"
	"errors"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

// TestDecodeErrorReplies: what the switch answers to messages it does not
// handle. ovs-ofctl falls back from NXM to plain OpenFlow on exactly
// BAD_REQUEST/BAD_VENDOR or BAD_SUBTYPE (1.0) and BAD_EXPERIMENTER or
// BAD_EXP_TYPE (1.3), so those codes matter.
func TestDecodeErrorReplies(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		typ  uint16
		code uint16
	}{
		{"1.0 unknown Nicira subtype", "01 04 0010 00000009 00002320 00000063", ErrTypeBadRequest, BadRequestBadSubtype},
		{"1.0 Nicira role out of range", "01 04 0014 00000009 00002320 0000000a 00000003", ErrTypeBadRequest, BadRequestNXBadRole},
		{"1.0 unknown vendor", "01 04 0010 00000009 00001234 00000000", ErrTypeBadRequest, BadRequestBadVendor},
		{"1.3 unknown experimenter", "04 04 0010 00000009 00001234 00000000", ErrTypeBadRequest, BadRequestBadVendor},
		{"1.3 Nicira message", "04 04 0014 00000009 00002320 0000000c 00000002", ErrTypeBadRequest, BadRequestBadSubtype},
		{"1.0 unknown message type", "01 1e 0008 00000009", ErrTypeBadRequest, BadRequestBadType},
		{"1.0 queue get config", "01 14 000c 00000009 0001 0000", ErrTypeBadRequest, BadRequestBadType},
		{"1.3 group mod bad type", "04 0f 0010 00000009 0000 07 00 00000001", Err13TypeGroupModFailed, GroupModFailed13BadType},
		{"1.3 group mod bad command", "04 0f 0010 00000009 0009 00 00 00000001", Err13TypeGroupModFailed, GroupModFailed13BadCommand},
		{"1.3 indirect group of no bucket", "04 0f 0010 00000009 0000 02 00 00000001", Err13TypeGroupModFailed, GroupModFailed13InvalidGroup},
		{"1.3 meter mod bad command", "04 1d 0010 00000009 0003 0000 00000001", Err13TypeMeterModFailed, MeterModFailed13BadCommand},
		{"1.3 meter mod band type", "04 1d 0020 00000009 0000 0001 00000001 0007 0010 0000000a 00000000 00000000", Err13TypeMeterModFailed, MeterModFailed13BadBand},
		{"1.0 unknown stats", "01 10 000c 00000009 0007 0000", ErrTypeBadRequest, BadRequestBadStat},
		{"1.0 table features stats", "01 10 000c 00000009 000c 0000", ErrTypeBadRequest, BadRequestBadStat},
		{"1.0 unknown NX stats", "01 10 0018 00000009 ffff 0000 00002320 00000099 00000000", ErrTypeBadRequest, BadRequestBadSubtype},
		{"1.3 group stats short", "04 12 0010 00000009 0006 0000 00000000", ErrTypeBadRequest, BadRequestBadLen},
		{"1.3 unknown stats", "04 12 0010 00000009 0020 0000 00000000", ErrTypeBadRequest, BadRequestBadStat},
		{"1.0 set config too long", "01 09 0010 00000009 0000 0080 00000000", ErrTypeBadRequest, BadRequestBadLen},
		{"1.0 flow mod short", "01 0e 0010 00000009 0000000000000000", ErrTypeBadRequest, BadRequestBadLen},
		{"1.0 flow mod bad command", "01 0e 0048 00000009 003820ff 00*36 0000000000000000 0005 0000 0000 0000 ffffffff ffff 0000",
			Err10TypeFlowModFail, FlowModFailed10BadCommand},
		{"1.3 flow mod standard match", "04 0e 0038 00000009 00*40 0000 0004 00000000",
			Err13TypeBadMatch, BadMatch13BadType},
		{"1.3 packet out actions past end", "04 0d 0018 00000009 ffffffff fffffffd 0010 000000000000", ErrTypeBadRequest, BadRequestBadLen},
		{"unsupported version", "07 02 0008 00000009", ErrTypeBadRequest, BadRequestBadVersion},
		{"length beyond buffer", "01 02 0010 00000009", ErrTypeBadRequest, BadRequestBadLen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := wire(t, tc.in)
			m, err := Decode(raw)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %T %v, want *Error", m, err)
			}
			if e.Type != tc.typ || e.Code != tc.code {
				t.Fatalf("type %d code %d (%v), want %d %d", e.Type, e.Code, e, tc.typ, tc.code)
			}
			r := e.Reply(raw)
			if r.Xid != 9 || !bytes.Equal(r.Data, raw[:min(len(raw), 64)]) {
				t.Fatalf("reply %+v", r)
			}
			if _, err := r.Append(nil); err != nil && raw[0] != 5 {
				t.Fatalf("encoding the reply: %v", err)
			}
		})
	}
	if _, err := Decode([]byte{1, 0, 0}); !errors.Is(err, ErrShortHeader) {
		t.Fatalf("3 bytes: %v", err)
	}
}

func TestNegotiate(t *testing.T) {
	both := VersionBitmap(Version10, Version13)
	for _, tc := range []struct {
		name  string
		ours  uint32
		peer  Hello
		want  uint8
		wantO bool
	}{
		{"ovs-ofctl default: 1.0, no bitmap", both, Hello{Envelope: env10(0)}, Version10, true},
		{"ovs-ofctl -O OpenFlow13: bitmap {1.3}", both, Hello{Envelope: env13(0), Versions: VersionBitmap(Version13)}, Version13, true},
		{"bitmaps: highest common", both, Hello{Envelope: Envelope{Version: 6}, Versions: VersionBitmap(1, 4, 5, 6)}, Version13, true},
		{"no bitmap, peer newer: our highest", both, Hello{Envelope: Envelope{Version: 6}}, Version13, true},
		{"no bitmap, peer 1.2 which we lack", both, Hello{Envelope: Envelope{Version: 3}}, 0, false},
		{"disjoint bitmaps", VersionBitmap(Version10), Hello{Envelope: env13(0), Versions: VersionBitmap(Version13)}, 0, false},
		{"we support nothing", 0, Hello{Envelope: env10(0)}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := Negotiate(tc.ours, &tc.peer)
			if v != tc.want || ok != tc.wantO {
				t.Fatalf("got %d %v, want %d %v", v, ok, tc.want, tc.wantO)
			}
		})
	}
}

func TestHelloElements(t *testing.T) {
	// An unknown element before the bitmap is skipped; a 1.0 hello with
	// trailing junk is accepted (1.0 allowed arbitrary hello bodies).
	m, err := Decode(wire(t, "04 00 0018 00000001 0002 0006 aabb 0000 0001 0008 00000012"))
	if err != nil || m.(*Hello).Versions != 0x12 {
		t.Fatalf("%+v %v", m, err)
	}
	if _, err := Decode(wire(t, "01 00 000b 00000001 ffffff")); err != nil {
		t.Fatalf("1.0 hello with junk: %v", err)
	}
	if _, err := Decode(wire(t, "04 00 0010 00000001 0001 0040 00000012")); !errors.Is(err, ErrBadLength) {
		t.Fatalf("1.3 hello element past end: %v", err)
	}
}

func TestEncodeRejects(t *testing.T) {
	var v6 Match
	v6.Key.EthType, v6.Mask.EthType = flow.EthTypeIPv6, 0xffff
	v6.Mask.IPv6Src[0] = 0xff
	for _, tc := range []struct {
		name string
		m    Msg
		want error
	}{
		{"version 7", &BarrierRequest{Envelope: Envelope{Version: 7}}, ErrBadVersion},
		{"meter instruction in 1.1", &FlowMod{Envelope: Envelope{Version: Version11}, Instructions: Instructions{Meter: 1}}, ErrUnsupported},
		{"IPv6 match in a 1.1 flow mod", &FlowMod{Envelope: Envelope{Version: Version11}, Match: v6}, ErrUnsupported},
		{"IPv6 match in a 1.0 flow mod", &FlowMod{Envelope: env10(1), Match: v6}, ErrUnsupported},
		{"goto_table in 1.0", &FlowMod{Envelope: env10(1), Instructions: Instructions{GotoTable: true}}, ErrUnsupported},
		{"ports in a 1.3 features reply", &FeaturesReply{Envelope: env13(1), Ports: []Port{{}}}, ErrUnsupported},
		{"Nicira message in 1.3", &NXSetFlowFormat{Envelope: env13(1)}, ErrUnsupported},
		{"role request in 1.0", &RoleRequest{Envelope: env10(1)}, ErrUnsupported},
		{"table features in 1.0", &TableFeaturesReply{Envelope: env10(1)}, ErrUnsupported},
		{"message over 64 KiB", &EchoRequest{Envelope: env10(1), Data: make([]byte, 70000)}, ErrTooLong},
		{"32-bit port in 1.0 port status", &PortStatus{Envelope: env10(1), Port: Port{PortNo: 0x10000}}, ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.m.Append([]byte{0xaa})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if len(b) != 1 {
				t.Fatalf("failed encode left % x", b)
			}
		})
	}
}

// TestCrossVersion: a message built once encodes in either version and
// decodes back to the same meaning.
func TestCrossVersion(t *testing.T) {
	for _, v := range []uint8{Version10, Version13} {
		fm := &FlowMod{Envelope: Envelope{Version: v, Xid: 1}, Command: FlowAdd, Priority: 5, BufferID: NoBuffer,
			OutPort: PortAny, OutGroup: GroupAny, Match: tcpMatch(),
			Instructions: Instructions{Apply: []Action{Output(PortLocal, 0), Resubmit(PortInPort, 1)}}}
		b, err := fm.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		got := m.(*FlowMod)
		if got.Match != fm.Match || len(got.Instructions.Apply) != 2 ||
			!got.Instructions.Apply[0].Equal(fm.Instructions.Apply[0]) || !got.Instructions.Apply[1].Equal(fm.Instructions.Apply[1]) {
			t.Fatalf("v%d: got %+v", v, got)
		}
	}
}
