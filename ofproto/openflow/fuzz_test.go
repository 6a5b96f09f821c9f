package openflow

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Fuzz targets for every decoder of outside input. Each one checks that
// decoding never panics and that whatever decodes also encodes, and decodes
// again to the same value (encode is a right inverse of decode).
// Seed corpora live in testdata/fuzz/<target>; GEN_FUZZ_CORPUS=1 go test
// -run TestGenFuzzCorpus regenerates them from the golden tables and the
// ovs-ofctl captures.

func fuzzDecode(t *testing.T, b []byte) {
	m, err := Decode(b)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) && !errors.Is(err, ErrShortHeader) && !errors.Is(err, ErrBadLength) {
			t.Fatalf("decode error is neither *Error nor a length error: %v", err)
		}
		return
	}
	if ba, ok := m.(*BundleAdd); ok {
		// The bundled message is outside input too.
		fuzzDecode(t, ba.Message)
	}
	out, err := m.Append(nil)
	if err != nil {
		t.Fatalf("%T decoded but does not encode: %v\n%+v", m, err, m)
	}
	m2, err := Decode(out)
	if err != nil {
		t.Fatalf("%T: re-encoded bytes do not decode: %v\nin  % x\nout % x", m, err, b, out)
	}
	if d := cmp.Diff(m, m2, cmpOpts...); d != "" {
		t.Fatalf("%T changed across encode/decode (-first +second):\n%s\nin  % x\nout % x", m, d, b, out)
	}
}

// fuzzDecodeAs is a fuzz target that decodes its input as an OpenFlow
// version v message: it overwrites the version byte, so that every input
// exercises v's decoders.
func fuzzDecodeAs(v uint8) func(*testing.T, []byte) {
	return func(t *testing.T, b []byte) {
		if len(b) > 0 {
			b[0] = v
		}
		fuzzDecode(t, b)
	}
}

func FuzzDecode10(f *testing.F) {
	f.Fuzz(fuzzDecodeAs(Version10))
}

func FuzzDecode13(f *testing.F) {
	f.Fuzz(fuzzDecodeAs(Version13))
}

// FuzzDecode14 and FuzzDecode15 hold the 1.4 and 1.5 decoders (property
// lists, OXS stats, the 1.5 packet-out match, bundles) to the same rules.
func FuzzDecode14(f *testing.F) {
	f.Fuzz(fuzzDecodeAs(Version14))
}

func FuzzDecode15(f *testing.F) {
	f.Fuzz(fuzzDecodeAs(Version15))
}

// FuzzDecodeNXM holds the TLV match decoder: a decoded match encodes as
// NXM and as OXM, and both decode to the same match.
func FuzzDecodeNXM(f *testing.F) {
	// eth_type 0x894f, nsh_flags=1, nsh_spi=0x100, nsh_c1=5/0xff (experimenter OXMs).
	f.Add([]byte("\x00\x00\x06\x02\x89\x4f\xff\xff\x02\x05\x00\x5a\xd6\x50\x01" +
		"\xff\xff\x08\x08\x00\x5a\xd6\x50\x00\x00\x01\x00" +
		"\xff\xff\x0d\x0c\x00\x5a\xd6\x50\x00\x00\x00\x05\x00\x00\x00\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Match
		if err := DecodeNXM(Version13, b, &m); err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not an *Error: %v", err)
			}
			return
		}
		nxm, err := AppendNXM(nil, &m)
		if err != nil {
			t.Fatalf("NXM encode: %v", err)
		}
		oxm, err := AppendOXM(nil, &m)
		if err != nil {
			t.Fatalf("OXM encode: %v", err)
		}
		var a, c Match
		if err := DecodeNXM(Version10, nxm, &a); err != nil || a != m {
			t.Fatalf("NXM round trip: %v\n% x", err, nxm)
		}
		if n, err := DecodeOXM(oxm, &c); err != nil || c != m || n != len(oxm) {
			t.Fatalf("OXM round trip: %v\n% x", err, oxm)
		}
		// And 1.0 either carries it exactly or says it cannot.
		if m10, err := AppendMatch10(nil, &m); err == nil {
			var d Match
			if DecodeMatch10(m10, &d); d != m {
				t.Fatalf("1.0 round trip changed the match:\n%+v\n%+v", d, m)
			}
		} else if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("1.0 encode: %v", err)
		}
	})
}

