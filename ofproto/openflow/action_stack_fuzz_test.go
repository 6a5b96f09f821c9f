package openflow

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// FuzzStackAction decodes arbitrary bytes as one Nicira action: it must
// not panic, and a push or pop it accepts must encode back to the same
// bytes.
func FuzzStackAction(f *testing.F) {
	for _, s := range []string{
		// push:NXM_OF_ETH_SRC[] and pop:NXM_NX_REG0[8..15], as ovs-ofctl
		// 3.1 encodes them.
		"ffff001800002320" + "001b0000" + "00000406" + "0030000000000000",
		"ffff001800002320" + "001c0008" + "00010004" + "0008000000000000",
		// push:tun_erspan_idx[] and pop:nsh_c3[8..15]: 8-byte
		// experimenter headers (NX's and NXOXM_NSH's IDs).
		"ffff001800002320" + "001b0000" + "ffff160800002320" + "00140000",
		"ffff001800002320" + "001c0008" + "ffff1008005ad650" + "00080000",
	} {
		b, err := hex.DecodeString(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// The action list decoder hands over a whole action of the
		// length its header gives.
		if len(b) < 8 || u16(b) != ActVendorType || int(u16(b[2:])) != len(b) {
			return
		}
		a, err := decodeVendorAction(Version13, b)
		if err != nil || (a.Type != ActStackPush && a.Type != ActStackPop) {
			return
		}
		out, err := appendNXAction(nil, &a)
		if err != nil {
			t.Fatalf("encode %v: %v", a, err)
		}
		// The decoder takes only zero padding, so the bytes come back.
		if !bytes.Equal(out, b) {
			t.Fatalf("round trip:\n in  %x\n out %x", b, out)
		}
		if a.Field == FieldNone || a.NBits == 0 {
			t.Fatalf("accepted %x as %v", b, a)
		}
	})
}
