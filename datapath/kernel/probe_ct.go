package kernel

import (
	"net/netip"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
)

// probeCt fills in what the kernel's conntrack support allows: matching
// on ct_state, the ct action (with and without NAT), ct_clear and
// recirculation. Each probe puts a flow (with OVS_FLOW_ATTR_PROBE, so a
// refusal is not logged) on an ethertype no packet carries and a port
// that cannot exist, and deletes it again; the kernel refuses what it
// cannot do with EINVAL (or EOPNOTSUPP), which is all a probe learns.
func (d *Datapath) probeCt() {
	f := &d.features
	f.CtProbed = true
	f.Recirc = d.probeFlow('r', func(k *flow.Key, m *flow.Mask) []byte {
		k.RecircID, m.RecircID = 1, ^uint32(0)
		return datapath.AppendRecirc(nil, 1)
	})
	f.CtState = d.probeFlow('s', func(k *flow.Key, m *flow.Mask) []byte {
		k.CtState, m.CtState = flow.CtTracked|flow.CtNew, 0xff
		return nil
	})
	f.CtMark = d.probeFlow('m', func(k *flow.Key, m *flow.Mask) []byte {
		k.CtMark, m.CtMark = 1, ^uint32(0)
		return nil
	})
	f.CtLabel = d.probeFlow('l', func(k *flow.Key, m *flow.Mask) []byte {
		k.CtLabels[0], m.CtLabels[0] = 1, 0xff
		return nil
	})
	f.Conntrack = d.probeFlow('c', func(k *flow.Key, m *flow.Mask) []byte {
		k.EthType = flow.EthTypeIPv4 // the kernel's ct needs an IP family
		return datapath.AppendCT(nil, &datapath.CT{Commit: true, Mark: 1, MarkMask: 1})
	})
	f.CtNAT = f.Conntrack && d.probeFlow('n', func(k *flow.Key, m *flow.Mask) []byte {
		k.EthType = flow.EthTypeIPv4
		ct := datapath.CT{Commit: true, HasNAT: true,
			NAT: datapath.NAT{Src: true, IPMin: netip.AddrFrom4([4]byte{10, 0, 0, 1})}}
		return datapath.AppendCT(nil, &ct)
	})
	f.CtClear = d.probeFlow('x', func(k *flow.Key, m *flow.Mask) []byte {
		return datapath.AppendCTClear(nil)
	})
}

// probeFlow puts and deletes one probe flow that set describes (key, mask
// and actions on top of the base probe match) and reports whether the
// kernel took it.
func (d *Datapath) probeFlow(tag byte, set func(k *flow.Key, m *flow.Mask) []byte) bool {
	probe := datapath.Flow{
		UFID: datapath.UFID{'g', 'o', 'v', 's', 'w', 'i', 't', 'c', 'h', '-', 'c', 't', tag, '?', '?', '!'},
		Key:  flow.Key{InPort: 65534, EthType: 0x88b5},
	}
	probe.Mask.InPort = ^uint32(0)
	probe.Mask.EthType = 0xffff
	probe.Actions = set(&probe.Key, &probe.Mask)
	d.probing = true
	err := d.PutFlow(&probe, datapath.PutCreate)
	d.probing = false
	if err != nil {
		return false
	}
	d.DeleteFlow(probe.UFID, nil)
	return true
}