// FuzzDecodeActions holds both action list decoders.
func FuzzDecodeActions(f *testing.F) {
	var xx [16]byte
	xx[0], xx[15] = 0x0a, 1
	regs := []Action{
		{Type: ActRegMove, Src: FieldXXReg0, Field: FieldXReg3, NBits: 64},
		{Type: ActRegMove, Src: FieldEthSrc, Field: FieldEthDst, NBits: 48},
		{Type: ActSetField, Field: FieldXXReg1, Value: xx},
		{Type: ActRegLoad, Field: FieldXXReg1, Ofs: 64, NBits: 32, Load: 1},
		// Experimenter fields' 8-byte headers in move, push/pop,
		// output_reg2 and a masked NXAST_REG_LOAD2.
		{Type: ActRegMove, Src: FieldTunErspanIdx, Field: FieldReg1, NBits: 20},
		{Type: ActRegMove, Src: FieldNSHC1, Field: FieldTunErspanHwid, SrcOfs: 2, NBits: 6},
		{Type: ActStackPush, Field: FieldNSHSPI, NBits: 24},
		{Type: ActStackPop, Field: FieldTunErspanVer, NBits: 4},
		{Type: ActOutputReg, Src: FieldTunErspanIdx, NBits: 16, MaxLen: 0xffff, OutputReg2: true},
		{Type: ActSetField, Field: FieldTunErspanVer, Value: [16]byte{1}, Mask: [16]byte{0x0f}, Masked: true},
	}
	for _, v13 := range []bool{false, true} {
		enc := AppendActions10
		if v13 {
			enc = AppendActions13
		}
		if b, err := enc(nil, regs); err == nil {
			f.Add(v13, b)
		} else {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, v13 bool, b []byte) {
		dec, enc := DecodeActions10, AppendActions10
		if v13 {
			dec, enc = DecodeActions13, AppendActions13
		}
		acts, err := dec(nil, b)
		if err != nil {
			return
		}
		out, err := enc(nil, acts)
		if err != nil {
			t.Fatalf("decoded actions do not encode: %v\n%+v", err, acts)
		}
		back, err := dec(nil, out)
		if err != nil || len(back) != len(acts) {
			t.Fatalf("re-decode: %v", err)
		}
		for i := range acts {
			if !acts[i].Equal(back[i]) {
				t.Fatalf("action %d changed: %+v -> %+v", i, acts[i], back[i])
			}
		}
	})
}

// FuzzFramer feeds a byte stream in chunks of fuzzer-chosen sizes: no
// panic, and every message returned has the length its header claims,
// within the limit.
func FuzzFramer(f *testing.F) {
	f.Fuzz(func(t *testing.T, max uint16, chunk uint8, stream []byte) {
		fr := NewFramer(int(max))
		r := bytes.NewReader(stream)
		step := int(chunk)%64 + 1
		for {
			sp := fr.Space()
			n, _ := r.Read(sp[:min(len(sp), step)])
			fr.Commit(n)
			for {
				m, err := fr.Next()
				if err != nil {
					if !errors.Is(err, ErrFrame) {
						t.Fatal(err)
					}
					return
				}
				if m == nil {
					break
				}
				if len(m) < HeaderLen || len(m) != int(u16(m[2:])) || len(m) > fr.max {
					t.Fatalf("message of %d bytes, header says %d, limit %d", len(m), u16(m[2:]), fr.max)
				}
			}
			if n == 0 {
				return
			}
		}
	})
}

