package openflow

// NXTCtFlushZone is the Nicira subtype of NXT_CT_FLUSH_ZONE (any OpenFlow
// version): flush the connection tracking entries of one zone.
// ovn-controller sends it for the zones of logical ports it (re)assigns.
const NXTCtFlushZone uint32 = 29

// CtFlushZone is NXT_CT_FLUSH_ZONE (struct nx_zone_id: six zero bytes and
// the zone).
type CtFlushZone struct {
	Envelope
	Zone uint16
}

func (m *CtFlushZone) Append(b []byte) ([]byte, error) {
	b, start := begin(b, m.Version, TypeVendor, m.Xid)
	b = be32(be32(b, NXVendorID), NXTCtFlushZone)
	return finish(be16(zeros(b, 6), m.Zone), start)
}

func decodeCtFlushZone(env Envelope, rest []byte) (Msg, error) {
	if len(rest) != 8 {
		return nil, badLen(env.Version, "NXT_CT_FLUSH_ZONE", len(rest), 8)
	}
	return &CtFlushZone{Envelope: env, Zone: u16(rest[6:])}, nil
}
