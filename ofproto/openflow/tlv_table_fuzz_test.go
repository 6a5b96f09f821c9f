package openflow

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// FuzzTLVTable decodes arbitrary bytes as an OpenFlow 1.5 message: it
// must not panic, and a TLV table message it accepts must encode to bytes
// that decode to the same message.
func FuzzTLVTable(f *testing.F) {
	for _, s := range []string{
		// NXT_TLV_TABLE_MOD add {class=0x102,type=0x80,len=4}->tun_metadata0,
		// as ovs-ofctl -O OpenFlow15 add-tlv-map sends it.
		"06040020000000020000232000000018" + "0000000000000000" + "0102800400000000",
		// NXT_TLV_TABLE_REQUEST
		"06040010000000030000232000000019",
		// NXT_TLV_TABLE_REPLY, one map
		"060400280000000300002320000000" + "1a" + "000001000040000000000000000000000102800400000000",
	} {
		b, err := hex.DecodeString(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		switch m.(type) {
		case *TLVTableMod, *TLVTableRequest, *TLVTableReply:
		default:
			return
		}
		out, err := m.Append(nil)
		if err != nil {
			t.Fatalf("encode %T: %v", m, err)
		}
		// Padding is not kept: the encoding must decode to the same
		// message, which encodes the same again.
		m2, err := Decode(out)
		if err != nil {
			t.Fatalf("decode of our %T encoding %x: %v", m, out, err)
		}
		out2, err := m2.Append(nil)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("%T round trip:\n in  %x\n out %x\n again %x (%v)", m, b, out, out2, err)
		}
	})
}