// TestGenFuzzCorpus writes the seed corpora. It is a generator, not a
// check: it runs only with GEN_FUZZ_CORPUS=1.
func TestGenFuzzCorpus(t *testing.T) {
	if os.Getenv("GEN_FUZZ_CORPUS") != "1" {
		t.Skip("set GEN_FUZZ_CORPUS=1 to regenerate testdata/fuzz")
	}
	var msgs10, msgs13, msgs14, msgs15 [][]byte
	add := func(raw []byte) {
		switch raw[0] {
		case Version10:
			msgs10 = append(msgs10, raw)
		case Version14:
			msgs14 = append(msgs14, raw)
		case Version15:
			msgs15 = append(msgs15, raw)
		default:
			msgs13 = append(msgs13, raw)
		}
	}
	names := []string{"../ovs-testcontroller/of10", "../ovs-testcontroller/of13"}
	for _, c := range ofctlCaptures {
		names = append(names, c.name)
	}
	for _, name := range names {
		for _, raw := range readCapture(t, name) {
			add(raw)
		}
	}
	for _, m := range allGoldenMsgs(t) {
		raw, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		add(raw)
	}
	write := func(target string, i int, vals ...any) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s := "go test fuzz v1\n"
		for _, v := range vals {
			switch v := v.(type) {
			case []byte:
				s += "[]byte(" + strconv.Quote(string(v)) + ")\n"
			case bool:
				s += "bool(" + strconv.FormatBool(v) + ")\n"
			case uint16:
				s += "uint16(" + strconv.FormatUint(uint64(v), 10) + ")\n"
			case uint8:
				s += "byte('\\x" + strconv.FormatUint(uint64(v)|0x100, 16)[1:] + "')\n"
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "seed-"+strconv.Itoa(i)), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range msgs10 {
		write("FuzzDecode10", i, m)
	}
	for i, m := range msgs13 {
		write("FuzzDecode13", i, m)
	}
	// The 1.3 messages seed 1.4 and 1.5 too (the fuzzer sets the version
	// byte): most 1.4+ messages share their layout.
	for i, m := range append(msgs14, msgs13...) {
		write("FuzzDecode14", i, m)
	}
	for i, m := range append(msgs15, msgs13...) {
		write("FuzzDecode15", i, m)
	}
	i := 0
	rich := richMatches()
	var richNames []string
	for name := range rich {
		richNames = append(richNames, name)
	}
	sort.Strings(richNames) // deterministic seeds: no churn on regeneration
	for _, name := range richNames {
		m := rich[name]
		nxm, _ := AppendNXM(nil, &m)
		oxm, _ := AppendOXM(nil, &m)
		write("FuzzDecodeNXM", i, nxm)
		write("FuzzDecodeNXM", i+1, oxm[4:])
		i += 2
	}
	for j, name := range richNames {
		m := rich[name]
		var raw []byte
		kw, mw := m.Key.Words(), m.Mask.Words()
		for w := range kw {
			raw = be64(be64(raw, kw[w]), mw[w])
		}
		write("FuzzEncodeMatch", j, raw)
	}
	a10, _ := AppendActions10(nil, []Action{Output(1, 0), {Type: ActEnqueue, Port: 1, Queue: 2}, Resubmit(1, 2),
		{Type: ActRegLoad, Field: FieldReg0, NBits: 32, Load: 1}, {Type: ActSetVLANVID, VLANVID: 3}})
	nd := richMatches()["ipv6 nd"]
	a13, _ := AppendActions13(nil, []Action{Output(1, 0), {Type: ActPushVLAN, EthType: 0x8100}, {Type: ActGroup, Group: 1},
		SetField(FieldVLANVID, &nd.Key), SetField(FieldIPv6Src, &nd.Key)})
	write("FuzzDecodeActions", 0, false, a10)
	write("FuzzDecodeActions", 1, true, a13)
	stream, _ := testStream(t)
	write("FuzzFramer", 0, uint16(0), uint8(7), stream)
	write("FuzzFramer", 1, uint16(100), uint8(0), stream)
}

// FuzzEncodeMatch holds the match encoders to arbitrary Key/Mask values
// (the fuzzer's bytes laid over their words): no panic, a failure is
// ErrUnsupported, and whatever encodes decodes back to the masked match.
func FuzzEncodeMatch(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m Match
		kw, mw := m.Key.Words(), m.Mask.Words()
		for i := 0; i < len(kw) && 16*i+16 <= len(raw); i++ {
			kw[i], mw[i] = u64(raw[16*i:]), u64(raw[16*i+8:])
		}
		want := Match{Key: m.Key.Apply(&m.Mask), Mask: m.Mask}
		for _, enc := range []struct {
			name string
			fn   func([]byte, *Match) ([]byte, error)
			dec  func([]byte, *Match) error
		}{
			{"NXM", AppendNXM, func(b []byte, m *Match) error { return DecodeNXM(Version10, b, m) }},
			{"OXM", AppendOXM, func(b []byte, m *Match) error { _, err := DecodeOXM(b, m); return err }},
			{"OXM 1.5 (xregs)", func(b []byte, m *Match) ([]byte, error) { return AppendOXMV(b, Version15, m) },
				func(b []byte, m *Match) error { _, err := DecodeOXM(b, m); return err }},
			{"1.0", AppendMatch10, DecodeMatch10},
		} {
			b, err := enc.fn(nil, &m)
			if err != nil {
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("%s: %v", enc.name, err)
				}
				continue
			}
			var got Match
			if err := enc.dec(b, &got); err != nil {
				t.Fatalf("%s: our own encoding does not decode: %v\n% x", enc.name, err, b)
			}
			if got != want {
				t.Fatalf("%s: round trip changed the match\n got %+v\nwant %+v", enc.name, got, want)
			}
		}
	})
}
