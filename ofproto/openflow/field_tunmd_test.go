package openflow

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"
)

// tunMDCaptures are ovs-ofctl 3.1's flow mods with tun_metadata fields:
// matches (exact, masked), set_field, load and move, over NXM and OXM.
// TestOvsOfctlTunMetadata records them (OFCTL_RECORD=1).
var tunMDCaptures = []capture{
	{"add-flow-tunmd-nxm", []string{"add-flow", "SW",
		"tun_metadata0=0xa,actions=set_field:0xb->tun_metadata1,output:2"}},
	{"add-flow-tunmd-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"icmp,tun_metadata0=0x1234/0xff00,tun_metadata63=0x0102030405060708," +
			"actions=set_field:0xa->tun_metadata0,load:0x5->NXM_NX_TUN_METADATA2[0..7],move:NXM_NX_TUN_METADATA0[0..15]->NXM_NX_REG0[0..15],output:2"}},
	// ovn-controller 23.03's output to a remote chassis over geneve
	// (table 39): in 1.5 the move is OFPAT_COPY_FIELD into tun_metadata0.
	{"add-flow-tunmd-of15", []string{"-O", "OpenFlow15", "add-flow", "SW",
		"table=39,priority=100,reg15=0x3,metadata=0x1,actions=set_field:0x1/0xffffff->tun_id,set_field:0x3->tun_metadata0," +
			"move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30],output:3"}},
}

func TestOvsOfctlTunMetadata(t *testing.T) {
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		t.Skip("ovs-ofctl not installed")
	}
	defer withTunMDLayout()()
	s := newFakeSwitch(t)
	for _, c := range tunMDCaptures {
		s.ofctl(t, c.args...)
		raw, _ := s.take(t)
		if os.Getenv("OFCTL_RECORD") == "1" {
			writeCapture(t, c, raw)
			continue
		}
	}
}

// withTunMDLayout maps tun_metadata0-3 (4 bytes each) and tun_metadata63
// (8 bytes) for a test and returns the undo.
func withTunMDLayout() func() {
	old := CurrentTunMDLayout()
	var l TunMDLayout
	for i := range 4 {
		l[i] = TunMDLoc{Off: uint8(4 * i), Len: 4}
	}
	l[63] = TunMDLoc{Off: 16, Len: 8}
	SetTunMDLayout(l)
	return func() { SetTunMDLayout(old) }
}

// TestTunMetadataCaptures decodes ovs-ofctl's tun_metadata flow mods
// against a layout: values right-aligned in the mapped length, masks,
// set_field, load and move; and an unmapped field is
// NXFMFC_INVALID_TLV_FIELD.
func TestTunMetadataCaptures(t *testing.T) {
	get := func(name string) *FlowMod {
		raws := readCapture(t, name)
		for _, raw := range raws {
			m, err := Decode(raw)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if fm, ok := m.(*FlowMod); ok {
				return fm
			}
		}
		t.Fatalf("%s: no flow mod", name)
		return nil
	}
	func() {
		defer withTunMDLayout()()
		fm := get("add-flow-tunmd-nxm")
		md, mm := fm.Match.Key.Tunnel.Metadata, fm.Match.Mask.Tunnel.Metadata
		if md.Present != 1 || mm.Present != 1 || [4]byte(md.Opts[:4]) != [4]byte{0, 0, 0, 0xa} || [4]byte(mm.Opts[:4]) != [4]byte{0xff, 0xff, 0xff, 0xff} {
			t.Errorf("nxm match: %+v / %+v", md, mm)
		}
		a := fm.Instructions.Apply[0]
		if a.Type != ActSetField || a.Field != FieldTunMetadata0+1 || [4]byte(a.Value[:4]) != [4]byte{0, 0, 0, 0xb} {
			t.Errorf("nxm set_field: %+v", a)
		}
		// Re-encoded as ovs-vswitchd does: the mapped length.
		b, err := AppendNXM(nil, &fm.Match)
		if err != nil || !bytes.Equal(b, []byte{0x00, 0x01, 0x50, 0x04, 0, 0, 0, 0x0a}) {
			t.Errorf("AppendNXM: % x, %v", b, err)
		}
		acts, err := AppendActions10(nil, fm.Instructions.Apply[:1])
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeActions10(nil, acts)
		if err != nil || len(back) != 1 || !back[0].Equal(a) {
			t.Errorf("set_field round trip: % x -> %+v, %v", acts, back, err)
		}

		fm = get("add-flow-tunmd-of13")
		md, mm = fm.Match.Key.Tunnel.Metadata, fm.Match.Mask.Tunnel.Metadata
		if md.Present != 1|1<<63 || mm.Present != 1|1<<63 || [4]byte(md.Opts[:4]) != [4]byte{0, 0, 0x12, 0} ||
			[4]byte(mm.Opts[:4]) != [4]byte{0, 0, 0xff, 0} || [8]byte(md.Opts[16:24]) != [8]byte{1, 2, 3, 4, 5, 6, 7, 8} {
			t.Errorf("of13 match: %+v / %+v", md, mm)
		}
		ap := fm.Instructions.Apply
		if len(ap) != 4 || ap[0].Type != ActSetField || ap[0].Field != FieldTunMetadata0 || ap[0].Value[3] != 0xa ||
			ap[1].Type != ActRegLoad || ap[1].Field != FieldTunMetadata0+2 || ap[1].Ofs != 0 || ap[1].NBits != 8 || ap[1].Load != 5 ||
			ap[2].Type != ActRegMove || ap[2].Src != FieldTunMetadata0 || ap[2].NBits != 16 || ap[2].Field != FieldReg0 {
			t.Errorf("of13 actions: %+v", ap)
		}

		fm = get("add-flow-tunmd-of15")
		ap = fm.Instructions.Apply
		if len(ap) != 4 || ap[2].Type != ActRegMove || !ap[2].CopyField || ap[2].Src != FieldReg0+14 || ap[2].SrcOfs != 0 ||
			ap[2].NBits != 15 || ap[2].Field != FieldTunMetadata0 || ap[2].Ofs != 16 {
			t.Fatalf("of15 actions: %+v", ap)
		}
		// Written back (flow stats) as OpenFlow 1.5 copy_field, and read
		// again to the same action.
		acts, err = appendActions13(nil, Version15, ap[2:3])
		if err != nil {
			t.Fatal(err)
		}
		back, err = decodeActions13(nil, Version15, acts)
		if err != nil || len(back) != 1 || !back[0].Equal(ap[2]) {
			t.Errorf("copy_field round trip: % x -> %+v, %v", acts, back, err)
		}
	}()
	// Unmapped: refused as ovs-vswitchd refuses it.
	raws := readCapture(t, "add-flow-tunmd-nxm")
	var err error
	for _, raw := range raws {
		if _, err = Decode(raw); err != nil {
			break
		}
	}
	var oe *Error
	if !errors.As(err, &oe) || oe.Code != 536 || oe.Experimenter != NXVendorID {
		t.Errorf("unmapped field: %v, want NXFMFC_INVALID_TLV_FIELD", err)
	}
}
