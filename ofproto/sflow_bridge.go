package ofproto

import (
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/sflow"
)

// SetSFlow starts sFlow on the bridge with cfg, replacing what ran before;
// nil stops it. Datapath flows are translated again at once, so packets
// are sampled (or no longer) from the next revalidation on, before the
// next dump.
func (b *Bridge) SetSFlow(cfg *sflow.Config) error {
	var st *sflowState
	if cfg != nil {
		st = &sflowState{prob: cfg.Probability()}
		empty := map[uint32]uint32{}
		st.ifindex.Store(&empty) // until the datapath's ports are read
		exp, err := sflow.NewExporter(*cfg, func() []sflow.IfCounters { return b.sflowCounters(st) })
		if err != nil {
			return err
		}
		st.exp = exp
		b.sflowRefresh(st, nil)
	}
	if old := b.X.sflow.Swap(st); old != nil {
		old.exp.Close()
	}
	b.Tables.Invalidate()
	return nil
}

// SFlow returns the running sFlow configuration and counters; ok is false
// when the bridge runs none.
func (b *Bridge) SFlow() (cfg sflow.Config, st sflow.Stats, ok bool) {
	s := b.X.sflow.Load()
	if s == nil {
		return cfg, st, false
	}
	return s.exp.Config(), s.exp.Stats(), true
}

func (b *Bridge) stopSFlow() {
	if old := b.X.sflow.Swap(nil); old != nil {
		old.exp.Close()
	}
}

// sflowRefresh rebuilds the datapath port → ifIndex map from vports (nil:
// ask the datapath) and returns the vports read.
func (b *Bridge) sflowRefresh(st *sflowState, vports []datapath.Vport) []datapath.Vport {
	if vports == nil {
		var err error
		if vports, err = b.DP.Vports(); err != nil {
			return nil
		}
	}
	m := make(map[uint32]uint32, len(vports))
	for i := range vports {
		m[vports[i].PortNo] = vports[i].IfIndex // 0: no device (a tunnel's)
	}
	st.ifindex.Store(&m)
	return vports
}

// sflowCounters reads the generic interface counters of the bridge's
// ports from the datapath's port statistics (the datapath keeps no
// unicast/multicast split: all packets count as unicast, and the rest are
// left 0, as OVS reports a counter the netdev lacks as unknown).
func (b *Bridge) sflowCounters(st *sflowState) []sflow.IfCounters {
	vports := b.sflowRefresh(st, nil)
	ports := b.Ports.Snapshot()
	var out []sflow.IfCounters
	for i := range vports {
		vp := &vports[i]
		p := ports.ByDP(vp.PortNo)
		if p == nil || vp.IfIndex == 0 || p.IsPatch() {
			continue
		}
		s := vp.Stats
		status := uint32(0)
		if !p.Down {
			status |= 1
		}
		if !p.Down && !p.LinkDown {
			status |= 2
		}
		out = append(out, sflow.IfCounters{Index: vp.IfIndex, Type: 6 /* ethernetCsmacd */, Direction: 1,
			Status: status, InOctets: s.RxBytes, InUcast: uint32(s.RxPackets), InDiscards: uint32(s.RxDropped),
			InErrors: uint32(s.RxErrors), OutOctets: s.TxBytes, OutUcast: uint32(s.TxPackets),
			OutDiscards: uint32(s.TxDropped), OutErrors: uint32(s.TxErrors)})
	}
	return out
}

// sflowSample is an sFlow action upcall: the datapath sampled a packet of
// the bridge st belongs to.
func (st *sflowState) sample(b *Bridge, up *datapath.Upcall, ud SFlowUserdata) {
	m := *st.ifindex.Load()
	in, ok := m[up.Key.InPort]
	if !ok {
		// A port added since the last poll.
		b.sflowRefresh(st, nil)
		m = *st.ifindex.Load()
		in = m[up.Key.InPort]
	}
	var output uint32
	switch ud.NOutputs {
	case 0:
		output = sflow.OutputDiscard | 256
	case 1:
		if output = m[ud.OutPort]; output != 0 {
			break
		}
		fallthrough
	default:
		output = sflow.OutputMultiple | ud.NOutputs
	}
	src := uint16(0)
	if up.Key.VLANs[0].TCI&flow.VLANPresent != 0 {
		src = up.Key.VLANs[0].TCI &^ flow.VLANPresent
	}
	st.exp.Sample(up.Packet, in, output, src, ud.OutTCI)
}
