package openflow

import "fmt"

// bundle(fields,basis,algorithm,ofport,members:p1,p2,...) and
// bundle_load(fields,basis,algorithm,ofport,dst[ofs..end],members:...)
// (NXAST_BUNDLE, NXAST_BUNDLE_LOAD): choose one live member port, by
// active-backup order or by a hash of the flow, and output to it (bundle)
// or write its number into a subfield (bundle_load). An ActBundle Action
// carries the members, fields, basis and algorithm in Hash and, for
// bundle_load, the destination in Field, Ofs and NBits (Field is
// FieldNone for bundle). The wire form, 32 bytes then the members:
//
//	algorithm, fields, basis, member_type (NXM_OF_IN_PORT), n_members,
//	ofs_nbits, dst, 4 zero bytes, n_members 16-bit ports padded to 8
//
// encoded exactly as ovs-ofctl 3.1 encodes it
// (testdata/ovs-ofctl/bundle-*.hex).
const (
	NXASTBundle     uint16 = 12
	NXASTBundleLoad uint16 = 13
)

// Bundle member selection algorithms (NX_BD_ALG_*).
const (
	BundleActiveBackup uint16 = 0
	BundleHRW          uint16 = 1
)

// bundleMaxMembers is ovs-vswitchd's BUNDLE_MAX_MEMBERS.
const bundleMaxMembers = 2048

// nxmOfInPort is NXM_OF_IN_PORT's header, bundle's only member type.
const nxmOfInPort uint32 = 0x00000002

// Bundle returns a bundle action (dst FieldNone) or a bundle_load action
// into dst[ofs..ofs+nBits-1].
func Bundle(fields HashFields, basis, algorithm uint16, members []uint32, dst Field, ofs, nBits uint16) Action {
	return Action{Type: ActBundle, Field: dst, Ofs: ofs, NBits: nBits,
		Hash: &HashAction{Fields: fields, Basis: basis, Algorithm: algorithm, Members: members}}
}

// decodeBundle decodes a whole NXAST_BUNDLE or NXAST_BUNDLE_LOAD, checked
// as ovs-vswitchd 3.1 checks it. Members alias nothing.
func decodeBundle(v uint8, sub uint16, act []byte) (Action, error) {
	name := "bundle"
	if sub == NXASTBundleLoad {
		name = "bundle_load"
	}
	if len(act) < 32 {
		return Action{}, errOf(v, kActBadLen, "%s: length %d, want at least 32", name, len(act))
	}
	h := &HashAction{Algorithm: u16(act[10:]), Fields: HashFields(u16(act[12:])), Basis: u16(act[14:])}
	n := int(u16(act[20:]))
	switch {
	case !h.Fields.Valid():
		return Action{}, errOf(v, kActBadArgument, "%s: fields %d", name, h.Fields)
	case n > bundleMaxMembers:
		return Action{}, errOf(v, kActBadArgument, "%s: %d members", name, n)
	case h.Algorithm > BundleHRW:
		return Action{}, errOf(v, kActBadArgument, "%s: algorithm %d", name, h.Algorithm)
	case u32(act[16:]) != nxmOfInPort:
		return Action{}, errOf(v, kActBadArgument, "%s: member type %08x", name, u32(act[16:]))
	case u32(act[28:]) != 0:
		return Action{}, errOf(v, kActBadArgument, "%s: nonzero reserved bytes", name)
	}
	a := Action{Type: ActBundle, Hash: h}
	if sub == NXASTBundleLoad {
		var err error
		if a.Field, a.Ofs, a.NBits, err = subfieldDst(v, name, u16(act[22:]), u32(act[24:])); err != nil {
			return Action{}, err
		}
		if a.NBits < 16 {
			return Action{}, errOf(v, kActBadArgument, "%s: %d-bit destination, want at least 16", name, a.NBits)
		}
	} else if u16(act[22:]) != 0 || u32(act[24:]) != 0 {
		return Action{}, errOf(v, kActBadArgument, "%s: nonzero destination", name)
	}
	if len(act)-32 < 2*n {
		return Action{}, errOf(v, kActBadLen, "%s: %d bytes for %d members", name, len(act)-32, n)
	}
	h.Members = make([]uint32, n)
	for i := range h.Members {
		p := Port10To32(u16(act[32+2*i:]))
		// ovs-vswitchd's bundle_check: no controller member (bundle
		// has no max_len), and no reserved number that names no port.
		if p == PortController || p >= PortMax && p < PortInPort {
			return Action{}, errOf(v, kActBadArgument, "%s: member %#x", name, p)
		}
		h.Members[i] = p
	}
	return a, nil
}

func appendBundle(b []byte, a *Action) ([]byte, error) {
	h := a.Hash
	if h == nil || len(h.Members) > bundleMaxMembers {
		return b, fmt.Errorf("openflow: bundle without members or with too many: %w", ErrUnsupported)
	}
	sub, ofsNBits, dst := NXASTBundle, uint16(0), uint32(0)
	if a.Field != FieldNone {
		var ok bool
		if dst, ok = a.Field.Header(true); !ok || a.NBits == 0 || a.NBits > 64 || int(a.Ofs)+int(a.NBits) > 8*a.Field.Size() {
			return b, fmt.Errorf("openflow: bundle_load into %d bits at %d of %s: %w", a.NBits, a.Ofs, a.Field, ErrUnsupported)
		}
		sub, ofsNBits = NXASTBundleLoad, a.Ofs<<6|(a.NBits-1)
	}
	ml := (2*len(h.Members) + 7) / 8 * 8
	b = be16(be16(be16(nxActionHeader(b, uint16(32+ml), sub), h.Algorithm), uint16(h.Fields)), h.Basis)
	b = zeros(be32(be16(be16(be32(b, nxmOfInPort), uint16(len(h.Members))), ofsNBits), dst), 4)
	start := len(b)
	for _, m := range h.Members {
		p, ok := Port32To10(m)
		if !ok {
			return b, fmt.Errorf("openflow: bundle member %d: %w", m, ErrUnsupported)
		}
		b = be16(b, p)
	}
	return zeros(b, ml-(len(b)-start)), nil
}
