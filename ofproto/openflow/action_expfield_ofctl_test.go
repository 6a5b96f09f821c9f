package openflow

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// expFieldActionCaptures are the ovs-ofctl 3.1 sessions behind the
// experimenter field headers (8 bytes: class 0xffff, field, length, then
// the experimenter ID) in the actions that name a field: move (NXAST_REG_MOVE,
// OpenFlow 1.5's copy_field), push/pop and output_reg (NXAST_OUTPUT_REG2),
// for the ERSPAN metadata and NSH fields, in OpenFlow 1.0, 1.3 and 1.5.
var expFieldActionCaptures = []capture{
	{"expfield-move-of10", []string{"add-flow", "SW",
		"actions=move:reg0[0..5]->tun_erspan_hwid[],move:tun_erspan_idx[]->reg1[0..19],move:tun_erspan_ver[]->reg2[4..7]"}},
	{"expfield-move-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"actions=move:reg0[0..5]->tun_erspan_hwid[],move:tun_erspan_idx[]->reg1[0..19],move:tun_erspan_dir[]->tun_erspan_hwid[3]"}},
	{"expfield-move-of15", []string{"-O", "OpenFlow15", "add-flow", "SW",
		"actions=move:reg0[0..5]->tun_erspan_hwid[],move:tun_erspan_idx[]->reg1[0..19],move:tun_erspan_idx[0..3]->tun_erspan_ver[]"}},
	{"expfield-nsh-of10", []string{"add-flow", "SW",
		"dl_type=0x894f,actions=move:nsh_c1[]->reg0[],move:reg1[0..23]->nsh_spi[],push:nsh_c2[],pop:nsh_c3[]"}},
	{"expfield-nsh-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"dl_type=0x894f,actions=move:nsh_c1[]->reg0[],move:reg1[0..7]->nsh_si[],push:nsh_c2[],pop:nsh_c4[]"}},
	{"expfield-nsh-of15", []string{"-O", "OpenFlow15", "add-flow", "SW",
		"dl_type=0x894f,actions=move:nsh_c1[]->nsh_c2[],move:reg1[0..7]->nsh_ttl[],push:nsh_spi[],pop:nsh_c3[8..15]"}},
	{"expfield-stack-of10", []string{"add-flow", "SW", "actions=push:tun_erspan_idx[],pop:tun_erspan_hwid[0..5]"}},
	{"expfield-stack-of13", []string{"-O", "OpenFlow13", "add-flow", "SW", "actions=push:tun_erspan_ver[],pop:tun_erspan_idx[4..11]"}},
	{"expfield-stack-of15", []string{"-O", "OpenFlow15", "add-flow", "SW", "actions=push:tun_erspan_dir[],pop:tun_erspan_dir[]"}},
	{"expfield-outputreg-of10", []string{"add-flow", "SW", "actions=output:tun_erspan_idx[0..15]"}},
	{"expfield-outputreg-of13", []string{"-O", "OpenFlow13", "add-flow", "SW", "actions=output:tun_erspan_hwid[]"}},
	{"expfield-outputreg-of15", []string{"-O", "OpenFlow15", "add-flow", "SW", "dl_type=0x894f,actions=output:nsh_c1[0..15]"}},
	{"expfield-load-of10", []string{"add-flow", "SW", "actions=load:1->tun_erspan_ver[],load:0x55->tun_erspan_idx[]"}},
	{"expfield-load-of13", []string{"-O", "OpenFlow13", "add-flow", "SW", "actions=load:1->tun_erspan_idx[0..3],load:5->tun_erspan_hwid[]"}},
	{"expfield-load-of15", []string{"-O", "OpenFlow15", "add-flow", "SW", "actions=load:1->tun_erspan_dir[],load:0x7->tun_erspan_idx[4..6]"}},
	{"expfield-nshload-of10", []string{"add-flow", "SW", "dl_type=0x894f,actions=load:1->nsh_c1[0..7],load:0x12->nsh_spi[]"}},
	{"expfield-nshload-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"ip,actions=encap(nsh),load:1->nsh_c1[0..7],load:0x12->nsh_spi[],encap(ethernet),output:2"}},
}

// TestOvsOfctlExpFieldActionCaptures records (OFCTL_RECORD=1) or checks
// the captures: every message decodes and re-encodes to ovs-ofctl's bytes.
func TestOvsOfctlExpFieldActionCaptures(t *testing.T) {
	recordOrCheckCaptures(t, expFieldActionCaptures)
}

// TestExpFieldActionOvsOfctlDump serves the recorded flows back to the
// real ovs-ofctl as flow stats: it prints the experimenter fields as it
// parsed them (parse-flow of the same text); the loads print as masked
// set_fields, as ovs-ofctl parsed them.
func TestExpFieldActionOvsOfctlDump(t *testing.T) {
	checkOvsOfctlDumpsCaptures(t, expFieldActionCaptures, func(got string) bool {
		return strings.Contains(got, "NXOXM_") || strings.Contains(got, "tun_erspan_") || strings.Contains(got, "->nsh_")
	})
}

// TestExpFieldActionCaptureMeaning checks what some recorded actions
// decode to, and that the same actions built here encode to ovs-ofctl's
// bytes.
func TestExpFieldActionCaptureMeaning(t *testing.T) {
	move := func(src Field, srcOfs uint16, dst Field, ofs, n uint16) Action {
		return Action{Type: ActRegMove, Src: src, SrcOfs: srcOfs, Field: dst, Ofs: ofs, NBits: n}
	}
	for _, tc := range []struct {
		name string
		want []Action
	}{
		{"expfield-move-of10", []Action{
			move(FieldReg0, 0, FieldTunErspanHwid, 0, 6),
			move(FieldTunErspanIdx, 0, FieldReg1, 0, 20),
			move(FieldTunErspanVer, 0, FieldReg2, 4, 4)}},
		{"expfield-nsh-of13", []Action{
			move(FieldNSHC1, 0, FieldReg0, 0, 32),
			move(FieldReg1, 0, FieldNSHSI, 0, 8),
			{Type: ActStackPush, Field: FieldNSHC2, NBits: 32},
			{Type: ActStackPop, Field: FieldNSHC4, NBits: 32}}},
		{"expfield-stack-of13", []Action{
			{Type: ActStackPush, Field: FieldTunErspanVer, NBits: 4},
			{Type: ActStackPop, Field: FieldTunErspanIdx, Ofs: 4, NBits: 8}}},
		{"expfield-outputreg-of10", []Action{{Type: ActOutputReg, Src: FieldTunErspanIdx, NBits: 16, MaxLen: 0xffff, OutputReg2: true}}},
		{"expfield-load-of13", []Action{
			{Type: ActSetField, Field: FieldTunErspanIdx, Value: [16]byte{0, 0, 0, 1}, Mask: [16]byte{0, 0, 0, 0x0f}, Masked: true},
			{Type: ActSetField, Field: FieldTunErspanHwid, Value: [16]byte{5}, Mask: [16]byte{0x3f}, Masked: true}}},
	} {
		var fm *FlowMod
		var raw []byte
		for _, r := range readCapture(t, tc.name) {
			m, err := Decode(r)
			if err != nil {
				t.Fatal(err)
			}
			if f, ok := m.(*FlowMod); ok {
				fm, raw = f, r
			}
		}
		if fm == nil {
			t.Fatalf("%s: no flow mod", tc.name)
		}
		got := fm.Instructions.Apply
		if !actionsEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
		fm.Instructions.Apply = tc.want
		out, err := fm.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, raw) {
			t.Errorf("%s: built actions encode\n % x\nwant % x", tc.name, out, raw)
		}
	}
}

// TestExpFieldActionDecodeErrors: what ovs-vswitchd 3.1's decoders
// refuse in the 8-byte headers (nx_pull_header and the actions' own
// checks).
func TestExpFieldActionDecodeErrors(t *testing.T) {
	hexAct := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		act  string
		ok   bool
	}{
		{"move reg0[0..5]->tun_erspan_hwid[]", "ffff002000002320" + "0006" + "000600000000" + "00010004" + "ffff1c0500002320" + "00000000", true},
		{"move, unknown experimenter", "ffff002000002320" + "0006" + "000600000000" + "00010004" + "ffff1c0500002321" + "00000000", false},
		{"move, masked experimenter header", "ffff002000002320" + "0006" + "000600000000" + "00010004" + "ffff1d0500002320" + "00000000", false},
		{"move, experimenter header length", "ffff002000002320" + "0006" + "000600000000" + "00010004" + "ffff1c0600002320" + "00000000", false},
		{"move, nonzero padding", "ffff002000002320" + "0006" + "000600000000" + "00010004" + "ffff1c0500002320" + "00000001", false},
		{"move, header cut off", "ffff001800002320" + "0006" + "000600000000" + "00010004" + "ffff1c05", false},
		{"move, bits past the field", "ffff002000002320" + "0006" + "000900000000" + "00010004" + "ffff1c0500002320" + "00000000", false},
		{"push:tun_erspan_idx[]", "ffff001800002320" + "001b0000" + "ffff160800002320" + "00140000", true},
		{"push, nonzero padding", "ffff001800002320" + "001b0000" + "ffff160800002320" + "00140001", false},
		// OVS's widths (mf_field n_bits): tun_erspan_idx has 20 bits,
		// tun_erspan_hwid 6, nsh_spi 24.
		{"push:tun_erspan_idx[4..19]", "ffff001800002320" + "001b0004" + "ffff160800002320" + "00100000", true},
		{"push:tun_erspan_idx[4..23]", "ffff001800002320" + "001b0004" + "ffff160800002320" + "00140000", false},
		{"pop:nsh_spi[16..31]", "ffff001800002320" + "001c0010" + "ffff0808005ad650" + "00100000", false},
		{"pop:nsh_spi[16..23]", "ffff001800002320" + "001c0010" + "ffff0808005ad650" + "00080000", true},
		{"move reg0[0..6]->tun_erspan_hwid[0..6]", "ffff002000002320" + "0006" + "000700000000" + "00010004" + "ffff1c0500002320" + "00000000", false},
		{"output_reg2 tun_erspan_idx[16..23]", "ffff001800002320" + "00200407ffff" + "ffff160800002320" + "0000", false},
		{"output_reg2 tun_erspan_idx[12..19]", "ffff001800002320" + "00200307ffff" + "ffff160800002320" + "0000", true},
		{"output_reg2 nsh_c1", "ffff001800002320" + "0020000fffff" + "ffff0c08005ad650" + "0000", true},
		{"output_reg2, length 32", "ffff002000002320" + "0020000fffff" + "ffff0c08005ad650" + "0000" + "0000000000000000", false},
		{"output_reg2, nonzero padding", "ffff001800002320" + "0020000fffff" + "ffff0c08005ad650" + "0100", false},
		{"output_reg2 reg0", "ffff001800002320" + "0020000fffff" + "00010004" + "000000000000", true},
	} {
		a, err := decodeVendorAction(Version10, hexAct(tc.act))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %+v, %v", tc.name, a, err)
		}
	}
}

// TestOutputReg2RawForm: an NXAST_OUTPUT_REG2 of a field with a 4-byte
// header is written back as it came, as ovs-vswitchd keeps the raw form;
// the same action built without OutputReg2 is NXAST_OUTPUT_REG.
func TestOutputReg2RawForm(t *testing.T) {
	in, _ := hex.DecodeString("ffff001800002320" + "0020000fffff" + "00010004" + "000000000000")
	a, err := decodeVendorAction(Version10, in)
	if err != nil || !a.OutputReg2 || a.Src != FieldReg0 {
		t.Fatalf("%+v, %v", a, err)
	}
	if out, err := appendOutputReg(nil, &a); err != nil || !bytes.Equal(out, in) {
		t.Errorf("re-encoded % x, %v; want % x", out, err, in)
	}
	a.OutputReg2 = false
	if out, err := appendOutputReg(nil, &a); err != nil || u16(out[8:]) != NXASTOutputReg {
		t.Errorf("without OutputReg2: % x, %v", out, err)
	}
}
