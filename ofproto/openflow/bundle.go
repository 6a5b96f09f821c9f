package openflow

import "fmt"

// Bundles group flow mods (and, in OpenFlow, port mods, group mods and
// packet-outs) that a switch applies all at once: OpenFlow 1.4's
// OFPT_BUNDLE_CONTROL and OFPT_BUNDLE_ADD_MESSAGE, and the same messages
// as the ONF extension to OpenFlow 1.3 (experimenter ONF, types 2300 and
// 2301) that ovs-ofctl --bundle uses with -O OpenFlow13.

// ONFVendorID is the Open Networking Foundation's experimenter id.
const ONFVendorID uint32 = 0x4f4e4600

// ONF experimenter message types (ONFT_*).
const (
	ONFTRoleStatus       uint32 = 1911
	ONFTBundleControl    uint32 = 2300
	ONFTBundleAddMessage uint32 = 2301
)

// Bundle control types (OFPBCT_*).
const (
	BundleOpenRequest    uint16 = 0
	BundleOpenReply      uint16 = 1
	BundleCloseRequest   uint16 = 2
	BundleCloseReply     uint16 = 3
	BundleCommitRequest  uint16 = 4
	BundleCommitReply    uint16 = 5
	BundleDiscardRequest uint16 = 6
	BundleDiscardReply   uint16 = 7
)

// Bundle flags (OFPBF_*).
const (
	BundleAtomic  uint16 = 1 << 0
	BundleOrdered uint16 = 1 << 1
)

// OFPET_BUNDLE_FAILED codes (OFPBFC_*). In OpenFlow 1.3 they travel as
// ONF experimenter errors numbered 2300 + code (see BundleError).
const (
	BundleFailedUnknown          uint16 = 0
	BundleFailedEPerm            uint16 = 1
	BundleFailedBadID            uint16 = 2
	BundleFailedBundleExist      uint16 = 3
	BundleFailedBundleClosed     uint16 = 4
	BundleFailedOutOfBundles     uint16 = 5
	BundleFailedBadType          uint16 = 6
	BundleFailedBadFlags         uint16 = 7
	BundleFailedMsgBadLen        uint16 = 8
	BundleFailedMsgBadXid        uint16 = 9
	BundleFailedMsgUnsup         uint16 = 10
	BundleFailedMsgConflict      uint16 = 11
	BundleFailedMsgTooMany       uint16 = 12
	BundleFailedMsgFailed        uint16 = 13
	BundleFailedTimeout          uint16 = 14
	BundleFailedBundleInProgress uint16 = 15
)

// NXBundleBadVersion is the Nicira experimenter error code OVS gives
// (OFPBFC_BAD_VERSION) when a bundled message's version differs from its
// envelope's, in 1.4 and 1.5.
const NXBundleBadVersion uint16 = 22

// BundleError is the *Error for OFPBFC code in version v: OFPET_BUNDLE_FAILED
// in 1.4+, the ONF experimenter error 2300+code in 1.3.
func BundleError(v uint8, code uint16, format string, args ...any) *Error {
	e := &Error{Version: v, Type: Err14TypeBundleFailed, Code: code, Err: ErrUnsupported,
		Detail: fmt.Sprintf(format, args...)}
	if v < Version14 {
		e.Type, e.Code, e.Experimenter = Err13TypeExperimenter, 2300+code, ONFVendorID
	}
	if code == BundleFailedMsgBadLen {
		e.Err = ErrBadLength
	}
	return e
}

// bundleHdrLen is ofp14_bundle_ctrl_msg: bundle id, type, flags.
const bundleHdrLen = 8

// BundleControl is OFPT_BUNDLE_CONTROL (1.4+) or ONFT_BUNDLE_CONTROL (1.3).
// Properties is the raw property list (aliasing the decoded message);
// this codec defines none.
type BundleControl struct {
	Envelope
	BundleID   uint32
	Type       uint16
	Flags      uint16
	Properties []byte
}

// BundleAdd is OFPT_BUNDLE_ADD_MESSAGE (1.4+) or ONFT_BUNDLE_ADD_MESSAGE
// (1.3). Message is the whole bundled message (header included) and
// aliases the decoded buffer; decoding checks its header only: the
// version, length and xid must agree with the envelope's. Decode it with
// Decode.
type BundleAdd struct {
	Envelope
	BundleID   uint32
	Flags      uint16
	Message    []byte
	Properties []byte
}

