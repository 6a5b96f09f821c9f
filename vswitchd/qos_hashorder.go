package vswitchd

import (
	"encoding/binary"
	"math/bits"
)

// ovs-vswitchd prints a QoS's settings (an smap) and its queues (an hmap
// keyed by queue id) in the order its hash table iterates them. That
// order is a function of the keys, their insertion order and OVS's hash
// function, so qos/show reproduces it: the hash below is OVS's
// documented one for builds without SSE 4.2 (Debian's amd64 baseline),
// MurmurHash3's 32-bit mixing steps (hash_add, hash_finish) over the key
// in 4-byte little-endian words; the table is OVS's hmap, which starts
// with one bucket, puts a new node at the head of its bucket, grows to
// the next power of two of buckets (at least 4) once it holds more than
// twice as many nodes as its mask, moving the nodes bucket by bucket,
// each to the head of its new bucket, and iterates bucket by bucket.

func ovsHashAdd(h, data uint32) uint32 {
	if data != 0 {
		data *= 0xcc9e2d51
		data = bits.RotateLeft32(data, 15)
		data *= 0x1b873593
		h ^= data
	}
	h = bits.RotateLeft32(h, 13)
	return h*5 + 0xe6546b64
}

func ovsHashFinish(h, final uint32) uint32 {
	h ^= final
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// ovsHashString is OVS's hash_string(s, 0), an smap key's hash.
func ovsHashString(s string) uint32 {
	var h uint32
	b := []byte(s)
	for ; len(b) >= 4; b = b[4:] {
		h = ovsHashAdd(h, binary.LittleEndian.Uint32(b))
	}
	if len(b) > 0 {
		var tail [4]byte
		copy(tail[:], b)
		h = ovsHashAdd(h, binary.LittleEndian.Uint32(tail[:]))
	}
	return ovsHashFinish(h, uint32(len(s)))
}

// ovsHashInt is OVS's hash_int(x, 0), a queue id's hash.
func ovsHashInt(x uint32) uint32 {
	return ovsHashFinish(ovsHashAdd(ovsHashAdd(x, 0), 0), 8)
}

// hmapModel is an OVS hmap of values by hash, kept to know the order in
// which it iterates them after insertions and removals (which never
// shrink it).
type hmapModel struct {
	mask    uint32
	n       uint32
	buckets [][]hmapNode // each head first
}

type hmapNode struct {
	hash uint32
	v    int
}

func (m *hmapModel) insert(hash uint32, v int) {
	if m.buckets == nil {
		m.buckets = make([][]hmapNode, 1)
	}
	b := hash & m.mask
	m.buckets[b] = append([]hmapNode{{hash, v}}, m.buckets[b]...)
	m.n++
	if m.n/2 <= m.mask {
		return
	}
	newMask := hmapMask(m.n)
	if newMask <= m.mask {
		return
	}
	nb := make([][]hmapNode, newMask+1)
	for _, bucket := range m.buckets {
		for _, node := range bucket {
			k := node.hash & newMask
			nb[k] = append([]hmapNode{node}, nb[k]...)
		}
	}
	m.buckets, m.mask = nb, newMask
}

func (m *hmapModel) remove(v int) {
	for i, bucket := range m.buckets {
		for j, node := range bucket {
			if node.v == v {
				m.buckets[i] = append(bucket[:j:j], bucket[j+1:]...)
				m.n--
				return
			}
		}
	}
}

func (m *hmapModel) has(v int) bool {
	for _, bucket := range m.buckets {
		for _, node := range bucket {
			if node.v == v {
				return true
			}
		}
	}
	return false
}

// order is the values in the order the hmap iterates them.
func (m *hmapModel) order() []int {
	var out []int
	for _, bucket := range m.buckets {
		for _, node := range bucket {
			out = append(out, node.v)
		}
	}
	return out
}

// hmapOrder returns the indices of hashes, inserted into an OVS hmap in
// their order, in the order the hmap iterates them.
func hmapOrder(hashes []uint32) []int {
	var m hmapModel
	for i, h := range hashes {
		m.insert(h, i)
	}
	return m.order()
}

// queueTable is ovs-vswitchd's table of a device's queues (its tc
// classes), by queue id.
type queueTable struct{ m hmapModel }

func (q *queueTable) add(id uint32) {
	if !q.m.has(int(id)) {
		q.m.insert(ovsHashInt(id), int(id))
	}
}

func (q *queueTable) remove(id uint32) { q.m.remove(int(id)) }

// ids is the queues in the order ovs-vswitchd's queue dump lists them.
func (q *queueTable) ids() []uint32 {
	var out []uint32
	for _, v := range q.m.order() {
		out = append(out, uint32(v))
	}
	return out
}

// hmapMask is the mask of an hmap grown for n nodes.
func hmapMask(n uint32) uint32 {
	m := n / 2
	m |= m >> 1
	m |= m >> 2
	m |= m >> 4
	m |= m >> 8
	m |= m >> 16
	return m | (m&1)<<1
}

// smapEntry is one key and value of an OVS smap.
type smapEntry struct{ key, value string }

// smapOrder returns entries, added to an OVS smap in their order, in the
// order ovs-vswitchd prints them.
func smapOrder(entries []smapEntry) []smapEntry {
	hs := make([]uint32, len(entries))
	for i, e := range entries {
		hs[i] = ovsHashString(e.key)
	}
	out := make([]smapEntry, 0, len(entries))
	for _, i := range hmapOrder(hs) {
		out = append(out, entries[i])
	}
	return out
}

// queueOrder returns queue ids, configured in this order, in the order
// ovs-vswitchd's queue dump lists them.
func queueOrder(ids []uint32) []uint32 {
	var q queueTable
	for _, id := range ids {
		q.add(id)
	}
	return q.ids()
}
