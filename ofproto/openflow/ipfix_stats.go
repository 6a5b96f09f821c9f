package openflow

// IPFIX statistics (ovs-ofctl dump-ipfix-bridge, dump-ipfix-flow):
// NXST_IPFIX_BRIDGE (3) and NXST_IPFIX_FLOW (4), in every version. A
// request has no body; a reply is struct nx_ipfix_stats_reply (88 bytes),
// one for the bridge exporter, one per collector set for flows.
const (
	NXSTIPFIXBridge uint32 = 3
	NXSTIPFIXFlow   uint32 = 4

	ipfixStatsLen = 88
)

// IPFIXStats is one exporter's counters.
type IPFIXStats struct {
	TotalFlows, CurrentFlows                            uint64
	Packets, IPv4, IPv6, Errors, IPv4Errors, IPv6Errors uint64
	TxPackets, TxErrors                                 uint64
	CollectorSetID                                      uint32 // flows only; 0 for the bridge
}

// IPFIXStatsRequest asks for the bridge exporter's statistics, or (Flow)
// the collector sets'.
type IPFIXStatsRequest struct {
	Envelope
	Flags uint16
	Flow  bool
}

// IPFIXStatsReply answers an IPFIXStatsRequest.
type IPFIXStatsReply struct {
	Envelope
	Flags uint16
	Flow  bool
	Stats []IPFIXStats
}

func ipfixSub(flow bool) uint32 {
	if flow {
		return NXSTIPFIXFlow
	}
	return NXSTIPFIXBridge
}

// ipfixStatsHeader appends the Nicira stats header of sub: OpenFlow 1.0's
// vendor stats, or 1.1+'s experimenter multipart (no padding after the
// subtype).
func ipfixStatsHeader(b []byte, e *Envelope, reply bool, flags uint16, sub uint32) ([]byte, int, error) {
	if e.Version == Version10 {
		return statsHeader(b, e, reply, StatsVendor, flags, true, sub)
	}
	if err := checkVersion(e.Version); err != nil {
		return b, 0, err
	}
	t := Type13MultipartRequest
	if reply {
		t = Type13MultipartReply
	}
	b, start := begin(b, e.Version, t, e.Xid)
	b = zeros(be16(be16(b, StatsVendor), flags), 4)
	return be32(be32(b, NXVendorID), sub), start, nil
}

func (m *IPFIXStatsRequest) Append(b []byte) ([]byte, error) {
	b, start, err := ipfixStatsHeader(b, &m.Envelope, false, m.Flags, ipfixSub(m.Flow))
	if err != nil {
		return b, err
	}
	return finish(b, start)
}

func (m *IPFIXStatsReply) Append(b []byte) ([]byte, error) {
	b, start, err := ipfixStatsHeader(b, &m.Envelope, true, m.Flags, ipfixSub(m.Flow))
	if err != nil {
		return b, err
	}
	for i := range m.Stats {
		s := &m.Stats[i]
		for _, v := range []uint64{s.TotalFlows, s.CurrentFlows, s.Packets, s.IPv4, s.IPv6, s.Errors, s.IPv4Errors,
			s.IPv6Errors, s.TxPackets, s.TxErrors} {
			b = be64(b, v)
		}
		b = zeros(be32(b, s.CollectorSetID), 4)
	}
	return finish(b, start)
}

// decodeIPFIXStats decodes an NXST_IPFIX_* body (after the Nicira stats
// header); ok is false for another subtype.
func decodeIPFIXStats(env Envelope, flags uint16, sub uint32, rest []byte, reply bool) (m Msg, ok bool, err error) {
	if sub != NXSTIPFIXBridge && sub != NXSTIPFIXFlow {
		return nil, false, nil
	}
	flow := sub == NXSTIPFIXFlow
	if !reply {
		if len(rest) != 0 {
			return nil, true, badLen(env.Version, "NXST_IPFIX request", len(rest), 0)
		}
		return &IPFIXStatsRequest{Envelope: env, Flags: flags, Flow: flow}, true, nil
	}
	if len(rest)%ipfixStatsLen != 0 || !flow && len(rest) != ipfixStatsLen {
		return nil, true, badLen(env.Version, "NXST_IPFIX reply", len(rest), ipfixStatsLen)
	}
	r := &IPFIXStatsReply{Envelope: env, Flags: flags, Flow: flow}
	for ; len(rest) >= ipfixStatsLen; rest = rest[ipfixStatsLen:] {
		var s IPFIXStats
		for i, p := range []*uint64{&s.TotalFlows, &s.CurrentFlows, &s.Packets, &s.IPv4, &s.IPv6, &s.Errors,
			&s.IPv4Errors, &s.IPv6Errors, &s.TxPackets, &s.TxErrors} {
			*p = u64(rest[8*i:])
		}
		s.CollectorSetID = u32(rest[80:])
		r.Stats = append(r.Stats, s)
	}
	return r, true, nil
}
