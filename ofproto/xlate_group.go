package ofproto

import (
	"encoding/binary"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Translation of the group action and of meters.
//
// Buckets run as ovs-vswitchd's xlate_group_bucket runs them: each on the
// packet as it was at the group action, the flow rolled back after it, so
// an all group copies the packet to every bucket and a group never changes
// what the actions after it see. The datapath actions a bucket emits leave
// the datapath's packet changed; the next output commits the difference
// back, which is what OVS emits too.
//
// A select group without a selection method or with selection_method=
// dp_hash picks its bucket by the datapath's hash of the packet, as
// ovs-vswitchd does (group_dphash.go), where it can: its action in a
// rule's own apply-actions, on a datapath with the hash and recirc
// actions. Elsewhere (the action set, a group reached from a bucket, a
// resubmit, a clone or a patch port, a bridge with mirrors, and groups
// whose weights need more than 256 hash values) it picks in
// userspace by a hash of the flow: without a selection method, a
// symmetric hash of the L2-L4 addresses (OVS's default hash,
// NX_HASH_FIELDS_SYMMETRIC_L4), with those fields added to the megaflow
// so each datapath flow stands for one choice; selection_method=hash
// hashes the fields the group names. That choice is weighted rendezvous
// hashing over the live buckets, as OVS's group_best_live_bucket.

// maxGroupDepth bounds watch_group liveness recursion (OVS's MAX_LIVENESS_RECURSION).
const maxGroupDepth = 32

// group runs the group action to group id.
func (c *xctx) group(id uint32) {
	freezeOK := c.groupFreezeOK
	c.groupFreezeOK = false
	g := c.x.Groups.Lookup(id)
	if g == nil {
		// Flows naming a missing group are refused, and a group's delete
		// deletes its flows; a bucket may still name one that went.
		return
	}
	if c.deep() >= MaxResubmitDepth {
		c.out.Actions = c.out.Actions[:0]
		c.out.Dropped = "group chaining too deep"
		c.exit = true
		return
	}
	if g.Type == openflow.GroupTypeSelect && g.hash != nil && freezeOK && c.dpHashUsable() {
		if c.flow.DPHash == 0 {
			// The datapath has not hashed the packet: hash and
			// recirculate, the group action running again on the
			// packet that comes back (doActionsIn, runActionSet). The
			// group counts then, when a bucket is picked.
			c.hashFreeze = g.hash
			c.exit = true
			// As OVS's trace says of the first pass: no bucket yet.
			c.traceDetail("no live bucket")
			return
		}
		c.note(g.counter)
		c.pickedBucket(g, c.dpHashBucket(g))
		return
	}
	c.note(g.counter)
	switch g.Type {
	case openflow.GroupTypeAll, openflow.GroupTypeIndirect:
		for i := range g.Buckets {
			c.bucket(g, i)
		}
	case openflow.GroupTypeFF:
		c.pickedBucket(g, c.firstLiveBucket(g, 0))
	case openflow.GroupTypeSelect:
		c.pickedBucket(g, c.selectBucket(g))
	}
}

// pickedBucket runs bucket i of a select or fast failover group, none
// when i is -1, and says which in a trace.
func (c *xctx) pickedBucket(g *Group, i int) {
	if i < 0 {
		c.traceDetail("no live bucket")
		return
	}
	if c.out.trace != nil {
		c.trace(traceAction, " -> using bucket %d", g.Buckets[i].ID)
	}
	c.bucket(g, i)
}

// dpHashUsable reports whether a dp_hash group may hash in the datapath
// here: the datapath has the hash and recirc actions, the bridge has no
// mirrors (a mirror's copy is made where the output is, and a frozen
// translation does not carry the mirrors already served) and the packet
// has an Ethernet header to recirculate with.
func (c *xctx) dpHashUsable() bool {
	return dpSupportsHash.Load() && c.ports.mirrors == nil && !c.encap.noEth
}

// bucket runs bucket i of g on a copy of the flow.
func (c *xctx) bucket(g *Group, i int) {
	if c.exit {
		return
	}
	c.note(g.bucketCounters[i])
	if c.out.trace != nil {
		// OVS's trace nests the bucket's actions under it.
		c.trace(traceAction, "bucket %d", g.Buckets[i].ID)
		for j := range g.Buckets[i].Actions {
			c.trace(traceNested, "%s", ActionString(&g.Buckets[i].Actions[j]))
		}
	}
	saved := c.flow
	c.depth++
	c.doActions(g.Buckets[i].Actions)
	c.depth--
	c.flow = saved
	if c.out.Dropped == "" {
		// A bucket that ends (drop, an exhausted TTL) ends only itself.
		c.exit = false
	}
}

// portLive reports whether OpenFlow port p can send: it exists and is
// neither administratively down nor without link, nor, on a port of one
// interface running LACP, held back by LACP (OVS's may_enable_port).
func (c *xctx) portLive(p uint32) bool {
	pt := c.ports.ByOF(p)
	if pt == nil || pt.Down || pt.LinkDown {
		return false
	}
	if pt.LACPBundle != nil {
		if st := c.ports.bonds[pt.LACPBundle]; st != nil && len(st.mayEnable) == 1 {
			return st.mayEnable[0]
		}
	}
	return true
}

// bucketLive is OVS's bucket_is_alive.
func (c *xctx) bucketLive(b *openflow.Bucket, depth int) bool {
	if b.WatchPort == openflow.PortAny && b.WatchGroup == openflow.GroupAny {
		return true
	}
	if b.WatchPort != openflow.PortAny && c.portLive(b.WatchPort) {
		return true
	}
	if b.WatchGroup != openflow.GroupAny && depth < maxGroupDepth {
		if g := c.x.Groups.Lookup(b.WatchGroup); g != nil && c.firstLiveBucket(g, depth+1) >= 0 {
			return true
		}
	}
	return false
}

// firstLiveBucket is the index of g's first live bucket, -1 if none.
func (c *xctx) firstLiveBucket(g *Group, depth int) int {
	for i := range g.Buckets {
		if c.bucketLive(&g.Buckets[i], depth) {
			return i
		}
	}
	return -1
}

// selectBucket picks the bucket of select group g for the flow.
func (c *xctx) selectBucket(g *Group) int {
	var h uint64
	if g.Selection.Method == "hash" && len(g.fields) > 0 {
		h = c.hashFields(g)
	} else {
		h = c.symmetricL4Hash()
	}
	best, bestScore := -1, uint64(0)
	for i := range g.Buckets {
		b := &g.Buckets[i]
		if !c.bucketLive(b, 0) {
			continue
		}
		score := (flow.HashFinish(flow.HashAdd(h, uint64(b.ID)), 1) & 0xffff) * uint64(b.Weight)
		if best < 0 || score >= bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// symmetricL4Hash is OVS's flow_hash_symmetric_l4 in spirit: the same for
// both directions of a connection, over the Ethernet addresses and type,
// the VLAN id, the IP addresses and protocol and the L4 ports. It adds
// those fields to the megaflow (flow_mask_hash_fields).
func (c *xctx) symmetricL4Hash() uint64 {
	f, wc := &c.flow, &c.out.WC
	wc.EthSrc, wc.EthDst = ones6, ones6
	wc.EthType = 0xffff
	wc.VLANs[0].TCI |= flow.VLANVIDMask | flow.VLANPresent
	h := flow.HashAdd(0, mac64(f.EthSrc)^mac64(f.EthDst))
	h = flow.HashAdd(h, uint64(f.EthType)<<16|uint64(f.VLANs[0].TCI&flow.VLANVIDMask))
	ip := false
	switch f.EthType {
	case flow.EthTypeIPv4:
		wc.IPv4Src, wc.IPv4Dst = [4]byte{0xff, 0xff, 0xff, 0xff}, [4]byte{0xff, 0xff, 0xff, 0xff}
		h = flow.HashAdd(h, uint64(binary.BigEndian.Uint32(f.IPv4Src[:])^binary.BigEndian.Uint32(f.IPv4Dst[:])))
		ip = true
	case flow.EthTypeIPv6:
		for i := range wc.IPv6Src {
			wc.IPv6Src[i], wc.IPv6Dst[i] = 0xff, 0xff
		}
		h = flow.HashAdd(h, binary.BigEndian.Uint64(f.IPv6Src[:])^binary.BigEndian.Uint64(f.IPv6Dst[:]))
		h = flow.HashAdd(h, binary.BigEndian.Uint64(f.IPv6Src[8:])^binary.BigEndian.Uint64(f.IPv6Dst[8:]))
		ip = true
	}
	if ip {
		wc.NwProto = 0xff
		h = flow.HashAdd(h, uint64(f.NwProto))
		switch f.NwProto {
		case flow.IPProtoTCP, flow.IPProtoUDP, flow.IPProtoSCTP:
			if f.NwFrag&flow.FragLater == 0 {
				wc.TpSrc, wc.TpDst = 0xffff, 0xffff
				h = flow.HashAdd(h, uint64(f.TpSrc^f.TpDst))
			}
		}
	}
	return flow.HashFinish(h, 6)
}

func mac64(m [6]byte) uint64 {
	return uint64(m[0])<<40 | uint64(m[1])<<32 | uint64(m[2])<<24 | uint64(m[3])<<16 | uint64(m[4])<<8 | uint64(m[5])
}

// hashFields hashes the fields of g's "hash" selection method, each under
// its mask, skipping fields whose prerequisites the packet does not meet;
// each field hashed joins the megaflow.
func (c *xctx) hashFields(g *Group) uint64 {
	h := g.Selection.Param
	exact := flow.ExactMask()
	c.out.WC.EthType = 0xffff
	for i := range g.fields {
		sf := &g.fields[i]
		if !sf.Field.PrereqsMet(&c.flow, &exact) {
			continue
		}
		// The prerequisites (ethertype, IP protocol) decided too.
		if c.flow.EthType == flow.EthTypeIPv4 || c.flow.EthType == flow.EthTypeIPv6 {
			c.out.WC.NwProto = 0xff
		}
		var buf [16]byte
		v, ok := sf.Field.Value(buf[:0], &c.flow)
		if !ok {
			continue
		}
		for j := range v {
			h = flow.HashAdd(h, uint64(v[j]&sf.Mask[j]))
		}
		cover := sf.Field.Cover()
		c.out.WC.Or(&cover)
	}
	return flow.HashFinish(h, len(g.fields))
}

// meter runs the packet through meter id: the datapath's meter with the
// id the meter table gave it.
func (c *xctx) meter(id uint32) {
	m := c.x.Meters.Lookup(id)
	if m == nil {
		// Flows naming a missing meter are refused and a meter's delete
		// deletes its flows: this is a race with that delete. Drop, as
		// the flow will be gone.
		c.out.Actions = c.out.Actions[:0]
		c.out.Dropped = "meter does not exist"
		c.exit = true
		return
	}
	c.out.Actions = datapath.AppendMeter(c.out.Actions, m.DPID)
}
