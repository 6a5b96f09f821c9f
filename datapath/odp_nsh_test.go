package datapath

import (
	"bytes"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

// TestPushNSHGolden: push_nsh nests one OVS_KEY_ATTR_NSH, as OVS's
// odp_put_push_nsh_action writes it and the kernel's validate_nsh reads
// it; a masked set(nsh) carries each nested attribute's value then mask.
func TestPushNSHGolden(t *testing.T) {
	if !littleEndian() {
		t.Skip("golden rows are written for a little-endian host")
	}
	n := flow.NSH{TTL: 63, MDType: 1, NP: 3, SPI: 0x1234, SI: 255, C: [4]uint32{0x11223344}}
	want := hexRows(t, `
		2800 1100                       // PUSH_NSH, 40 bytes
		  2400 1c00                     //   KEY_ATTR_NSH, 36 bytes
		    0c00 0100 00 3f 01 03       //     BASE flags 0, ttl 63, mdtype 1, np 3
		              001234 ff         //          spi 0x1234, si 255
		    1400 0200 11223344 00000000 00000000 00000000 // MD1 c1..c4
	`)
	if got := AppendPushNSH(nil, &n, nil); !bytes.Equal(got, want) {
		t.Errorf("AppendPushNSH:\n got %x\nwant %x", got, want)
	}
	m := flow.NSH{SI: 0xff, MDType: 0xff}
	v := flow.NSH{SI: 254, MDType: 1}
	want = hexRows(t, `
		1c00 0b00                       // SET_MASKED, 28 bytes
		  1800 1c00                     //   KEY_ATTR_NSH, 24 bytes
		    1400 0100 00 00 00 00 000000 fe  // BASE value: si 254 (mdtype not writable)
		              00 00 00 00 000000 ff  //      mask: si
	`)
	if got := AppendSetNSHMasked(nil, &v, &m); !bytes.Equal(got, want) {
		t.Errorf("AppendSetNSHMasked:\n got %x\nwant %x", got, want)
	}
}