func decodeBundleControl(env Envelope, body []byte) (Msg, error) {
	if len(body) < bundleHdrLen {
		return nil, badLen(env.Version, "bundle control", len(body), bundleHdrLen)
	}
	m := &BundleControl{Envelope: env, BundleID: u32(body), Type: u16(body[4:]), Flags: u16(body[6:]),
		Properties: body[bundleHdrLen:]}
	if err := checkProps(env.Version, m.Properties, "bundle control"); err != nil {
		return nil, err
	}
	return m, nil
}

func decodeBundleAdd(env Envelope, body []byte) (Msg, error) {
	v := env.Version
	if len(body) < bundleHdrLen {
		return nil, badLen(v, "bundle add", len(body), bundleHdrLen)
	}
	m := &BundleAdd{Envelope: env, BundleID: u32(body), Flags: u16(body[6:])}
	inner := body[bundleHdrLen:]
	if len(inner) < HeaderLen {
		return nil, BundleError(v, BundleFailedMsgBadLen, "bundled message of %d bytes", len(inner))
	}
	if inner[0] != v {
		if v < Version14 {
			return nil, BundleError(v, BundleFailedMsgUnsup, "bundled message in version 0x%02x", inner[0])
		}
		return nil, &Error{Version: v, Type: Err13TypeExperimenter, Code: NXBundleBadVersion, Experimenter: NXVendorID,
			Err: ErrBadVersion, Detail: fmt.Sprintf("bundled message in version 0x%02x", inner[0])}
	}
	n := int(u16(inner[2:]))
	if n < HeaderLen || n > len(inner) {
		return nil, BundleError(v, BundleFailedMsgBadLen, "bundled message length %d in %d bytes", n, len(inner))
	}
	if u32(inner[4:]) != env.Xid {
		return nil, BundleError(v, BundleFailedMsgBadXid, "bundled message xid %#x in an add of xid %#x", u32(inner[4:]), env.Xid)
	}
	m.Message = inner[:n]
	if rest := inner[n:]; len(rest) > 0 {
		// Properties follow the message after padding to 8 bytes.
		pad := (bundleHdrLen + n + 7) &^ 7
		pad -= bundleHdrLen + n
		if pad > len(rest) {
			return nil, BundleError(v, BundleFailedMsgBadLen, "%d bytes after the bundled message", len(rest))
		}
		for _, c := range rest[:pad] {
			if c != 0 {
				return nil, BundleError(v, BundleFailedMsgBadLen, "%d bytes after the bundled message", len(rest))
			}
		}
		m.Properties = rest[pad:]
		if err := checkProps(v, m.Properties, "bundle add"); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// checkProps checks that b is a well-formed property list.
func checkProps(v uint8, b []byte, what string) error {
	pp := props{v: v, b: b, what: what}
	for {
		_, _, ok, err := pp.next()
		if err != nil || !ok {
			return err
		}
	}
}

// bundleBegin starts a bundle message: OFPT type t14 in 1.4+, the ONF
// experimenter message t13 in 1.3.
func bundleBegin(b []byte, e *Envelope, t14 uint8, t13 uint32) ([]byte, int, error) {
	if e.Version < Version13 || !SupportedVersion(e.Version) {
		return b, 0, fmt.Errorf("openflow: bundles need OpenFlow 1.3 or later: %w", ErrUnsupported)
	}
	if e.Version >= Version14 {
		b, start := begin(b, e.Version, t14, e.Xid)
		return b, start, nil
	}
	b, start := begin(b, e.Version, TypeVendor, e.Xid)
	return be32(be32(b, ONFVendorID), t13), start, nil
}

func (m *BundleControl) Append(b []byte) ([]byte, error) {
	b, start, err := bundleBegin(b, &m.Envelope, Type14BundleControl, ONFTBundleControl)
	if err != nil {
		return b, err
	}
	b = append(be16(be16(be32(b, m.BundleID), m.Type), m.Flags), m.Properties...)
	return finish(b, start)
}

func (m *BundleAdd) Append(b []byte) ([]byte, error) {
	b, start, err := bundleBegin(b, &m.Envelope, Type14BundleAddMessage, ONFTBundleAddMessage)
	if err != nil {
		return b, err
	}
	at := len(b)
	b = append(be16(be16(be32(b, m.BundleID), 0), m.Flags), m.Message...)
	if len(m.Properties) > 0 {
		b = append(pad8(b, at), m.Properties...)
	}
	return finish(b, start)
}
