package openflow

import "fmt"

// delete_field:FIELD (NXAST_DELETE_FIELD): removes FIELD from the packet's
// pipeline state. OVS 3.1 allows only the tun_metadata fields, whose
// deletion drops that Geneve option from what a later output to a Geneve
// port sends; the switch checks the field (ofproto) and carries it out
// (ofproto/xlate_tunnel.go); the codec carries any field.
//
// Wire form, 24 bytes: the Nicira action header (type, length 24, vendor,
// subtype 50), then the field's NXM/OXM header without a mask (4 bytes, 8
// for an experimenter field) and zeros to the end. ovs-vswitchd does not
// look at the zeros. A tun_metadata header's length is 124 from ovs-ofctl
// (which knows no mapping) and the mapped length from the switch, as
// ovs-vswitchd writes it (TestIntegrationDeleteField holds that).

// NXASTDeleteField is the delete_field action's Nicira subtype.
const NXASTDeleteField uint16 = 50

// DeleteField returns a delete_field action for f.
func DeleteField(f Field) Action { return Action{Type: ActDeleteField, Field: f} }

// decodeDeleteField decodes a whole NXAST_DELETE_FIELD.
func decodeDeleteField(v uint8, act []byte) (Action, error) {
	if len(act) != 24 {
		return Action{}, errOf(v, kActBadLen, "delete_field: length %d, want 24", len(act))
	}
	f, h, n := pullActionField(act[10:])
	if tf := FieldByHeader(h); f == FieldNone && tf.IsTunMetadata() {
		// Unmapped, or a length neither the mapped one nor ovs-ofctl's
		// unmapped 124: refused as ovs-vswitchd refuses it.
		if err := checkTunMDHeader(v, tf, h); err != nil {
			return Action{}, err
		}
	}
	if n == 0 || f == FieldNone {
		return Action{}, errOf(v, kMatchBadField, "delete_field: field %08x", h)
	}
	return DeleteField(f), nil
}

func appendDeleteField(b []byte, a *Action) ([]byte, error) {
	start := len(b)
	b = nxActionHeader(b, 24, NXASTDeleteField)
	b, ok := appendActionField(b, a.Field, true)
	if !ok {
		return b[:start], fmt.Errorf("openflow: delete_field %s: no NXM header: %w", a.Field, ErrUnsupported)
	}
	for len(b)-start < 24 {
		b = append(b, 0)
	}
	return b, nil
}
