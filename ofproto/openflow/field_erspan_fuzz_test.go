package openflow

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzErspanFields: NXM matches and action lists with experimenter
// (8-byte) headers never panic the decoders; a match that decodes
// re-encodes as NXM and OXM to one that decodes the same, and a 1.0 or
// 1.3 action list that decodes re-encodes to one that decodes the same.
// Seeds: the f.Add calls (ovs-ofctl's encodings) and testdata/fuzz.
func FuzzErspanFields(f *testing.F) {
	// tun_erspan_ver=2/2, tun_erspan_idx=0x100/0xff00 and a short
	// experimenter header.
	f.Add([]byte{0xff, 0xff, 0x19, 0x06, 0x00, 0x00, 0x23, 0x20, 0x02, 0x02,
		0xff, 0xff, 0x17, 0x0c, 0x00, 0x00, 0x23, 0x20, 0, 0, 0x01, 0x00, 0, 0, 0xff, 0x00}, []byte{})
	f.Add([]byte{0xff, 0xff, 0x18, 0x02, 0x00, 0x00}, []byte{})
	// NXAST_REG_LOAD2 to tun_erspan_idx, and OFPAT_SET_FIELD to tun_erspan_ver.
	f.Add([]byte{}, []byte{0xff, 0xff, 0x00, 0x18, 0x00, 0x00, 0x23, 0x20, 0x00, 0x21,
		0xff, 0xff, 0x16, 0x08, 0x00, 0x00, 0x23, 0x20, 0x00, 0x01, 0x23, 0x45, 0x00, 0x00})
	f.Add([]byte{}, []byte{0x00, 0x19, 0x00, 0x10, 0xff, 0xff, 0x18, 0x05, 0x00, 0x00, 0x23, 0x20, 0x02, 0x00, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, match, acts []byte) {
		var m Match
		if err := DecodeNXM(Version10, match, &m); err == nil {
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
			if _, err := DecodeOXM(oxm, &c); err != nil || c != m {
				t.Fatalf("OXM round trip: %v\n% x", err, oxm)
			}
		} else {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not an *Error: %v", err)
			}
		}
		for _, codec := range []struct {
			name   string
			decode func([]Action, []byte) ([]Action, error)
			encode func([]byte, []Action) ([]byte, error)
		}{{"1.0", DecodeActions10, AppendActions10}, {"1.3", DecodeActions13, AppendActions13}} {
			list, err := codec.decode(nil, acts)
			if err != nil {
				continue
			}
			out, err := codec.encode(nil, list)
			if err != nil {
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("%s actions re-encode: %v", codec.name, err)
				}
				continue
			}
			back, err := codec.decode(nil, out)
			if err != nil || !reflect.DeepEqual(back, list) {
				t.Fatalf("%s actions round trip: %v\n%+v\n%+v", codec.name, err, list, back)
			}
		}
	})
}
