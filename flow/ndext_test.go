package flow

import (
	"encoding/hex"
	"testing"
)

// TestExtractNDExt: nd_reserved is ICMPv6 bytes 4..7 of a solicitation
// or advertisement with code 0, nd_options_type the first 8-byte
// link-layer option's type (kept when a repeat invalidates the message);
// other packets, and Extract's Key (the datapath's), have neither.
func TestExtractNDExt(t *testing.T) {
	const l2l3 = "02000000000102000000000286dd6b91234500003afffe800000000000000000000000000001fe800000000000000000000000000002"
	for _, c := range []struct {
		name     string
		icmp     string
		reserved uint32
		opt      uint8
	}{
		{"NA with TLL", "880000006000000020010db8000000000000000000000009" + "02011a1b1c1d1e1f", 0x60000000, 2},
		{"NS with SLL then TLL", "870000000000000020010db8000000000000000000000009" + "01010a0b0c0d0e0f02011a1b1c1d1e1f", 0, 1},
		{"NS, 16-byte SLL skipped, then TLL", "870000000000000020010db8000000000000000000000009" + "01020a0b0c0d0e0f0000000000000000" + "02011a1b1c1d1e1f", 0, 2},
		{"repeated SLL keeps the type", "8700000000000001" + "20010db8000000000000000000000009" + "01010a0b0c0d0e0f01010a0b0c0d0e0f", 1, 1},
		{"target cut short", "88000000a0000000", 0xa0000000, 0},
		{"NA code 1", "880100006000000020010db8000000000000000000000009", 0, 0},
		{"echo request", "800000006000000020010db8000000000000000000000009", 0, 0},
	} {
		pkt, err := hex.DecodeString(l2l3 + c.icmp)
		if err != nil {
			t.Fatal(err)
		}
		k := Extract(pkt, Metadata{})
		if k.NDReserved != 0 || k.NDOptionsType != 0 {
			t.Errorf("%s: Extract set the ND extensions (%#x, %d)", c.name, k.NDReserved, k.NDOptionsType)
		}
		k.NDReserved, k.NDOptionsType = 7, 7 // ExtractNDExt overwrites both
		ExtractNDExt(&k, pkt, nil)
		if k.NDReserved != c.reserved || k.NDOptionsType != c.opt {
			t.Errorf("%s: nd_reserved %#x nd_options_type %d, want %#x %d", c.name, k.NDReserved, k.NDOptionsType, c.reserved, c.opt)
		}
		if n := testing.AllocsPerRun(100, func() { ExtractNDExt(&k, pkt, nil) }); n != 0 {
			t.Errorf("%s: %v allocations", c.name, n)
		}
	}
}

// FuzzExtractNDExt: ExtractNDExt never panics, leaves every other field
// of the datapath's Key alone, and sets the fields only for ND messages.
// Seeds: the TestExtractNDExt packets.
func FuzzExtractNDExt(f *testing.F) {
	const l2l3 = "02000000000102000000000286dd6b91234500003afffe800000000000000000000000000001fe800000000000000000000000000002"
	for _, icmp := range []string{
		"880000006000000020010db8000000000000000000000009" + "02011a1b1c1d1e1f",
		"8700000000000001" + "20010db8000000000000000000000009" + "01010a0b0c0d0e0f01010a0b0c0d0e0f",
		"88000000a0000000", "8800",
	} {
		pkt, _ := hex.DecodeString(l2l3 + icmp)
		f.Add(pkt)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		k := Extract(pkt, Metadata{})
		e := k
		ExtractNDExt(&e, pkt, nil)
		if !IsND(&k) && (e.NDReserved != 0 || e.NDOptionsType != 0) {
			t.Fatalf("%x: ND extensions on a non-ND packet", pkt)
		}
		e.NDReserved, e.NDOptionsType = 0, 0
		if e != k {
			t.Fatalf("%x: ExtractNDExt changed other fields", pkt)
		}
	})
}
