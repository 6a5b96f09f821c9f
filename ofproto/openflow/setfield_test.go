package openflow

import (
	"errors"
	"testing"
)

// TestAction15DecodeErrors: what 1.5 refuses that 1.3 takes and the
// reverse, with OVS's errors.
func TestAction15DecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		v         uint8
		in        string
		typ, code uint16
	}{
		{"1.5 masked value outside the mask", Version15, "0019 0010 00010108 00000003 00000001", Err13TypeBadMatch, BadMatch13BadWildcards},
		{"1.5 NXAST_REG_LOAD", Version15, "ffff 0018 00002320 0007 0000 00011404 0000000000000001", ErrTypeBadAction, BadActionBadVendorType},
		{"1.5 NXAST_REG_MOVE", Version15, "ffff 0018 00002320 0006 0020 0000 0000 00011c04 00011e04", ErrTypeBadAction, BadActionBadVendorType},
		{"1.3 OFPAT_COPY_FIELD", Version13, "001c 0018 0020 0000 0000 0000 00011c04 00011e04 00000000", ErrTypeBadAction, BadActionBadType},
		{"1.4 masked set_field", Version14, "0019 0010 00010108 00000001 00000001", Err13TypeExperimenter, onfBadSetMask},
		{"1.5 copy_field past its field", Version15, "001c 0018 0021 0000 0000 0000 00011c04 00011e04 00000000", ErrTypeBadAction, BadActionBadArgument},
		{"1.5 dec_ttl(ids) short of its ids", Version15, "ffff 0010 00002320 0015 0002 00000000", ErrTypeBadAction, BadActionBadLen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeActions13(nil, tc.v, wire(t, tc.in))
			var e *Error
			if !errors.As(err, &e) || e.Type != tc.typ || e.Code != tc.code || e.Version != tc.v {
				t.Fatalf("got %v, want type %d code %d", err, tc.typ, tc.code)
			}
		})
	}
}
