package openflow

import (
	"encoding/hex"
	"testing"
)

// xregMatch is a match on registers as ovn-controller writes them, and
// the corners of OpenFlow 1.5's 64-bit OXM_OF_PKT_REG form: a lone low
// half (reg3), a masked pair (reg10/reg11), a masked xreg over both halves,
// an xxreg spanning two xregs, and the last register alone.
const xregMatch = "table=3,priority=10,reg3=0x1,reg10=0x5/0xff,reg11=0x7,xreg4=0x1234/0xffff00000000ffff," +
	"xxreg1=0x10000000200000003/0xffffffffffffffffffffffff,reg15=0x8000"

// xregActs write the same registers with set_field (NXM_NX_REG in every
// version, OXM_OF_PKT_REG for xreg, NXM_NX_XXREG for xxreg, masked or
// not), load and move.
const xregActs = "actions=set_field:0x5->reg7,set_field:0x1->xreg2,set_field:0x1/0x3->xreg3,set_field:1->xxreg1," +
	"set_field:0x1/0x101->xxreg3,load:0x3->NXM_NX_REG2[0..7],move:NXM_NX_REG14[]->NXM_NX_REG15[],output:1"

// xregCaptures are the ovs-ofctl 3.1 sessions behind OpenFlow 1.5's
// register encoding (appendXRegs), with 1.3's NXM_NX_REG form and NXM
// alongside, recorded with OFCTL_RECORD=1.
var xregCaptures = []capture{
	{"xreg-match-of15", []string{"-O", "OpenFlow15", "add-flow", "SW", xregMatch + "," + xregActs}},
	{"xreg-match-of14", []string{"-O", "OpenFlow14", "add-flow", "SW", xregMatch + "," + xregActs}},
	{"xreg-match-of13", []string{"-O", "OpenFlow13", "add-flow", "SW", xregMatch + "," + xregActs}},
	{"xreg-match-nxm", []string{"add-flow", "SW", xregMatch + "," + xregActs}},
	{"xreg-del-of15", []string{"-O", "OpenFlow15", "--strict", "del-flows", "SW", xregMatch}},
	{"xreg-dump-of15", []string{"-O", "OpenFlow15", "dump-flows", "SW", "reg3=1,xreg7=0x55/0xff"}},
}

// TestOvsOfctlXRegCaptures records (OFCTL_RECORD=1) or checks the
// captures: every message decodes and re-encodes to ovs-ofctl's bytes.
func TestOvsOfctlXRegCaptures(t *testing.T) {
	recordOrCheckCaptures(t, xregCaptures)
	recordOrCheckCaptures(t, xregPacketOutCaptures)
}

// xregPacketOutCaptures: packet-outs whose pipeline starts with registers
// set (OpenFlow 1.5 carries them in the packet-out's match as xregs).
var xregPacketOutCaptures = []capture{
	{"xreg-packet-out-of13", []string{"-O", "OpenFlow13", "packet-out", "SW",
		"in_port=1,reg3=0x5,xreg2=0x100000002,packet=ffffffffffff00000000000108060001080006040001000000000001c0a80001000000000000c0a80002 actions=resubmit(,1)"}},
	{"xreg-packet-out-of15", []string{"-O", "OpenFlow15", "packet-out", "SW",
		"in_port=1,reg3=0x5,xreg2=0x100000002,packet=ffffffffffff00000000000108060001080006040001000000000001c0a80001000000000000c0a80002 actions=resubmit(,1)"}},
}

// TestXRegCapturesDecode: the 1.5 flow mod (xregs) and the 1.3 one
// (NXM_NX_REG) decode to the same match, the registers ovs-ofctl meant,
// and the 1.5 packet-out starts its pipeline with its registers.
func TestXRegCapturesDecode(t *testing.T) {
	fm15, fm13 := captureFlowMod(t, "xreg-match-of15"), captureFlowMod(t, "xreg-match-of13")
	if fm15.Match != fm13.Match {
		t.Errorf("1.5 match %s differs from 1.3's %s", &fm15.Match, &fm13.Match)
	}
	k, m := &fm15.Match.Key, &fm15.Match.Mask
	type reg struct{ v, m uint32 }
	for i, want := range map[int]reg{3: {1, ^uint32(0)}, 10: {5, 0xff}, 11: {7, ^uint32(0)}, 8: {0, 0xffff0000},
		9: {0x1234, 0xffff}, 4: {0, 0}, 5: {1, ^uint32(0)}, 6: {2, ^uint32(0)}, 7: {3, ^uint32(0)}, 15: {0x8000, ^uint32(0)}} {
		if got := (reg{k.Regs[i], m.Regs[i]}); got != want {
			t.Errorf("reg%d = %#x/%#x, want %#x/%#x", i, got.v, got.m, want.v, want.m)
		}
	}
	for _, raw := range readCapture(t, "xreg-packet-out-of15") {
		msg, err := Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		po, ok := msg.(*PacketOut)
		if !ok {
			continue
		}
		p := &po.Pipeline
		if po.InPort != 1 || p.Key.Regs[3] != 5 || p.Key.Regs[4] != 1 || p.Key.Regs[5] != 2 ||
			p.Mask.Regs[3] != ^uint32(0) || p.Mask.Regs[2] != 0 || p.Mask.InPort != 0 {
			t.Errorf("packet out in_port %d pipeline %s", po.InPort, p)
		}
		return
	}
	t.Error("no packet out in the capture")
}

