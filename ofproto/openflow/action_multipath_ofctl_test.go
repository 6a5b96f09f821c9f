package openflow

import (
	"bytes"
	"encoding/hex"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// hashActionCaptures are the ovs-ofctl 3.1 sessions behind the multipath
// and bundle codecs, recorded as TestOvsOfctl records its own
// (OFCTL_RECORD=1): every hash field set, every algorithm, destinations of
// several widths, reserved member ports.
var hashActionCaptures = []capture{
	{"multipath-of10", []string{"add-flow", "SW",
		"ip,actions=multipath(eth_src,50,modulo_n,1,0,NXM_NX_REG0[])," +
			"multipath(symmetric_l4,1024,hash_threshold,2,0,NXM_NX_REG1[0..1])," +
			"multipath(symmetric_l3l4,0,hrw,3,0,NXM_NX_REG2[16..31])," +
			"multipath(symmetric_l3l4+udp,7,iter_hash,5,8,NXM_NX_REG3[])," +
			"multipath(nw_src,1,hrw,65536,0,NXM_NX_REG4[0..15])," +
			"multipath(nw_dst,2,modulo_n,2,0,NXM_OF_ETH_DST[0..7]),output:1"}},
	{"multipath-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"tcp,actions=multipath(symmetric_l3,65535,iter_hash,100,200,NXM_NX_REG5[8..15]),output:2"}},
	{"bundle-of10", []string{"add-flow", "SW",
		"actions=bundle(eth_src,0,hrw,ofport,members:4,8)," +
			"bundle(symmetric_l4,60,active_backup,ofport,members:1,2,3,LOCAL,IN_PORT)," +
			"bundle_load(nw_src,3,hrw,ofport,NXM_NX_REG0[],members:1,5)"}},
	{"bundle-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"ip,actions=bundle_load(symmetric_l3l4+udp,9,active_backup,ofport,NXM_NX_REG7[0..15],members:3,2,1,6,7)"}},
}

// TestOvsOfctlHashActionCaptures records (OFCTL_RECORD=1) or checks the
// captures: every message decodes and re-encodes to ovs-ofctl's bytes.
func TestOvsOfctlHashActionCaptures(t *testing.T) {
	recordOrCheckCaptures(t, hashActionCaptures)
}

// TestHashActionCaptureMeaning checks what the recorded actions decode
// to, and that the same actions built here encode to ovs-ofctl's bytes.
func TestHashActionCaptureMeaning(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []Action
	}{
		{"multipath-of10", []Action{
			Multipath(HashEthSrc, 50, MultipathModuloN, 1, 0, FieldReg0, 0, 32),
			Multipath(HashSymmetricL4, 1024, MultipathHashThreshold, 2, 0, FieldReg1, 0, 2),
			Multipath(HashSymmetricL3L4, 0, MultipathHRW, 3, 0, FieldReg2, 16, 16),
			Multipath(HashSymmetricL3L4UDP, 7, MultipathIterHash, 5, 8, FieldReg3, 0, 32),
			Multipath(HashNwSrc, 1, MultipathHRW, 65536, 0, FieldReg4, 0, 16),
			Multipath(HashNwDst, 2, MultipathModuloN, 2, 0, FieldEthDst, 0, 8),
			Output(1, 0)}},
		{"multipath-of13", []Action{Multipath(HashSymmetricL3, 65535, MultipathIterHash, 100, 200, FieldReg5, 8, 8), Output(2, 0)}},
		{"bundle-of10", []Action{
			Bundle(HashEthSrc, 0, BundleHRW, []uint32{4, 8}, FieldNone, 0, 0),
			Bundle(HashSymmetricL4, 60, BundleActiveBackup, []uint32{1, 2, 3, PortLocal, PortInPort}, FieldNone, 0, 0),
			Bundle(HashNwSrc, 3, BundleHRW, []uint32{1, 5}, FieldReg0, 0, 32)}},
		{"bundle-of13", []Action{Bundle(HashSymmetricL3L4UDP, 9, BundleActiveBackup, []uint32{3, 2, 1, 6, 7}, FieldReg7, 0, 16)}},
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
		if got := fm.Instructions.Apply; !actionsEqual(got, tc.want) {
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

// TestHashActionDecodeErrors: what ovs-vswitchd 3.1 refuses.
func TestHashActionDecodeErrors(t *testing.T) {
	mp := func(edit func(b []byte)) []byte {
		// multipath(eth_src,0,modulo_n,4,0,NXM_NX_REG0[0..1])
		b := nxActionHeader(nil, 32, NXASTMultipath)
		b = zeros(be16(be16(b, 0), 0), 2)
		b = zeros(be32(be16(be16(b, 0), 3), 0), 2)
		b = be32(be16(b, 0<<6|1), 0x00010004)
		edit(b)
		return b
	}
	bd := func(sub uint16, edit func(b []byte)) []byte {
		// bundle(eth_src,0,hrw,ofport,members:1,2)
		b := nxActionHeader(nil, 40, sub)
		b = be16(be16(be16(b, BundleHRW), 0), 0)
		b = zeros(be32(be16(be16(be32(b, nxmOfInPort), 2), 0), 0), 4)
		b = zeros(be16(be16(b, 1), 2), 4)
		if sub == NXASTBundleLoad {
			b[22], b[23] = 0, 15 // 16 bits
			copy(b[24:], []byte{0, 1, 0, 4})
		}
		edit(b)
		return b
	}
	nop := func([]byte) {}
	for _, tc := range []struct {
		name string
		act  []byte
		ok   bool
	}{
		{"multipath", mp(nop), true},
		{"multipath fields 7", mp(func(b []byte) { b[11] = 7 }), false},
		{"multipath algorithm 4", mp(func(b []byte) { b[17] = 4 }), false},
		{"multipath 5 links in 2 bits", mp(func(b []byte) { b[19] = 4 }), false},
		{"multipath bits past the field", mp(func(b []byte) { b[26], b[27] = 31<<6>>8, 31<<6&0xff|1 }), false},
		{"multipath unknown field", mp(func(b []byte) { b[28] = 0x7f }), false},
		{"multipath short", mp(nop)[:24], false},
		{"bundle", bd(NXASTBundle, nop), true},
		{"bundle_load", bd(NXASTBundleLoad, nop), true},
		{"bundle algorithm 2", bd(NXASTBundle, func(b []byte) { b[11] = 2 }), false},
		{"bundle fields 9", bd(NXASTBundle, func(b []byte) { b[13] = 9 }), false},
		{"bundle member type", bd(NXASTBundle, func(b []byte) { b[19] = 4 }), false},
		{"bundle destination", bd(NXASTBundle, func(b []byte) { b[27] = 1 }), false},
		{"bundle reserved", bd(NXASTBundle, func(b []byte) { b[31] = 1 }), false},
		{"bundle members past the end", bd(NXASTBundle, func(b []byte) { b[21] = 5 }), false},
		{"bundle controller member", bd(NXASTBundle, func(b []byte) { b[32], b[33] = 0xff, 0xfd }), false},
		{"bundle NONE member", bd(NXASTBundle, func(b []byte) { b[32], b[33] = 0xff, 0xff }), true},
		{"bundle_load into 8 bits", bd(NXASTBundleLoad, func(b []byte) { b[23] = 7 }), false},
	} {
		a, err := decodeVendorAction(Version10, tc.act)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %+v, %v", tc.name, a, err)
		}
	}
}

// TestHashActionOvsOfctlDump serves the recorded flows back to the real
// ovs-ofctl as flow stats: it prints what it prints for the same text
// (parse-flow).
func TestHashActionOvsOfctlDump(t *testing.T) {
	checkOvsOfctlDumpsCaptures(t, hashActionCaptures, func(got string) bool {
		return strings.Contains(got, "multipath(") || strings.Contains(got, "bundle")
	})
}

// checkOvsOfctlDumpsCaptures serves each capture's flow mods back to the
// real ovs-ofctl as flow stats, in the capture's version: dump-flows must
// print the actions as parse-flow prints the capture's flow text, and
// what it prints must pass ok.
func checkOvsOfctlDumpsCaptures(t *testing.T, cs []capture, ok func(got string) bool) {
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		t.Skip("ovs-ofctl not installed")
	}
	parsed := regexp.MustCompile(`FLOW_MOD (?:\(OF1\.[0-9]\) )?\(xid=0x[0-9a-f]+\): ADD (?:table:(\d+) )?(.*)$`)
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			s := newFakeSwitch(t)
			var opts []string
			if c.args[0] == "-O" {
				opts = c.args[:2]
			}
			flowText := c.args[len(c.args)-1]
			s.mu.Lock()
			for _, raw := range readCapture(t, c.name) {
				m, err := Decode(raw)
				if err != nil {
					t.Fatal(err)
				}
				if fm, ok := m.(*FlowMod); ok {
					var fs FlowStats
					fs.Priority, fs.Match, fs.Instructions = fm.Priority, fm.Match, fm.Instructions
					s.flows = append(s.flows, fs)
				}
			}
			s.mu.Unlock()
			out := s.ofctl(t, append(opts, "dump-flows", "SW")...)
			s.take(t)
			ref, err := exec.Command("ovs-ofctl", append(opts, "parse-flow", flowText)...).Output()
			if err != nil {
				t.Fatal(err)
			}
			var want string
			for _, line := range strings.Split(string(ref), "\n") {
				if m := parsed.FindStringSubmatch(line); m != nil {
					want = m[2]
				}
			}
			var got string
			for _, line := range strings.Split(out, "\n") {
				if i := strings.Index(line, "n_bytes=0, "); i >= 0 {
					got = line[i+len("n_bytes=0, "):]
				}
			}
			if want == "" || got != want || !ok(got) {
				t.Errorf("dump-flows:\n got %s\nwant %s\n(%s)", got, want, out)
			}
		})
	}
}

