package kernel

import (
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
)

// probeActions fills in which of the actions translation emits for
// clone, output(port,max_len), check_pkt_larger and encap(mpls) the
// kernel takes (Linux 4.9, 4.10, 5.2 and 5.15 added them), and hash(l4)
// (Linux 4.0), with probe flows as probeCt's.
func (d *Datapath) probeActions() {
	f := &d.features
	trunc := func() []byte { return datapath.AppendTrunc(nil, 100) }
	f.Trunc = d.probeFlow('t', func(k *flow.Key, m *flow.Mask) []byte { return trunc() })
	f.Clone = d.probeFlow('k', func(k *flow.Key, m *flow.Mask) []byte { return datapath.AppendClone(nil, trunc()) })
	f.CheckPktLen = d.probeFlow('p', func(k *flow.Key, m *flow.Mask) []byte {
		return datapath.AppendCheckPktLen(nil, 100, trunc(), trunc())
	})
	f.Hash = d.probeFlow('h', func(k *flow.Key, m *flow.Mask) []byte { return datapath.AppendHash(nil, datapath.HashAlgL4, 0) })
	f.AddMPLS = d.probeFlow('a', func(k *flow.Key, m *flow.Mask) []byte {
		k.EthType = flow.EthTypeIPv4
		return datapath.AppendAddMPLS(nil, 2<<12|0x100|64, flow.EthTypeMPLS, 0)
	})
}
