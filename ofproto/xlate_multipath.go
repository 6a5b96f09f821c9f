package ofproto

import "github.com/govswitch/govswitch/ofproto/openflow"

// multipath writes the link a hash of the flow chooses into its
// destination, as ovs-vswitchd's multipath_execute: the hashed fields and
// the destination's bits join the megaflow, so every packet the datapath
// flow catches hashes to the same link.
func (c *xctx) multipath(a *openflow.Action) {
	m := a.Hash
	if m == nil {
		return
	}
	h := flowHashFields(&c.flow, m.Fields, m.Basis)
	link := multipathLink(h, m.Algorithm, uint32(m.MaxLink)+1, m.Arg)
	maskHashFields(&c.flow, &c.out.WC, m.Fields)
	c.loadSubfield(a.Field, a.Ofs, a.NBits, uint64(link))
}

// loadSubfield writes v into nBits of f at ofs and makes those bits exact
// in the megaflow, as ovs-vswitchd's nxm_reg_load.
func (c *xctx) loadSubfield(f openflow.Field, ofs, nBits uint16, v uint64) {
	ld := openflow.Action{Type: openflow.ActRegLoad, Field: f, Ofs: ofs, NBits: nBits, Load: v}
	if nBits < 64 {
		ld.Load &= 1<<nBits - 1
	}
	c.regLoad(&ld)
	c.unwildcardDst(f, ofs, nBits)
}

// multipathLink is ovs-vswitchd's multipath_algorithm: the link, 0 to
// n-1, that algorithm chooses for hash.
func multipathLink(hash uint32, algorithm uint16, n, arg uint32) uint16 {
	switch algorithm {
	case openflow.MultipathModuloN:
		return uint16(hash % n)
	case openflow.MultipathHashThreshold:
		if n == 1 {
			return 0
		}
		return uint16(hash / (0xffffffff/n + 1))
	case openflow.MultipathHRW:
		if n > 64 {
			return iterHashLink(hash, n, 0)
		}
		best, bestW := uint32(0), hash2Words(hash, 0)
		for l := uint32(1); l < n; l++ {
			if w := hash2Words(hash, l); w > bestW {
				best, bestW = l, w
			}
		}
		return uint16(best)
	case openflow.MultipathIterHash:
		return iterHashLink(hash, n, arg)
	}
	return 0
}

// iterHashLink is iter_hash: rehash until the hash modulo a power of two
// (arg, when it is one no smaller than n and less than 2n) is a link.
func iterHashLink(hash, n, modulo uint32) uint16 {
	if modulo < n || modulo/2 > n {
		modulo = roundUpPow2(n)
	}
	for i := uint32(0); ; i++ {
		if l := hash2Words(hash, i) % modulo; l < n {
			return uint16(l)
		}
	}
}

func roundUpPow2(x uint32) uint32 {
	x--
	x |= x >> 1
	x |= x >> 2
	x |= x >> 4
	x |= x >> 8
	return x + 1
}
