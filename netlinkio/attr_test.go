package netlinkio

import (
	"bytes"
	"errors"
	"testing"
)

func TestAppendGolden(t *testing.T) {
	// Little-endian host assumed for the host-order rows (amd64, arm64).
	tests := []struct {
		name string
		got  []byte
		want []byte
	}{
		{"u8", AppendU8(nil, 3, 0xab), []byte{
			0x05, 0x00, // nla_len 5
			0x03, 0x00, // nla_type 3
			0xab,             // payload
			0x00, 0x00, 0x00, // padding to 8
		}},
		{"u32", AppendU32(nil, 1, 0x01020304), []byte{
			0x08, 0x00, // nla_len 8
			0x01, 0x00, // nla_type 1
			0x04, 0x03, 0x02, 0x01, // host order
		}},
		{"be16", AppendBE16(nil, 2, 0x0800), []byte{
			0x06, 0x00, // nla_len 6
			0x02, 0x00, // nla_type 2
			0x08, 0x00, // network order
			0x00, 0x00, // padding
		}},
		{"flag", AppendFlag(nil, 7), []byte{
			0x04, 0x00, // nla_len 4
			0x07, 0x00, // nla_type 7
		}},
		{"string", AppendAttr(nil, 1, []byte("br0\x00")), []byte{
			0x08, 0x00, // nla_len 8
			0x01, 0x00, // nla_type 1
			'b', 'r', '0', 0x00,
		}},
		{"nested", func() []byte {
			b, start := BeginNested(nil, 16)
			b = AppendU32(b, 1, 5)
			b = AppendBE16(b, 2, 0x86dd)
			return EndNested(b, start)
		}(), []byte{
			0x14, 0x00, // nla_len 20
			0x10, 0x00, // nla_type 16
			0x08, 0x00, 0x01, 0x00, 0x05, 0x00, 0x00, 0x00, // u32 attr 1 = 5
			0x06, 0x00, 0x02, 0x00, 0x86, 0xdd, 0x00, 0x00, // be16 attr 2 = 0x86dd
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !bytes.Equal(tt.got, tt.want) {
				t.Errorf("got  % x\nwant % x", tt.got, tt.want)
			}
		})
	}
}

func TestIterRoundTrip(t *testing.T) {
	b := AppendU8(nil, 1, 9)
	b = AppendU16(b, 2, 0x1234)
	b = AppendU32(b, 3, 0xdeadbeef)
	b = AppendU64(b, 4, 1<<40)
	b = AppendBE16(b, 5, 0xabcd)
	b = AppendBE32(b, 6, 0x0a000001)
	b = AppendBE64(b, 7, 42)
	b = AppendAttr(b, 8|AttrNested, AppendU32(nil, 1, 77))
	b, p := AppendReserve(b, 9, 3)
	copy(p, "xyz")
	b = AppendAttr(b, 10, []byte("hello\x00"))

	it := NewAttrIter(b)
	var seen []uint16
	for it.Next() {
		seen = append(seen, it.Type())
		switch it.Type() {
		case 1:
			check(t, "u8", uint64(it.U8()), 9)
		case 2:
			check(t, "u16", uint64(it.U16()), 0x1234)
		case 3:
			check(t, "u32", uint64(it.U32()), 0xdeadbeef)
		case 4:
			check(t, "u64", it.U64(), 1<<40)
		case 5:
			check(t, "be16", uint64(it.BE16()), 0xabcd)
		case 6:
			check(t, "be32", uint64(it.BE32()), 0x0a000001)
		case 7:
			check(t, "be64", it.BE64(), 42)
		case 8:
			if it.RawType()&AttrNested == 0 {
				t.Errorf("nested flag lost")
			}
			n := it.Nested()
			if !n.Next() || n.Type() != 1 || n.U32() != 77 || n.Next() || n.Err() != nil {
				t.Errorf("nested walk wrong")
			}
		case 9:
			if string(it.Data()) != "xyz" {
				t.Errorf("reserved payload %q", it.Data())
			}
		case 10:
			if it.String() != "hello" {
				t.Errorf("string %q", it.String())
			}
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 10 {
		t.Errorf("saw %d attributes, want 10: %v", len(seen), seen)
	}
}

func check(t *testing.T, what string, got, want uint64) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %#x, want %#x", what, got, want)
	}
}

func TestIterMalformed(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
	}{
		{"short header", []byte{0x08, 0x00}},
		{"length below header", []byte{0x02, 0x00, 0x01, 0x00}},
		{"length past end", []byte{0x10, 0x00, 0x01, 0x00, 0x00, 0x00}},
		{"second truncated", append(AppendU32(nil, 1, 1), 0x09, 0x00, 0x02)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := NewAttrIter(tt.b)
			for it.Next() {
			}
			if !errors.Is(it.Err(), ErrAttrTruncated) {
				t.Errorf("err = %v, want ErrAttrTruncated", it.Err())
			}
		})
	}
	// A wrongly sized scalar stops the walk with an error.
	it := NewAttrIter(AppendU16(AppendU16(nil, 1, 5), 2, 6))
	it.Next()
	if it.U32() != 0 || it.Err() == nil || it.Next() {
		t.Errorf("u32 of a 2-byte attribute should fail and stop the walk")
	}
}

func TestAttrAllocs(t *testing.T) {
	buf := make([]byte, 0, 512)
	var sink uint32
	n := testing.AllocsPerRun(100, func() {
		b := AppendU32(buf[:0], 1, 7)
		b, start := BeginNested(b, 2)
		b = AppendBE16(b, 3, 0x0800)
		b = AppendAttr(b, 4, []byte{1, 2, 3, 4, 5, 6})
		b = EndNested(b, start)
		it := NewAttrIter(b)
		for it.Next() {
			if it.Type() == 1 {
				sink += it.U32()
			}
			n := it.Nested()
			for n.Next() {
				sink += uint32(len(n.Data()))
			}
		}
	})
	if n != 0 {
		t.Errorf("encode+walk allocates %v times", n)
	}
	_ = sink
}

func FuzzAttrIter(f *testing.F) {
	f.Add(AppendU32(AppendU8(nil, 1, 1), 2, 2))
	b, s := BeginNested(nil, 3)
	b = EndNested(AppendBE16(b, 1, 5), s)
	f.Add(b)
	f.Add([]byte{0xff, 0xff, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		var walk func(it AttrIter, depth int)
		walk = func(it AttrIter, depth int) {
			for it.Next() {
				_ = it.Data()
				if depth < 4 {
					walk(it.Nested(), depth+1)
				}
			}
		}
		walk(NewAttrIter(b), 0)
		// Re-encoding what decodes must decode the same way.
		it := NewAttrIter(b)
		var out []byte
		for it.Next() {
			out = AppendAttr(out, it.RawType(), it.Data())
		}
		if it.Err() != nil {
			return
		}
		it2 := NewAttrIter(out)
		it = NewAttrIter(b)
		for it.Next() {
			if !it2.Next() || it2.RawType() != it.RawType() || !bytes.Equal(it2.Data(), it.Data()) {
				t.Fatalf("re-encoding changed attributes")
			}
		}
	})
}
