package openflow

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

// resubmitCtFlow is the ACL dispatch of OVS's "conntrack - FTP SNAT orig
// tuple" tests (system-traffic.at): a reply packet is looked up in the
// ACL table by its connection's original-direction tuple. The last two
// resubmits probe the other forms: an in_port and the current table with
// ct, and a plain table resubmit beside it.
const resubmitCtFlow = "table=1,in_port=1,ip,ct_state=-rel+rpl+trk-inv," +
	"actions=set_field:2->reg0,resubmit(,3,ct),resubmit(2,,ct),resubmit(,7),goto_table:4"

// resubmitCtCaptures are ovs-ofctl 3.1's encodings of it, recorded with
// OFCTL_RECORD=1: NXAST_RESUBMIT_TABLE_CT in every version.
var resubmitCtCaptures = []capture{
	{"resubmit-ct-of10", []string{"add-flow", "SW", resubmitCtFlow}},
	{"resubmit-ct-of13", []string{"-O", "OpenFlow13", "add-flow", "SW", resubmitCtFlow}},
	{"resubmit-ct-of15", []string{"-O", "OpenFlow15", "add-flow", "SW", resubmitCtFlow}},
}

// TestOvsOfctlResubmitCtCaptures records (OFCTL_RECORD=1) or checks the
// captures: every message decodes and re-encodes to ovs-ofctl's bytes.
func TestOvsOfctlResubmitCtCaptures(t *testing.T) {
	recordOrCheckCaptures(t, resubmitCtCaptures)
}

// TestResubmitCtCaptureMeaning checks what the recorded resubmits decode
// to in each version: the ct forms keep CtOrig, the plain one has none.
func TestResubmitCtCaptureMeaning(t *testing.T) {
	want := []Action{
		{Type: ActResubmit, Port: PortInPort, Table: 3, CtOrig: true},
		{Type: ActResubmit, Port: 2, Table: TableAll, CtOrig: true},
		Resubmit(PortInPort, 7),
	}
	for _, c := range resubmitCtCaptures {
		fm := captureFlowMod(t, c.name)
		var got []Action
		for _, a := range fm.Instructions.Apply {
			if a.Type == ActResubmit {
				got = append(got, a)
			}
		}
		// OpenFlow 1.0 has no goto_table: ovs-ofctl writes resubmit(,4).
		if c.name == "resubmit-ct-of10" {
			want := Resubmit(PortInPort, 4)
			if len(got) != 4 || !got[3].Equal(want) {
				t.Fatalf("%s: resubmits %+v", c.name, got)
			}
			got = got[:3]
		}
		if len(got) != len(want) {
			t.Fatalf("%s: resubmits %+v", c.name, got)
		}
		for i := range want {
			if !got[i].Equal(want[i]) {
				t.Errorf("%s: resubmit %d = %+v, want %+v", c.name, i, got[i], want[i])
			}
		}
	}
}

// TestResubmitCtCodec holds the NXAST_RESUBMIT_TABLE_CT layout: subtype
// 44, in_port, table, three bytes of padding that must be zero (as for
// NXAST_RESUBMIT_TABLE); plain NXAST_RESUBMIT ignores its padding.
func TestResubmitCtCodec(t *testing.T) {
	const ct = "ffff001000002320" + "002c" + "fff8" + "03000000"
	b, _ := hex.DecodeString(ct)
	for _, v := range []uint8{Version10, Version13, Version15} {
		a, err := decodeVendorAction(v, b)
		if err != nil || !a.Equal(Action{Type: ActResubmit, Port: PortInPort, Table: 3, CtOrig: true}) {
			t.Fatalf("v%d: decode = %+v, %v", v, a, err)
		}
		out, err := appendNXAction(nil, &a)
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("v%d: encode = %x, %v", v, out, err)
		}
	}
	for _, bad := range []string{
		"ffff001000002320" + "002c" + "fff8" + "03000100", // padding
		"ffff001000002320" + "000e" + "fff8" + "03000001", // resubmit_table's padding
	} {
		b, _ := hex.DecodeString(bad)
		_, err := decodeVendorAction(Version13, b)
		var oe *Error
		if !errors.As(err, &oe) || oe.Type != ErrTypeBadAction || oe.Code != BadActionBadArgument {
			t.Errorf("%s: err = %v, want OFPBAC_BAD_ARGUMENT", bad, err)
		}
	}
	// Plain resubmit: table and padding are ignored (OVS's
	// decode_NXAST_RAW_RESUBMIT).
	b, _ = hex.DecodeString("ffff001000002320" + "0001" + "0002" + "05010203")
	a, err := decodeVendorAction(Version10, b)
	if err != nil || !a.Equal(Resubmit(2, TableAll)) {
		t.Errorf("plain resubmit = %+v, %v", a, err)
	}
	// A 24-byte resubmit is a bad length.
	b, _ = hex.DecodeString("ffff001800002320" + "002c" + "fff8" + "03000000" + "0000000000000000")
	if _, err := decodeVendorAction(Version13, b); err == nil {
		t.Error("24-byte resubmit_table_ct decoded")
	}
}

// FuzzResubmitAction decodes arbitrary bytes as one Nicira action: it
// must not panic, and a resubmit it accepts must encode back to the same
// bytes (a plain resubmit's ignored table and padding aside).
func FuzzResubmitAction(f *testing.F) {
	for _, s := range []string{
		"ffff001000002320" + "002c" + "fff8" + "03000000",
		"ffff001000002320" + "002c" + "0002" + "ff000000",
		"ffff001000002320" + "000e" + "fff8" + "07000000",
		"ffff001000002320" + "0001" + "0002" + "00000000",
	} {
		b, err := hex.DecodeString(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 8 || u16(b) != ActVendorType || int(u16(b[2:])) != len(b) {
			return
		}
		a, err := decodeVendorAction(Version13, b)
		if err != nil || a.Type != ActResubmit {
			return
		}
		sub := u16(b[8:])
		if a.CtOrig != (sub == NXASTResubmitTableCT) {
			t.Fatalf("%x: CtOrig %v for subtype %d", b, a.CtOrig, sub)
		}
		out, err := appendNXAction(nil, &a)
		if err != nil {
			return // an in_port beyond OpenFlow 1.0's range never decodes; others may refuse
		}
		want := append([]byte(nil), b...)
		if sub == NXASTResubmit {
			want[12], want[13], want[14], want[15] = 0xff, 0, 0, 0
		} else if sub == NXASTResubmitTable && a.Table == TableAll {
			// resubmit(port,) with table 255 as resubmit_table is written
			// back as plain resubmit, the same meaning.
			want[9] = byte(NXASTResubmit)
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("round trip:\n in  %x\n out %x", b, out)
		}
	})
}
