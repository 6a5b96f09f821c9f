package ofproto

import (
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// NORMAL over bonds (bond.go): the hooks xlate.go's normal calls. None of
// them allocates, and a bridge without bonds pays one nil check per port.
//
// balance-tcp hashes in the kernel where it can, as ovs-vswitchd does on
// the kernel datapath: the output to the bond becomes hash(l4(basis)),
// recirc(id), with id the bond's (one per bond and bridge, recirc.go),
// and the recirculated packet, whose key carries the hash as dp_hash,
// translates to the output to the member of bucket dp_hash&0xff. The
// first flow then needs no L3/L4 fields in its megaflow, and the second
// stage has at most 256 flows per input port, one a bucket, whose bytes
// rebalancing credits to their bucket. Without the hash action
// (dpSupportsHash false: the dummy datapath, or a kernel that lacks it) the
// 5-tuple is hashed here (bondHash5), the megaflow holding it. Outputs
// mirrored to a bond, and bridges with mirrors, keep the old form: the
// mirror's copy is made where the output is.

// bondRecirc emits the recirculation form of NORMAL's output to bond
// member pt, for a balance-tcp bond that may use it, and reports whether
// it did; ix is the input VLAN, for the output tagging.
func (c *xctx) bondRecirc(pt *Port, ix *xvlan) bool {
	if !dpSupportsHash.Load() || c.ports.mirrors != nil {
		return false
	}
	st := c.ports.bonds[pt.Bond]
	if st == nil || st.balance() != BondBalanceTCP || st.active == nil {
		return false
	}
	id := st.bond.recircID(c)
	if id == 0 {
		return false
	}
	saved := c.flow.VLANs
	if c.ports.vlans {
		c.flow.VLANs = c.normalHeader(pt, ix)
	}
	c.commit()
	c.out.Actions = datapath.AppendHash(c.out.Actions, datapath.HashAlgL4, st.bond.Config.HashBasis)
	c.out.Actions = datapath.AppendRecirc(c.out.Actions, id)
	c.flow.VLANs = saved
	return true
}

// recircID is the recirculation id of bd's hashed output on c's bridge,
// 0 when none is left. It does not allocate once the id exists.
func (bd *Bond) recircID(c *xctx) uint32 {
	s := frozenState{x: c.x, bond: bd}
	return recircs.id(&s, c.now)
}

// bondResume translates a packet back from bd's hash and recirculation:
// out of the member of its dp_hash's bucket. The megaflow holds the
// bucket's bits of dp_hash (and recirc_id and in_port, as every one).
func (c *xctx) bondResume(bd *Bond, key *flow.Key) {
	c.out.WC.DPHash = bondBuckets - 1
	st := c.ports.bonds[bd]
	if st == nil || st.balance() != BondBalanceTCP {
		c.out.Dropped = "bond no longer balances by TCP"
		return
	}
	h := uint8(key.DPHash)
	c.out.acct = bondAcct{bd, h}
	if c.out.trace != nil {
		c.traceBondThaw(key, st.buckets[h])
	}
	c.emitOutput(st.buckets[h])
	// The bond's frozen state has no input port: OVS's thaw leaves
	// in_port NONE, which its trace's final flow shows.
	c.flow.InPort = openflow.PortAny
}

// tableInternal is OVS's TBL_INTERNAL, the hidden table of its bonds'
// post-recirculation rules.
const tableInternal = 254

// bondRecircPriority is the priority of OVS's hidden post-recirculation
// rules of a bond (table 254, one a bucket), which its trace shows.
const bondRecircPriority = 20

// traceBondThaw writes what OVS's trace says of a bond's second stage:
// the thaw into its internal table and the hidden rule of the packet's
// bucket, whose action is the output to member pt.
func (c *xctx) traceBondThaw(key *flow.Key, pt *Port) {
	c.trace(traceAction, "thaw")
	c.trace(8, "Resuming from table %d", tableInternal)
	c.trace(0, "%d. recirc_id=%s,dp_hash=%s/0xff, priority %d", tableInternal, cHex(uint64(key.RecircID)),
		cHex(uint64(key.DPHash&(bondBuckets-1))), bondRecircPriority)
	if pt != nil {
		c.trace(traceAction, "output:%d", pt.OFPort)
	} else {
		c.trace(traceAction, "drop")
	}
}

// bondIn is the state of the bond the input port is a member of, nil when
// it is in none.
func (c *xctx) bondIn() *bondState {
	if c.inPort == nil || c.inPort.Bond == nil {
		return nil
	}
	return c.ports.bonds[c.inPort.Bond]
}

// bondAdmit reports whether a frame of VLAN vlan that arrived on a bond
// member is accepted, as bond_check_admissibility and xlate_normal's
// is_admissible decide it: multicast only on the active member; in
// active-backup nothing on the others; in balance-slb not a frame whose
// source address was learned on another port (our own flood, back on
// another member), unless it is a gratuitous ARP (a host that moved).
func (c *xctx) bondAdmit(vlan uint16) bool {
	st := c.bondIn()
	if st == nil {
		return true
	}
	// LACP bonds admit what arrives on an enabled member (the partner
	// knows the bond); a configured but unnegotiated one nothing, unless
	// it falls back to active-backup (lacp_bond.go).
	switch st.lacp {
	case LACPNegotiated:
		return st.memberEnabledIn(c.inPort)
	case LACPConfigured:
		if !st.fallbackAB() {
			return false
		}
	case LACPOff:
		if st.bond.Config.Mode == BondBalanceTCP {
			return false
		}
	}
	if c.flow.EthDst[0]&1 != 0 && st.active != c.inPort &&
		!(st.bond.Config.AllMembersActive && st.bond.Config.Mode == BondBalanceSLB) {
		return false
	}
	switch st.bond.Config.Mode {
	case BondActiveBackup, BondBalanceTCP:
		return st.active == c.inPort
	case BondBalanceSLB:
		mac := c.x.MAC
		if mac == nil {
			return true
		}
		p, ok := mac.Lookup(vlan, c.flow.EthSrc, c.now)
		if !ok {
			return true
		}
		if pt := c.ports.ByOF(p); pt != nil && pt.Bond == c.inPort.Bond {
			return true
		}
		return c.gratuitousARP()
	}
	return false
}

// gratuitousARP reports whether the frame is a gratuitous ARP (a broadcast
// reply, or a broadcast request for the sender's own address), adding what
// it read to the megaflow.
func (c *xctx) gratuitousARP() bool {
	if c.flow.EthType != flow.EthTypeARP || c.flow.EthDst != ones6 {
		return false
	}
	wc := &c.out.WC
	wc.NwProto = 0xff
	switch c.flow.NwProto {
	case 2:
		return true
	case 1:
		wc.IPv4Src, wc.IPv4Dst = [4]byte{0xff, 0xff, 0xff, 0xff}, [4]byte{0xff, 0xff, 0xff, 0xff}
		return c.flow.IPv4Src == c.flow.IPv4Dst
	}
	return false
}

// learnPort is the OpenFlow port NORMAL learns the source on: the input
// port, or its bond's representative member.
func (c *xctx) learnPort() uint32 {
	if st := c.bondIn(); st != nil {
		return st.rep.OFPort
	}
	return c.inPort.OFPort
}

// sameBundle reports whether pt is the input port or a member of the
// input port's bond: NORMAL sends nothing back there.
func (c *xctx) sameBundle(pt *Port) bool {
	return pt == c.inPort || pt.Bond != nil && c.inPort != nil && pt.Bond == c.inPort.Bond
}

// bondFloodSkip reports whether NORMAL's flood leaves out member pt: all
// members but the bond's representative are left out (the bond takes one
// copy), and the representative too when the bond has no enabled member.
func (c *xctx) bondFloodSkip(pt *Port) bool {
	st := c.ports.bonds[pt.Bond]
	return st == nil || st.rep != pt || st.active == nil
}

// bondOutput is the member a frame of VLAN vlan that NORMAL sends to
// bond member pt leaves by; nil drops it (no member enabled).
func (c *xctx) bondOutput(pt *Port, vlan uint16) *Port {
	st := c.ports.bonds[pt.Bond]
	if st == nil {
		return nil
	}
	switch st.balance() {
	case BondBalanceTCP:
		h := uint8(c.bondHash5(st.bond.Config.HashBasis)) // lacp_bond.go
		c.out.acct = bondAcct{st.bond, h}
		return st.buckets[h]
	case BondBalanceSLB:
		c.out.acct = bondAcct{st.bond, uint8(bondHashMAC(c.flow.EthSrc, vlan, st.bond.Config.HashBasis))}
	}
	return st.outputMember(c.flow.EthSrc, vlan)
}
