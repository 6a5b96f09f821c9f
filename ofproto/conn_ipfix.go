package ofproto

import (
	"sort"

	"github.com/govswitch/govswitch/ofproto/ipfix"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// ipfixStats answers NXST_IPFIX_BRIDGE and NXST_IPFIX_FLOW (ovs-ofctl
// dump-ipfix-bridge, dump-ipfix-flow) with the bridge exporter's or the
// collector sets' counters, or, as ovs-vswitchd, OFPERR_NXST_NOT_CONFIGURED
// when the bridge has none.
func (c *Conn) ipfixStats(raw []byte, env openflow.Envelope, m *openflow.IPFIXStatsRequest) error {
	b := c.m.b
	conv := func(s ipfix.Stats, id uint32) openflow.IPFIXStats {
		return openflow.IPFIXStats{TotalFlows: s.TotalFlows, CurrentFlows: s.CurrentFlows, Packets: s.Packets,
			IPv4: s.IPv4, IPv6: s.IPv6, Errors: s.Errors, IPv4Errors: s.IPv4Err, IPv6Errors: s.IPv6Err,
			TxPackets: s.TxPackets, TxErrors: s.TxErrors, CollectorSetID: id}
	}
	var out []openflow.IPFIXStats
	if m.Flow {
		sets := b.IPFIXSetStats()
		ids := make([]uint32, 0, len(sets))
		for id := range sets {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			out = append(out, conv(sets[id], id))
		}
	} else if s, ok := b.IPFIXStats(); ok {
		out = append(out, conv(s, 0))
	}
	if len(out) == 0 {
		if env.Version >= openflow.Version12 {
			return c.sendError(raw, openflow.Err13TypeExperimenter, 36) // NX1.2+(36)
		}
		return c.sendError(raw, openflow.ErrTypeBadRequest, 535) // NX1.0-1.1(1,535)
	}
	return c.queueMsg(&openflow.IPFIXStatsReply{Envelope: env, Flow: m.Flow, Stats: out})
}
