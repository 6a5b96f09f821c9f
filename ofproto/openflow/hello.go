package openflow

import "math/bits"

// HelloElemVersionBitmap is the hello element type carrying a version bitmap.
const HelloElemVersionBitmap uint16 = 1

// Hello is OFPT_HELLO. Versions is the sender's version bitmap (bit n set
// = wire version n supported); zero means the hello carried no bitmap
// element, and the header version is the sender's highest version.
// Bitmap words past the first (versions 32 and up) are dropped.
type Hello struct {
	Envelope
	Versions uint32
}

// VersionBitmap returns the bitmap with the given wire versions set.
func VersionBitmap(versions ...uint8) uint32 {
	var m uint32
	for _, v := range versions {
		if v < 32 {
			m |= 1 << v
		}
	}
	return m
}

func decodeHello(env Envelope, body []byte) (Msg, error) {
	m := &Hello{Envelope: env}
	// Elements are TLVs padded to 8 bytes; unknown ones are skipped, and
	// OpenFlow 1.0 hellos may carry arbitrary bytes, which we ignore.
	for len(body) >= 4 {
		typ, n := u16(body), int(u16(body[2:]))
		if n < 4 || n > len(body) {
			if env.Version <= Version10 {
				break
			}
			return nil, errOf(Version13, kBadLen, "hello element length %d in %d bytes", n, len(body))
		}
		if typ == HelloElemVersionBitmap && n >= 8 {
			m.Versions = u32(body[4:])
		}
		padded := (n + 7) &^ 7
		if padded > len(body) {
			padded = len(body)
		}
		body = body[padded:]
	}
	return m, nil
}

// Append encodes the hello; a nonzero Versions adds a bitmap element.
func (m *Hello) Append(b []byte) ([]byte, error) {
	b, start := begin(b, m.Version, TypeHello, m.Xid)
	if m.Versions != 0 {
		b = be32(be16(be16(b, HelloElemVersionBitmap), 8), m.Versions)
	}
	return finish(b, start)
}

// Negotiate picks the version to speak given our supported bitmap and the
// peer's hello: with a peer bitmap, the highest version in both; without
// one, the lower of the peer's header version and our highest, if we
// support it. ok is false when there is no common version (answer with
// OFPET_HELLO_FAILED / OFPHFC_INCOMPATIBLE and close).
func Negotiate(ours uint32, peer *Hello) (version uint8, ok bool) {
	if ours == 0 {
		return 0, false
	}
	if peer.Versions != 0 {
		common := ours & peer.Versions
		if common == 0 {
			return 0, false
		}
		return uint8(31 - bits.LeadingZeros32(common)), true
	}
	v := uint8(31 - bits.LeadingZeros32(ours))
	if peer.Version < v {
		v = peer.Version
	}
	if v >= 32 || ours&(1<<v) == 0 {
		return 0, false
	}
	return v, true
}
