package openflow

import (
	"bytes"
	"testing"
)

// TestTunMDSetFieldSignificantBytes: a set_field to a tun_metadata field
// carries the value's significant bytes only (none for zero), as
// ovs-ofctl and ovs-vswitchd write it (TestIntegrationDeleteField holds
// ovs-vswitchd's bytes), in 1.0's NXAST_REG_LOAD2 and 1.3's
// OFPAT_SET_FIELD, and decodes back right-aligned in the mapped length.
func TestTunMDSetFieldSignificantBytes(t *testing.T) {
	defer withTunMDLayout()()
	for _, tc := range []struct {
		val  []byte // the mapped 4 bytes
		wire []byte // header and value
	}{
		{[]byte{0, 0, 0, 0x0b}, []byte{0, 1, 0x50, 1, 0x0b}},
		{[]byte{0, 0x12, 0, 0x0b}, []byte{0, 1, 0x50, 3, 0x12, 0, 0x0b}},
		{[]byte{1, 2, 3, 4}, []byte{0, 1, 0x50, 4, 1, 2, 3, 4}},
		{[]byte{0, 0, 0, 0}, []byte{0, 1, 0x50, 0}},
	} {
		var a Action
		a.Type, a.Field = ActSetField, FieldTunMetadata0
		copy(a.Value[:], tc.val)
		for _, enc := range []struct {
			name string
			at   int // where the header starts
			app  func([]byte, []Action) ([]byte, error)
			dec  func([]Action, []byte) ([]Action, error)
		}{
			{"1.0", 10, AppendActions10, DecodeActions10},
			{"1.3", 4, AppendActions13, DecodeActions13},
		} {
			b, err := enc.app(nil, []Action{a})
			if err != nil {
				t.Fatalf("%s % x: %v", enc.name, tc.val, err)
			}
			if len(b) < enc.at+len(tc.wire) || !bytes.Equal(b[enc.at:enc.at+len(tc.wire)], tc.wire) {
				t.Errorf("%s % x: % x, want the field as % x", enc.name, tc.val, b, tc.wire)
			}
			back, err := enc.dec(nil, b)
			if err != nil || len(back) != 1 || !back[0].Equal(a) {
				t.Errorf("%s % x: decodes to %+v (%v)", enc.name, tc.val, back, err)
			}
		}
	}
}

// tunMDZeroCaptures: ovs-ofctl writes set_field:0 to a tun_metadata field
// with no value bytes at all.
var tunMDZeroCaptures = []capture{
	{"tunmd-set-zero-of10", []string{"add-flow", "SW", "actions=set_field:0->tun_metadata0,set_field:0x1->tun_metadata1,output:2"}},
	{"tunmd-set-zero-of13", []string{"-O", "OpenFlow13", "add-flow", "SW", "actions=set_field:0->tun_metadata0,set_field:0x1->tun_metadata1,output:2"}},
}

// TestOvsOfctlTunMDSetZero records (OFCTL_RECORD=1) or checks the
// captures: every message decodes and re-encodes to ovs-ofctl's bytes.
func TestOvsOfctlTunMDSetZero(t *testing.T) {
	defer withTunMDLayout()()
	recordOrCheckCaptures(t, tunMDZeroCaptures)
}