// FuzzHashAction: the multipath and bundle decoders take any action
// without panicking, and what they accept re-encodes to the same bytes
// (bundle's member padding aside).
func FuzzHashAction(f *testing.F) {
	for _, s := range []string{
		// multipath(symmetric_l3l4,0,hrw,3,0,NXM_NX_REG2[16..31])
		"ffff002000002320" + "000a" + "000200000000" + "00020002" + "00000000" + "0000" + "040f" + "00010404",
		// bundle(symmetric_l4,60,active_backup,ofport,members:1,2,3,LOCAL)
		"ffff002800002320" + "000c" + "0000" + "0001" + "003c" + "00000002" + "0004" + "0000" + "00000000" + "00000000" +
			"000100020003fffe",
		// bundle_load(nw_src,3,hrw,ofport,NXM_NX_REG0[],members:1,5)
		"ffff002800002320" + "000d" + "0001" + "0004" + "0003" + "00000002" + "0002" + "001f" + "00010004" + "00000000" +
			"0001000500000000",
	} {
		b, err := hex.DecodeString(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 16 || u16(b) != ActVendorType || int(u16(b[2:])) != len(b) || len(b)%8 != 0 {
			return
		}
		a, err := decodeVendorAction(Version13, b)
		if err != nil || (a.Type != ActMultipath && a.Type != ActBundle) {
			return
		}
		var out []byte
		if a.Type == ActMultipath {
			out, err = appendMultipath(nil, &a)
		} else {
			out, err = appendBundle(nil, &a)
		}
		if err != nil {
			t.Fatalf("%x decoded as %+v, does not re-encode: %v", b, a, err)
		}
		want := append([]byte(nil), b...)
		if a.Type == ActMultipath {
			want[14], want[15], want[24], want[25] = 0, 0, 0, 0 // padding is not kept
		} else {
			want = want[:32+2*len(a.Hash.Members)]
			for len(want)%8 != 0 {
				want = append(want, 0)
			}
			want[2], want[3] = byte(len(want)>>8), byte(len(want)) // members past n_members are dropped
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("round trip:\n in  %x\n out %x", b, out)
		}
	})
}
