package openflow

import "fmt"

// multipath(fields,basis,algorithm,n_links,arg,dst[ofs..end])
// (NXAST_MULTIPATH): hash fields of the flow, choose one of n_links links
// from the hash, write the link number into a subfield. An ActMultipath
// Action carries the destination in Field, Ofs and NBits and the rest in
// Hash. The wire form, 32 bytes after the Nicira header:
//
//	fields, basis, 2 pad, algorithm, max_link (n_links-1), arg (4),
//	2 pad, ofs_nbits, dst (NXM header)
//
// encoded exactly as ovs-ofctl 3.1 encodes it
// (testdata/ovs-ofctl/multipath-*.hex).
const NXASTMultipath uint16 = 10

// HashFields names which fields of a flow multipath and bundle hash
// (NX_HASH_FIELDS_*).
type HashFields uint16

// The NX_HASH_FIELDS_* values.
const (
	HashEthSrc           HashFields = 0 // eth_src
	HashSymmetricL4      HashFields = 1 // symmetric_l4: addresses L2-L4, xored so both directions agree
	HashSymmetricL3L4    HashFields = 2 // symmetric_l3l4: IP addresses, protocol, TCP/SCTP ports
	HashSymmetricL3L4UDP HashFields = 3 // symmetric_l3l4+udp: UDP ports too
	HashNwSrc            HashFields = 4 // nw_src (IPv4 or IPv6)
	HashNwDst            HashFields = 5 // nw_dst
	HashSymmetricL3      HashFields = 6 // symmetric_l3: IP addresses only
)

var hashFieldNames = [...]string{"eth_src", "symmetric_l4", "symmetric_l3l4", "symmetric_l3l4+udp", "nw_src", "nw_dst", "symmetric_l3"}

func (f HashFields) String() string {
	if int(f) < len(hashFieldNames) {
		return hashFieldNames[f]
	}
	return fmt.Sprintf("hash_fields(%d)", uint16(f))
}

// Valid reports whether ovs-vswitchd 3.1 knows f.
func (f HashFields) Valid() bool { return int(f) < len(hashFieldNames) }

// Multipath link selection algorithms (NX_MP_ALG_*).
const (
	MultipathModuloN       uint16 = 0
	MultipathHashThreshold uint16 = 1
	MultipathHRW           uint16 = 2
	MultipathIterHash      uint16 = 3
)

// HashAction is the body of an ActMultipath or ActBundle action.
type HashAction struct {
	Fields HashFields
	Basis  uint16
	// Algorithm is an NX_MP_ALG_* (multipath) or NX_BD_ALG_* (bundle).
	Algorithm uint16
	// MaxLink is multipath's n_links-1 and Arg its algorithm argument
	// (iter_hash's modulus).
	MaxLink uint16
	Arg     uint32
	// Members are bundle's member ports, in order (OpenFlow 1.0 numbers
	// widened as Port10To32 widens them; PortAny, OpenFlow 1.0's
	// OFPP_NONE, is allowed).
	Members []uint32
}

func (h *HashAction) equal(o *HashAction) bool {
	if h == nil || o == nil {
		return h == o
	}
	if h.Fields != o.Fields || h.Basis != o.Basis || h.Algorithm != o.Algorithm || h.MaxLink != o.MaxLink ||
		h.Arg != o.Arg || len(h.Members) != len(o.Members) {
		return false
	}
	for i := range h.Members {
		if h.Members[i] != o.Members[i] {
			return false
		}
	}
	return true
}

// Multipath returns a multipath action writing its link into dst[ofs..ofs+nBits-1].
func Multipath(fields HashFields, basis, algorithm uint16, nLinks int, arg uint32, dst Field, ofs, nBits uint16) Action {
	return Action{Type: ActMultipath, Field: dst, Ofs: ofs, NBits: nBits,
		Hash: &HashAction{Fields: fields, Basis: basis, Algorithm: algorithm, MaxLink: uint16(nLinks - 1), Arg: arg}}
}

// subfieldDst decodes an ofs_nbits and NXM header naming a writable
// destination subfield, as the multipath and bundle_load actions carry
// one.
func subfieldDst(v uint8, name string, ofsNBits uint16, h uint32) (f Field, ofs, nBits uint16, err error) {
	f = FieldByHeader(h)
	if f == FieldNone || fields[f].enc == 0 || !actionHeaderFits(f, h) {
		return FieldNone, 0, 0, errOf(v, kActBadSetType, "%s: destination %08x", name, h)
	}
	ofs, nBits = ofsNBits>>6, ofsNBits&0x3f+1
	if int(ofs)+int(nBits) > 8*f.Size() {
		return FieldNone, 0, 0, errOf(v, kActBadArgument, "%s: %d bits at %d of %s", name, nBits, ofs, f)
	}
	return f, ofs, nBits, nil
}

// decodeMultipath decodes a whole NXAST_MULTIPATH, checked as
// ovs-vswitchd 3.1 checks it: known fields and algorithm, and a
// destination wide enough for every link number.
func decodeMultipath(v uint8, act []byte) (Action, error) {
	if len(act) != 32 {
		return Action{}, errOf(v, kActBadLen, "multipath: length %d, want 32", len(act))
	}
	h := &HashAction{Fields: HashFields(u16(act[10:])), Basis: u16(act[12:]), Algorithm: u16(act[16:]),
		MaxLink: u16(act[18:]), Arg: u32(act[20:])}
	f, ofs, nBits, err := subfieldDst(v, "multipath", u16(act[26:]), u32(act[28:]))
	if err != nil {
		return Action{}, err
	}
	switch {
	case !h.Fields.Valid():
		return Action{}, errOf(v, kActBadArgument, "multipath: fields %d", h.Fields)
	case h.Algorithm > MultipathIterHash:
		return Action{}, errOf(v, kActBadArgument, "multipath: algorithm %d", h.Algorithm)
	case int(nBits) < bitsFor(int(h.MaxLink)+1):
		return Action{}, errOf(v, kActBadArgument, "multipath: %d bits cannot hold %d links", nBits, int(h.MaxLink)+1)
	}
	return Action{Type: ActMultipath, Field: f, Ofs: ofs, NBits: nBits, Hash: h}, nil
}

// bitsFor is the number of bits that hold the values 0..n-1 (log2 of n,
// rounded up).
func bitsFor(n int) int {
	b := 0
	for (1 << b) < n {
		b++
	}
	return b
}

func appendMultipath(b []byte, a *Action) ([]byte, error) {
	h, ok := a.Field.Header(true)
	if !ok || a.Hash == nil || a.NBits == 0 || a.NBits > 64 || int(a.Ofs)+int(a.NBits) > 8*a.Field.Size() {
		return b, fmt.Errorf("openflow: multipath into %d bits at %d of %s: %w", a.NBits, a.Ofs, a.Field, ErrUnsupported)
	}
	m := a.Hash
	b = zeros(be16(be16(nxActionHeader(b, 32, NXASTMultipath), uint16(m.Fields)), m.Basis), 2)
	b = zeros(be32(be16(be16(b, m.Algorithm), m.MaxLink), m.Arg), 2)
	return be32(be16(b, a.Ofs<<6|(a.NBits-1)), h), nil
}