// TestXRegsEncoding pins the two register encodings: OXM below 1.5 and
// NXM carry 32-bit NXM_NX_REGs, 1.5's OXM the 64-bit OXM_OF_PKT_REG pairs,
// exact when both halves are, masked (value cleared outside the mask)
// otherwise, none for a pair with no bit matched.
func TestXRegsEncoding(t *testing.T) {
	var m Match
	m.Key.Regs[3], m.Mask.Regs[3] = 1, ^uint32(0)
	m.Key.Regs[14], m.Mask.Regs[14] = 0xf, 0xf
	m.Key.Regs[8], m.Key.Regs[9], m.Mask.Regs[8], m.Mask.Regs[9] = 7, 8, ^uint32(0), ^uint32(0)
	for _, tc := range []struct {
		v    uint8
		want string
	}{
		{Version15, "80010310" + "0000000000000001" + "00000000ffffffff" + "80010808" + "0000000700000008" +
			"80010f10" + "0000000f00000000" + "0000000f00000000"},
		{Version13, "00010604000000010001100400000007000112040000000800011d08000000" + "0f0000000f"},
	} {
		b, err := appendTLVs(nil, &m, false, tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(b); got != tc.want {
			t.Errorf("version %d: %s, want %s", tc.v, got, tc.want)
		}
		var back Match
		if err := decodeTLVs(tc.v, b, &back); err != nil || back != m {
			t.Errorf("version %d: decodes to %s (%v)", tc.v, &back, err)
		}
	}
}

// FuzzXRegMatch15 holds OpenFlow 1.5's register encoding: any TLV list
// that decodes encodes in 1.5's terms and in 1.3's, both decode to the
// same match, and the 1.5 one carries no 32-bit NXM_NX_REG.
func FuzzXRegMatch15(f *testing.F) {
	for _, name := range []string{"xreg-match-of15", "xreg-dump-of15", "xreg-packet-out-of15"} {
		for _, raw := range readCapture(f, name) {
			if len(raw) > 16 && raw[0] == Version15 {
				f.Add(raw[16:]) // the match TLVs and whatever follows: the fuzzer trims
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Match
		if err := decodeTLVs(Version15, b, &m); err != nil {
			return
		}
		b15, err := appendTLVs(nil, &m, false, Version15)
		if err != nil {
			t.Fatalf("1.5 encode of %s: %v", &m, err)
		}
		b13, err := appendTLVs(nil, &m, false, Version13)
		if err != nil {
			t.Fatalf("1.3 encode of %s: %v", &m, err)
		}
		var m15, m13 Match
		if err := decodeTLVs(Version15, b15, &m15); err != nil || m15 != m {
			t.Fatalf("1.5 round trip: %v\n% x", err, b15)
		}
		if err := decodeTLVs(Version13, b13, &m13); err != nil || m13 != m {
			t.Fatalf("1.3 round trip: %v\n% x", err, b13)
		}
		for p := b15; len(p) >= 4; p = p[4+int(p[3]):] {
			if h := u32(p); h>>16 == uint32(ClassNXM1) && (h>>9)&0x7f < 16 {
				t.Fatalf("1.5 encoding carries NXM_NX_REG%d\n% x", (h>>9)&0x7f, b15)
			}
			if len(p) < 4+int(p[3]) {
				break
			}
		}
	})
}

// TestXRegsEncodeAllocs: a 1.5 packet-in with registers encodes into a
// grown buffer without allocating, as the 1.3 one does.
func TestXRegsEncodeAllocs(t *testing.T) {
	m := PacketIn{Envelope: Envelope{Version: Version15}, BufferID: NoBuffer, TotalLen: 42, InPort: 1, Data: make([]byte, 42)}
	m.Match.Key.InPort, m.Match.Mask.InPort = 1, ^uint32(0)
	m.Match.Key.Regs[3], m.Match.Mask.Regs[3] = 5, ^uint32(0)
	m.Match.Key.Regs[14], m.Match.Mask.Regs[14] = 3, ^uint32(0)
	buf := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() { buf, _ = m.Append(buf[:0]) }); n != 0 {
		t.Errorf("1.5 packet-in with registers: %v allocations per encode", n)
	}
}
