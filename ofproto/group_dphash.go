package ofproto

import (
	"math/bits"
	"sync/atomic"

	"github.com/govswitch/govswitch/datapath"
)

// Select groups by dp_hash, as ovs-vswitchd 3.1 selects on the kernel
// datapath. A select group without a selection method, and one whose
// method is dp_hash, maps each of a power of two of hash values to a
// bucket, in proportion to the buckets' weights; the translation hashes
// the packet in the datapath (hash(l4(basis)), then recirc) and resumes
// at the group action with the kernel's hash as dp_hash, which picks the
// bucket. The first stage's megaflow then holds nothing the hash reads,
// and the second has one flow per hash value in use: a connection storm
// through a load-balancing group costs the same few megaflows as a
// single connection, where hashing in userspace would put every 5-tuple
// in the megaflow.
//
// The table is OVS's (group_setup_dp_hash_table): as many hash values as
// the buckets need for the smallest weight to get one, rounded up to a
// power of two, at least 16 and at most 256 (without a selection method:
// at most 256 too; more falls back to hashing in userspace), filled by
// Webster's method, each value going to the bucket with the largest
// weight/divisor, divisors rising by two per value won, the first bucket
// winning ties. A live bucket is found from the packet's own value on,
// so a dead bucket's share spreads over its neighbours in the table.

// dpSupportsHash is set when the datapath has the hash action (which
// computes a packet's dp_hash in the kernel) and the recirc action that
// brings the hashed packet back (noteDatapathFeatures). It gates both
// users of the kernel's hash: balance-tcp bonds (xlate_bond.go) and select
// groups that pick by dp_hash (dpHashUsable). False, as on the dummy
// datapath, both hash in userspace instead.
var dpSupportsHash atomic.Bool

// maxGroupHashValues is OVS's MAX_SELECT_GROUP_HASH_VALUES.
const maxGroupHashValues = 256

// groupHash is a select group's dp_hash table.
type groupHash struct {
	alg, basis uint32
	mask       uint32  // the table's size less one: the dp_hash bits that count
	buckets    []int16 // bucket index by hash value
}

// setupGroupHash builds g's dp_hash table when its selection method asks
// for one (none, or dp_hash) and its buckets allow it, as OVS's
// group_set_selection_method decides; g.hash stays nil otherwise and the
// group hashes in userspace.
func (g *Group) setupGroupHash() {
	// OVS asks for its symmetric L4 hash without a selection method,
	// and for the algorithm in the upper half of the parameter with
	// dp_hash; kernel 6.1's hash action has the L4 hash only, and OVS's
	// probe of the datapath brings every request down to it there
	// (pick_dp_hash_select_group). The basis is the parameter's lower
	// half, 0 without a method.
	var basis uint32
	switch g.Selection.Method {
	case "":
	case "dp_hash":
		basis = uint32(g.Selection.Param)
	default:
		return
	}
	alg := uint32(datapath.HashAlgL4)
	n := len(g.Buckets)
	if n == 0 || n > 1<<15 {
		return
	}
	total, minW := uint64(0), uint64(0xffff)
	for i := range g.Buckets {
		w := uint64(g.Buckets[i].Weight)
		if w > 0 && w < minW {
			minW = w
		}
		total += w
	}
	if total == 0 {
		return
	}
	slots := (total + minW - 1) / minW
	size := uint64(16)
	if slots > 16 {
		size = 1 << bits.Len64(slots-1)
	}
	if size > maxGroupHashValues {
		return
	}
	divisor := make([]uint32, n)
	value := make([]float64, n)
	for i := range g.Buckets {
		divisor[i], value[i] = 1, float64(g.Buckets[i].Weight)
	}
	h := &groupHash{alg: alg, basis: basis, mask: uint32(size - 1), buckets: make([]int16, size)}
	for v := range h.buckets {
		win := 0
		for i := 1; i < n; i++ {
			if value[i] > value[win] {
				win = i
			}
		}
		divisor[win] += 2
		value[win] = float64(g.Buckets[win].Weight) / float64(divisor[win])
		h.buckets[v] = int16(win)
	}
	g.hash = h
}

// dpHashBucket picks the bucket of a dp_hash group for a packet whose
// dp_hash the datapath computed: the first live one from its hash value
// on, -1 if none. The megaflow holds the table's bits of dp_hash.
func (c *xctx) dpHashBucket(g *Group) int {
	h := g.hash
	c.out.WC.DPHash |= h.mask
	for i := uint32(0); i <= h.mask; i++ {
		b := int(h.buckets[(c.flow.DPHash+i)&h.mask])
		if c.bucketLive(&g.Buckets[b], 0) {
			return b
		}
	}
	return -1
}
