package ofproto

import (
	"encoding/binary"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
	"github.com/govswitch/govswitch/ofproto/netflow"
)

// NetFlow v5, as ovs-vswitchd's: a bridge with NetFlow makes the IPv4
// 5-tuple and ToS part of every megaflow (netflow_mask_wc), so that each
// datapath flow is one NetFlow flow; the packet of each miss and the
// revalidator's stats deltas credit it, and a datapath flow's deletion
// reports it. Without NetFlow the only cost is one atomic load per
// translation and per revalidated flow.

// netflowState is a bridge's running NetFlow.
type netflowState struct {
	exp *netflow.Exporter
}

// SetNetFlow starts NetFlow on the bridge with cfg, replacing what ran
// before; nil stops it (reporting every flow it held). Datapath flows are
// translated again at once, to take on (or drop) the NetFlow mask.
func (b *Bridge) SetNetFlow(cfg *netflow.Config) error {
	var st *netflowState
	if cfg != nil {
		exp, err := netflow.NewExporter(*cfg)
		if err != nil {
			return err
		}
		st = &netflowState{exp: exp}
	}
	old := b.X.netflow.Swap(st)
	u := b.Backer.Udpif
	switch {
	case old == nil && st != nil:
		u.netflows.Add(1)
	case old != nil && st == nil:
		u.netflows.Add(-1)
	}
	if old != nil {
		old.exp.Close()
	}
	b.Tables.Invalidate()
	return nil
}

// NetFlow returns the running NetFlow exporter, nil when none.
func (b *Bridge) NetFlow() *netflow.Exporter {
	if st := b.X.netflow.Load(); st != nil {
		return st.exp
	}
	return nil
}

func (b *Bridge) stopNetFlow() {
	if b.X.netflow.Load() != nil {
		b.SetNetFlow(nil)
	}
}

// netflowMask adds the NetFlow flow's fields to the megaflow of an IPv4
// packet. It runs at the end of a translation on a bridge with NetFlow.
func (c *xctx) netflowMask(k *flow.Key) {
	c.out.netflow = true
	if k.EthType != flow.EthTypeIPv4 {
		return
	}
	wc := &c.out.WC
	wc.NwProto = 0xff
	wc.IPv4Src = [4]byte{0xff, 0xff, 0xff, 0xff}
	wc.IPv4Dst = [4]byte{0xff, 0xff, 0xff, 0xff}
	wc.NwTos |= 0xfc // DSCP
	switch k.NwProto {
	case flow.IPProtoTCP, flow.IPProtoUDP, flow.IPProtoSCTP, flow.IPProtoICMP:
		wc.TpSrc, wc.TpDst = 0xffff, 0xffff
	}
}

// netflowKey is the NetFlow flow of datapath key k (in datapath port
// numbering) on bridge b; ok is false for a packet NetFlow does not
// report (not IPv4) or a port the bridge does not have.
func netflowKey(b *Bridge, k *flow.Key) (nk netflow.Key, ok bool) {
	if k.EthType != flow.EthTypeIPv4 {
		return nk, false
	}
	p := b.Ports.Snapshot().ByDP(k.InPort)
	if p == nil {
		return nk, false
	}
	return netflow.Key{InPort: uint16(p.OFPort), Src: k.IPv4Src, Dst: k.IPv4Dst, Proto: k.NwProto, Tos: k.NwTos,
		SrcPort: k.TpSrc, DstPort: k.TpDst}, true
}

// netflowOutput is the output interface ovs-vswitchd would report for
// datapath actions acts: OutFlood when the translation flooded (FLOOD,
// ALL or NORMAL's flood, whatever else it output), else the OpenFlow port
// of the only output, OutMulti for several, OutDrop for none.
func netflowOutput(b *Bridge, acts []byte, flooded bool) uint16 {
	if flooded {
		return netflow.OutFlood
	}
	n, last := 0, uint32(0)
	it := netlinkio.NewAttrIter(acts)
	for it.Next() {
		if it.Type() == uint16(datapath.ActionOutput) && len(it.Data()) == 4 {
			n++
			last = binary.NativeEndian.Uint32(it.Data())
		}
	}
	switch n {
	case 0:
		return netflow.OutDrop
	case 1:
		if p := b.Ports.Snapshot().ByDP(last); p != nil {
			return uint16(p.OFPort)
		}
	}
	return netflow.OutMulti
}

// bridgeOf returns the bridge that owns datapath port dpPort.
func (u *Udpif) bridgeOf(dpPort uint32) *Bridge {
	switch t := u.x.(type) {
	case *Backer:
		return t.Owner(dpPort)
	case *Xlator:
		return t.bridge
	}
	return nil
}

// netflowMiss credits a miss's packet, which the datapath flow's counts
// will not include.
func (u *Udpif) netflowMiss(up *datapath.Upcall, out *Out, now time.Time) {
	b := u.bridgeOf(up.Key.InPort)
	if b == nil {
		return
	}
	st := b.X.netflow.Load()
	if st == nil {
		return
	}
	if nk, ok := netflowKey(b, &up.Key); ok {
		var flags uint16
		if up.Key.NwProto == flow.IPProtoTCP {
			flags = up.Key.TCPFlags
		}
		st.exp.Update(nk, netflowOutput(b, out.Actions, out.nfFlood), 1, uint64(len(up.Packet)), flags, now)
	}
}

// netflowCredit credits a datapath flow's counts since the last dump.
func (u *Udpif) netflowCredit(k *ukey, packets, bytes uint64, tcpFlags uint16, now time.Time) {
	key := k.Key()
	b := u.bridgeOf(key.InPort)
	if b == nil {
		return
	}
	if st := b.X.netflow.Load(); st != nil {
		if nk, ok := netflowKey(b, &key); ok {
			st.exp.Update(nk, netflowOutput(b, k.actions, k.nfFlood), packets, bytes, tcpFlags, now)
		}
	}
}

// netflowClear reports the NetFlow flow of a datapath flow being deleted.
func (u *Udpif) netflowClear(ufid *datapath.UFID) {
	k := u.ukeys.Lookup(ufid)
	if k == nil {
		return
	}
	key := k.Key()
	b := u.bridgeOf(key.InPort)
	if b == nil {
		return
	}
	if st := b.X.netflow.Load(); st != nil {
		if nk, ok := netflowKey(b, &key); ok {
			st.exp.Clear(nk)
		}
	}
}
