package openflow

import (
	"errors"
	"testing"
)

// FuzzTunMetadata: under a TLV layout, NXM matches and action lists with
// tun_metadata fields never panic the decoders, and a match that decodes
// re-encodes (at the mapped lengths) to one that decodes the same. Seeds:
// ovs-ofctl's captures and the f.Add calls.
func FuzzTunMetadata(f *testing.F) {
	f.Add([]byte{0x00, 0x01, 0x50, 0x01, 0x0a}, []byte{})
	f.Add([]byte{0x00, 0x01, 0x51, 0x04, 0, 0, 0, 0x0b, 0x00, 0x01, 0x50, 0x04, 1, 2, 3, 4}, []byte{})
	f.Add([]byte{0x00, 0x01, 0x51, 0x04, 0x12, 0x00, 0xff, 0x00}, []byte{})
	f.Add([]byte{0x00, 0x01, 0x7e, 0x08, 1, 2, 3, 4, 5, 6, 7, 8},
		[]byte{0xff, 0xff, 0x00, 0x10, 0x00, 0x00, 0x23, 0x20, 0x00, 0x21, 0x00, 0x01, 0x52, 0x01, 0x0b, 0x00})
	f.Add([]byte{}, []byte{0xff, 0xff, 0x00, 0x10, 0x00, 0x00, 0x23, 0x20, 0x00, 0x21, 0x00, 0x01, 0x55, 0x02, 0x05, 0xff})
	f.Add([]byte{}, []byte{0xff, 0xff, 0x00, 0x18, 0x00, 0x00, 0x23, 0x20, 0x00, 0x06, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x01, 0x50, 0x7c, 0x00, 0x01, 0x00, 0x04})
	f.Fuzz(func(t *testing.T, match, acts []byte) {
		defer withTunMDLayout()()
		var m Match
		if err := DecodeNXM(Version10, match, &m); err == nil {
			nxm, err := AppendNXM(nil, &m)
			if err != nil {
				t.Fatalf("NXM encode: %v", err)
			}
			var back Match
			if err := DecodeNXM(Version10, nxm, &back); err != nil || back != m {
				t.Fatalf("NXM round trip: %v\n% x", err, nxm)
			}
		} else {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not an *Error: %v", err)
			}
		}
		if list, err := DecodeActions10(nil, acts); err == nil {
			if _, err := AppendActions10(nil, list); err != nil && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("1.0 actions re-encode: %v", err)
			}
		}
		if list, err := DecodeActions13(nil, acts); err == nil {
			if _, err := AppendActions13(nil, list); err != nil && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("1.3 actions re-encode: %v", err)
			}
		}
	})
}
