package ofproto

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestCheckSupportedAgreesWithXlate holds the flow_mod check and
// translation to each other, for every action type: what the check
// accepts, translation carries out (it does not end in its catch-all
// drop), and what it refuses, translation could not have carried out.
func TestCheckSupportedAgreesWithXlate(t *testing.T) {
	x := testBridge(t)
	for typ := openflow.ActOutput; typ <= openflow.ActVendor; typ++ {
		t.Run(typ.String(), func(t *testing.T) {
			a := openflow.Action{Type: typ, Port: 2, EthType: 0x8847, VLANVID: 5, Field: openflow.FieldEthSrc,
				NBits: 8, Table: openflow.TableAll, TTL: 9, Vendor: openflow.NXVendorID, Data: []byte{0, 35, 0, 0, 0, 0, 0, 0}}
			if typ == openflow.ActResubmit {
				a.Port = openflow.PortInPort
			}
			in := openflow.Instructions{Apply: []openflow.Action{a, openflow.Output(2, 0)}}
			var m classifier.Match
			switch typ {
			case openflow.ActPopMPLS, openflow.ActSetMPLSTTL, openflow.ActDecMPLSTTL:
				// Refused for any other packet (OFPBAC_MATCH_INCONSISTENT).
				m.Key.EthType, m.Mask.EthType = 0x8847, 0xffff
			}
			refused := checkActions(&in, &m)
			k := pkt(11)
			var out Out
			x.TranslateActions(&k, 1, in.Apply, t0, &out)
			unsupported := strings.HasPrefix(out.Dropped, "unsupported action")
			switch {
			case refused == nil && unsupported:
				t.Errorf("accepted at flow_mod time, but translation drops it: %s", out.Dropped)
			case refused != nil && !unsupported:
				t.Errorf("refused (%v), but translation carries it out: %s", refused, datapath.FormatActions(out.Actions))
			}
		})
	}
}

// TestCheckSupportedFields: set_field and load into fields translation
// writes or keeps as pipeline metadata are accepted; others are refused
// with the set-type error.
func TestCheckSupportedFields(t *testing.T) {
	for _, tc := range []struct {
		f  openflow.Field
		ok bool
	}{
		{openflow.FieldEthDst, true}, {openflow.FieldIPv4Dst, true}, {openflow.FieldTCPDst, true},
		{openflow.FieldReg0, true}, {openflow.FieldReg15, true}, {openflow.FieldMetadata, true}, {openflow.FieldIPv6Dst, true},
		{openflow.FieldXReg7, true}, {openflow.FieldXXReg3, true},
		{openflow.FieldICMPv4Type, true}, {openflow.FieldARPSPA, true}, {openflow.FieldARPOp, true}, {openflow.FieldARPTHA, true}, {openflow.FieldMPLSLabel, true}, {openflow.FieldMPLSBOS, false},
		{openflow.FieldNDTarget, true}, {openflow.FieldNDTLL, true}, {openflow.FieldIPv6Label, true},
	} {
		for _, typ := range []openflow.ActionType{openflow.ActSetField, openflow.ActRegLoad} {
			err := checkSupported([]openflow.Action{{Type: typ, Field: tc.f, NBits: 1}})
			if (err == nil) != tc.ok {
				t.Errorf("%s %s: err %v, want accepted %v", typ, tc.f, err, tc.ok)
			}
			if err != nil && ErrKind(err) != ErrUnsupportedSetField {
				t.Errorf("%s %s: kind %d, want ErrUnsupportedSetField", typ, tc.f, ErrKind(err))
			}
		}
	}
}

// TestLogRefusalOnce: the first refusal of each kind is a WARN naming the
// action; repeats are not.
func TestLogRefusalOnce(t *testing.T) {
	var buf bytes.Buffer
	c := &Conn{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	sub := []byte{0, 42, 0, 0, 0, 0, 0, 0} // NXAST_CLONE
	err := checkSupported([]openflow.Action{{Type: openflow.ActVendor, Vendor: openflow.NXVendorID, Data: sub}})
	warnedUnsupported.Delete(err.Error())
	for i := 0; i < 3; i++ {
		c.logRefusal("flow mod", err)
	}
	if n := strings.Count(buf.String(), "level=WARN"); n != 1 || !strings.Contains(buf.String(), "clone") {
		t.Errorf("want one WARN naming clone, got:\n%s", buf.String())
	}
}

// TestNDExtSetRefused: set_field, load and move into nd_reserved or
// nd_options_type are refused with OFPBAC_BAD_SET_ARGUMENT (in 1.3; 1.0's
// bad argument) and a WARN, as ovs-vswitchd 3.1 refuses them on the Linux
// datapath, which cannot set them.
func TestNDExtSetRefused(t *testing.T) {
	for _, f := range []openflow.Field{openflow.FieldNDReserved, openflow.FieldNDOptionsType} {
		for _, typ := range []openflow.ActionType{openflow.ActSetField, openflow.ActRegLoad, openflow.ActRegMove} {
			err := checkSupported([]openflow.Action{{Type: typ, Field: f, NBits: 1}})
			if ErrKind(err) != ErrNDExtDatapathSet {
				t.Errorf("%s %s: %v, want ErrNDExtDatapathSet", typ, f, err)
				continue
			}
			if !isUnsupported(err) {
				t.Errorf("%s %s: not logged at WARN", typ, f)
			}
			if typ13, code, ok := ctFlowModError(openflow.Version13, ErrKind(err)); !ok || typ13 != openflow.ErrTypeBadAction || code != openflow.BadAction13BadSetArgment {
				t.Errorf("%s %s: 1.3 error %d/%d", typ, f, typ13, code)
			}
			// OVS's NX1.0-1.1(1,525).
			if typ10, code, ok := ctFlowModError(openflow.Version10, ErrKind(err)); !ok || typ10 != openflow.ErrTypeBadRequest || code != 525 {
				t.Errorf("%s %s: 1.0 error %d/%d", typ, f, typ10, code)
			}
		}
	}
	var buf bytes.Buffer
	c := &Conn{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	err := checkSupported([]openflow.Action{{Type: openflow.ActSetField, Field: openflow.FieldNDReserved}})
	warnedUnsupported.Delete(err.Error())
	c.logRefusal("flow mod", err)
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "IPv6 ND Extensions") {
		t.Errorf("want a WARN naming IPv6 ND Extensions, got:\n%s", buf.String())
	}
}
