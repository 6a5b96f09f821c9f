package openflow

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Fuzz targets for the OpenFlow 1.1 and 1.2 decoders, held to the rules of
// fuzz_test.go: no panic, and what decodes encodes and decodes again to the
// same value. Seeds: testdata/fuzz/<target>, written by
// GEN_FUZZ_CORPUS=1 go test -run TestGenFuzzCorpus11 from the 1.1 and 1.2
// ovs-ofctl captures.

func FuzzDecode11(f *testing.F) {
	f.Fuzz(fuzzDecodeAs(Version11))
}

func FuzzDecode12(f *testing.F) {
	f.Fuzz(fuzzDecodeAs(Version12))
}

// FuzzDecodeMatch11 holds the ofp11_match decoder: a decoded match always
// encodes again (1.1 can say whatever it decodes), to the same match.
func FuzzDecodeMatch11(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Match
		if err := DecodeMatch11(b, &m); err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not an *Error: %v", err)
			}
			return
		}
		out, err := AppendMatch11(nil, &m)
		if err != nil {
			t.Fatalf("decoded match does not encode: %v\n%+v", err, m)
		}
		var back Match
		if err := DecodeMatch11(out, &back); err != nil || back != m {
			t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, back, m)
		}
	})
}

// FuzzEncodeMatch11 lays the fuzzer's bytes over a Key and Mask: the 1.1
// encoder either refuses with ErrUnsupported or writes what decodes back
// to exactly the masked match.
func FuzzEncodeMatch11(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m Match
		kw, mw := m.Key.Words(), m.Mask.Words()
		for i := 0; i < len(kw) && 16*i+16 <= len(raw); i++ {
			kw[i], mw[i] = u64(raw[16*i:]), u64(raw[16*i+8:])
		}
		b, err := AppendMatch11(nil, &m)
		if err != nil {
			if !errors.Is(err, ErrUnsupported) {
				t.Fatal(err)
			}
			return
		}
		var got Match
		if err := DecodeMatch11(b, &got); err != nil {
			t.Fatalf("our own encoding does not decode: %v\n% x", err, b)
		}
		if want := (Match{Key: m.Key.Apply(&m.Mask), Mask: m.Mask}); got != want {
			t.Fatalf("round trip changed the match\n got %+v\nwant %+v", got, want)
		}
	})
}

// FuzzDecodeActions11 holds the 1.1 action and instruction decoders.
func FuzzDecodeActions11(f *testing.F) {
	f.Fuzz(func(t *testing.T, inst bool, b []byte) {
		if inst {
			var in Instructions
			if DecodeInstructions11(b, &in) != nil {
				return
			}
			out, err := AppendInstructions11(nil, &in)
			if err != nil {
				t.Fatalf("decoded instructions do not encode: %v\n%+v", err, in)
			}
			var back Instructions
			if err := DecodeInstructions11(out, &back); err != nil {
				t.Fatalf("re-decode: %v", err)
			}
			return
		}
		acts, err := DecodeActions11(nil, b)
		if err != nil {
			return
		}
		out, err := AppendActions11(nil, acts)
		if err != nil {
			t.Fatalf("decoded actions do not encode: %v\n%+v", err, acts)
		}
		back, err := DecodeActions11(nil, out)
		if err != nil || len(back) != len(acts) {
			t.Fatalf("re-decode: %v (%d actions, want %d)", err, len(back), len(acts))
		}
		for i := range acts {
			if !acts[i].Equal(back[i]) {
				t.Fatalf("action %d changed: %+v -> %+v", i, acts[i], back[i])
			}
		}
	})
}

// TestGenFuzzCorpus11 writes the 1.1/1.2 seed corpora; like
// TestGenFuzzCorpus it runs only with GEN_FUZZ_CORPUS=1.
func TestGenFuzzCorpus11(t *testing.T) {
	if os.Getenv("GEN_FUZZ_CORPUS") != "1" {
		t.Skip("set GEN_FUZZ_CORPUS=1 to regenerate testdata/fuzz")
	}
	seeds := map[string][][]byte{}
	var matches, actions, insts [][]byte
	var decoded []Match
	for _, c := range ofctl11Captures {
		for _, raw := range readCapture(t, c.name) {
			target := "FuzzDecode11"
			if raw[0] == Version12 {
				target = "FuzzDecode12"
			}
			seeds[target] = append(seeds[target], raw)
			m, err := Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			if fm, ok := m.(*FlowMod); ok && raw[0] == Version11 {
				matches = append(matches, raw[48:48+Match11Len])
				decoded = append(decoded, fm.Match)
				insts = append(insts, raw[48+Match11Len:])
				if a, err := AppendActions11(nil, fm.Instructions.Apply); err == nil && len(a) > 0 {
					actions = append(actions, a)
				}
			}
		}
	}
	write := func(target string, i int, prefix string, b []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s := "go test fuzz v1\n" + prefix + "[]byte(" + strconv.Quote(string(b)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, "seed-"+strconv.Itoa(i)), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for target, list := range seeds {
		for i, b := range list {
			write(target, i, "", b)
		}
	}
	for i, b := range matches {
		write("FuzzDecodeMatch11", i, "", b)
	}
	for i, b := range actions {
		write("FuzzDecodeActions11", i, "bool(false)\n", b)
	}
	for i, b := range insts {
		write("FuzzDecodeActions11", len(actions)+i, "bool(true)\n", b)
	}
	for j, m := range decoded {
		var raw []byte
		kw, mw := m.Key.Words(), m.Mask.Words()
		for w := range kw {
			raw = be64(be64(raw, kw[w]), mw[w])
		}
		write("FuzzEncodeMatch11", j, "", raw)
	}
}
