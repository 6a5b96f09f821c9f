package openflow

import (
	"bytes"
	"fmt"
)

// Groups: OFPT_GROUP_MOD and the group stats, group description and group
// features multipart messages. OpenFlow 1.1-1.4 carry buckets as
// ofp11_bucket (weight, watch_port and watch_group fixed fields); 1.5 as
// ofp15_bucket with a bucket id and those three as properties, plus group
// properties, of which OVS knows one: Netronome's selection method. The
// structs below are the same in every version; bucket ids a 1.3 peer
// cannot send are numbered 0, 1, ... in order, as OVS numbers them.

// Group types (OFPGT_*).
const (
	GroupTypeAll      uint8 = 0
	GroupTypeSelect   uint8 = 1
	GroupTypeIndirect uint8 = 2
	GroupTypeFF       uint8 = 3
)

// Group mod commands (OFPGC_*); the bucket commands are OpenFlow 1.5's.
const (
	GroupAdd          uint16 = 0
	GroupModify       uint16 = 1
	GroupDelete       uint16 = 2
	GroupInsertBucket uint16 = 3
	GroupRemoveBucket uint16 = 5
	// GroupAddOrModify is OVS's extension (ovs-ofctl mod-group
	// --may-create): modify the group, adding it if it does not exist.
	GroupAddOrModify uint16 = 0x8000
)

// Group numbers (OFPG_*). GroupAny is in flowmod.go.
const (
	GroupMax uint32 = 0xffffff00 // the last number a group may have
	GroupAll uint32 = 0xfffffffc // every group, in deletes and requests
)

// Bucket ids of OpenFlow 1.5 (OFPG15_BUCKET_*).
const (
	BucketMax   uint32 = 0xffffff00
	BucketFirst uint32 = 0xfffffffd
	BucketLast  uint32 = 0xfffffffe
	BucketAll   uint32 = 0xffffffff
)

// Multipart types of groups and meters (OFPMP_*).
const (
	StatsGroup         uint16 = 6
	StatsGroupDesc     uint16 = 7
	StatsGroupFeatures uint16 = 8
	StatsMeter         uint16 = 9
	StatsMeterConfig   uint16 = 10
	StatsMeterFeatures uint16 = 11
)

// OFPET_GROUP_MOD_FAILED codes (OFPGMFC_*) beyond those in errors.go.
const (
	GroupModFailed13GroupExists   uint16 = 0
	GroupModFailed13WeightUnsup   uint16 = 2
	GroupModFailed13OutOfGroups   uint16 = 3
	GroupModFailed13OutOfBuckets  uint16 = 4
	GroupModFailed13ChainingUnsup uint16 = 5
	GroupModFailed13WatchUnsup    uint16 = 6
	GroupModFailed13Loop          uint16 = 7
	GroupModFailed13ChainedGroup  uint16 = 9
	GroupModFailed13BadBucket     uint16 = 12
	GroupModFailed13BadWatch      uint16 = 13
	GroupModFailed13EPerm         uint16 = 14
	GroupModFailed15UnknownBucket uint16 = 15
	GroupModFailed15BucketExists  uint16 = 16
)

// The selection method group property: an experimenter property of
// Netronome's (NTR_VENDOR_ID; OVS also accepts the older compat id).
const (
	NTRVendorID               uint32 = 0x0000154d
	NTRCompatVendorID         uint32 = 0xff00154d
	NTRSelectionMethod        uint32 = 1
	selectionMethodLen               = 16
	selectionPropLen                 = 40 // up to the fields
	bucket11Len                      = 16
	bucket15Len                      = 8
	groupMod11Len                    = 8
	groupMod15Len                    = 16
	groupDesc11Len                   = 8
	groupDesc15Len                   = 16
	groupStatsLen                    = 40
	bucketCounterLen                 = 16
	groupFeaturesLen                 = 40
	groupBucketPropWeight            = 0
	groupBucketPropWatchPort         = 1
	groupBucketPropWatchGroup        = 2
)

// Bucket is one bucket of a group.
type Bucket struct {
	// ID is the bucket id: from the wire in 1.5, 0, 1, ... otherwise.
	ID uint32
	// Weight matters in select groups only; 1.5 decodes a select bucket
	// without a weight property as 1, as OVS does.
	Weight     uint16
	WatchPort  uint32 // PortAny: none
	WatchGroup uint32 // GroupAny: none
	Actions    []Action
}

// Equal reports whether a and b are the same bucket.
func (a *Bucket) Equal(b *Bucket) bool {
	if a.ID != b.ID || a.Weight != b.Weight || a.WatchPort != b.WatchPort || a.WatchGroup != b.WatchGroup ||
		len(a.Actions) != len(b.Actions) {
		return false
	}
	for i := range a.Actions {
		if !a.Actions[i].Equal(b.Actions[i]) {
			return false
		}
	}
	return true
}

// Selection is the selection method property of a select group (1.5):
// Method "" when the group has none (OVS's default hash), "hash" or
// "dp_hash". Fields are the fields "hash" hashes, each under a mask; on
// the wire OVS sends each as an unmasked OXM (NXM in 1.0) entry whose
// value is the mask, and so does this codec.
type Selection struct {
	Method string
	Param  uint64
	Fields []SelectionField
}

// SelectionField is one field a "hash" selection method hashes, with the
// bits of it that count.
type SelectionField struct {
	Field Field
	Mask  [16]byte // the first Field.Size() bytes
}

// decodeSelectionFields reads an OXM/NXM field array: an unmasked entry's
// value is its mask; a masked entry's mask is its mask.
func decodeSelectionFields(b []byte) ([]SelectionField, error) {
	var out []SelectionField
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, fmt.Errorf("openflow: selection fields: %d bytes left over", len(b))
		}
		h := u32(b)
		n := int(h & 0xff)
		if len(b) < 4+n {
			return nil, fmt.Errorf("openflow: selection field %#08x of %d bytes in %d", h, n, len(b)-4)
		}
		f := FieldByHeader(h)
		size := f.Size()
		masked := h&0x100 != 0
		if f == FieldNone || masked && n != 2*size || !masked && n != size {
			return nil, fmt.Errorf("openflow: selection field %#08x is not one this switch hashes", h)
		}
		if _, ok := f.Header(false); !ok {
			return nil, fmt.Errorf("openflow: selection field %s has no OXM form", f)
		}
		if _, ok := f.Header(true); !ok {
			return nil, fmt.Errorf("openflow: selection field %s has no NXM form", f)
		}
		sf := SelectionField{Field: f}
		if masked {
			copy(sf.Mask[:], b[4+size:4+n])
		} else {
			copy(sf.Mask[:], b[4:4+n])
		}
		for _, o := range out {
			if o.Field == f {
				return nil, fmt.Errorf("openflow: selection field %s twice", f)
			}
		}
		out = append(out, sf)
		b = b[4+n:]
	}
	return out, nil
}

func appendSelectionFields(b []byte, v uint8, fs []SelectionField) []byte {
	for _, sf := range fs {
		h, _ := sf.Field.Header(v == Version10)
		n := sf.Field.Size()
		b = append(be32(b, h&^0x1ff|uint32(n)), sf.Mask[:n]...)
	}
	return b
}

// GroupMod is OFPT_GROUP_MOD (and NXT_GROUP_MOD, OVS's OpenFlow 1.0
// extension, which carries the 1.5 body).
type GroupMod struct {
	Envelope
	Command uint16
	Type    uint8
	GroupID uint32
	// CommandBucketID is 1.5's: where insert_bucket inserts, which bucket
	// remove_bucket removes; BucketAll for the other commands.
	CommandBucketID uint32
	Buckets         []Bucket
	Selection       Selection
}

// NXTGroupMod is the Nicira subtype of NXT_GROUP_MOD.
const NXTGroupMod uint32 = 31

func groupErr(v uint8, code uint16, format string, args ...any) *Error {
	t := Err13TypeGroupModFailed
	return &Error{Version: v, Type: t, Code: code, Err: ErrUnsupported, Detail: fmt.Sprintf(format, args...)}
}

// decodeActionsV decodes an action list in the action encoding of v.
func decodeActionsV(v uint8, b []byte) ([]Action, error) {
	if v == Version10 {
		return DecodeActions10(nil, b)
	}
	acts, err := decodeActions13(nil, v, b)
	if e, ok := err.(*Error); ok && e.Version != v {
		c := *e
		c.Version = v
		return acts, &c
	}
	return acts, err
}

func appendActionsV(v uint8, b []byte, acts []Action) ([]byte, error) {
	if v == Version10 {
		return AppendActions10(b, acts)
	}
	return appendActions13(b, v, acts)
}

// bodyVersion is the wire form of the group bodies in v: OVS's 1.0
// extensions use 1.5's.
func bodyIs15(v uint8) bool { return v == Version10 || v >= Version15 }

func decodeBuckets11(v uint8, b []byte) ([]Bucket, error) {
	var out []Bucket
	for id := uint32(0); len(b) > 0; id++ {
		if len(b) < bucket11Len {
			return nil, groupErr(v, GroupModFailed13BadBucket, "buckets end with %d leftover bytes", len(b))
		}
		n := int(u16(b))
		if n < bucket11Len || n > len(b) {
			return nil, groupErr(v, GroupModFailed13BadBucket, "bucket length %d in %d bytes", n, len(b))
		}
		acts, err := decodeActionsV(v, b[bucket11Len:n])
		if err != nil {
			return nil, err
		}
		wp := u32(b[4:])
		if wp >= PortMax && wp != PortAny && wp != PortInPort && wp != PortLocal && wp != PortController {
			return nil, groupErr(v, GroupModFailed13BadWatch, "watch_port %#x", wp)
		}
		out = append(out, Bucket{ID: id, Weight: u16(b[2:]), WatchPort: wp, WatchGroup: u32(b[8:]), Actions: acts})
		b = b[n:]
	}
	return out, nil
}

func decodeBuckets15(v uint8, b []byte, typ uint8) ([]Bucket, error) {
	var out []Bucket
	for len(b) > 0 {
		if len(b) < bucket15Len {
			return nil, groupErr(v, GroupModFailed13BadBucket, "buckets end with %d leftover bytes", len(b))
		}
		n, an := int(u16(b)), int(u16(b[2:]))
		if n < bucket15Len || n > len(b) || an > n-bucket15Len {
			return nil, groupErr(v, GroupModFailed13BadBucket, "bucket length %d (actions %d) in %d bytes", n, an, len(b))
		}
		bk := Bucket{ID: u32(b[4:]), WatchPort: PortAny, WatchGroup: GroupAny}
		if typ == GroupTypeSelect {
			bk.Weight = 1
		}
		acts, err := decodeActionsV(v, b[bucket15Len:bucket15Len+an])
		if err != nil {
			return nil, err
		}
		bk.Actions = acts
		p := props{v: v, b: b[bucket15Len+an : n], what: "group bucket"}
		for {
			pt, body, ok, err := p.next()
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			switch {
			case pt == groupBucketPropWeight && len(body) == 4:
				bk.Weight = u16(body)
			case pt == groupBucketPropWatchPort && len(body) == 4:
				bk.WatchPort = u32(body)
			case pt == groupBucketPropWatchGroup && len(body) == 4:
				bk.WatchGroup = u32(body)
			case pt <= groupBucketPropWatchGroup:
				return nil, propErr(v, BadProperty14BadLen, "group bucket property %d of %d bytes", pt, len(body)+4)
			default:
				return nil, propErr(v, BadProperty14BadType, "group bucket property %d", pt)
			}
		}
		if wp := bk.WatchPort; wp >= PortMax && wp != PortAny && wp != PortInPort && wp != PortLocal && wp != PortController {
			return nil, groupErr(v, GroupModFailed13BadWatch, "watch_port %#x", wp)
		}
		if bk.ID > BucketMax {
			return nil, groupErr(v, GroupModFailed13BadBucket, "bucket id %#x out of range", bk.ID)
		}
		for i := range out {
			if out[i].ID == bk.ID {
				return nil, groupErr(v, GroupModFailed13BadBucket, "duplicate bucket id %d", bk.ID)
			}
		}
		out = append(out, bk)
		b = b[n:]
	}
	return out, nil
}

// decodeGroupProps reads 1.5 group properties: the selection method, the
// one OVS knows.
func decodeGroupProps(v uint8, b []byte, typ uint8, cmd uint16, s *Selection) error {
	p := props{v: v, b: b, what: "group"}
	for {
		pt, body, ok, err := p.next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if pt != 0xffff || len(body) < 8 {
			return propErr(v, BadProperty14BadType, "group property %d", pt)
		}
		if exp := u32(body); exp != NTRVendorID && exp != NTRCompatVendorID || u32(body[4:]) != NTRSelectionMethod {
			return propErr(v, BadProperty14BadType, "group property of experimenter %#08x type %d", exp, u32(body[4:]))
		}
		if typ != GroupTypeSelect {
			return propErr(v, BadProperty14BadValue, "a selection method is for select groups only")
		}
		if cmd != GroupAdd && cmd != GroupModify && cmd != GroupAddOrModify {
			return propErr(v, BadProperty14BadValue, "a selection method is for group add and modify only")
		}
		if len(body) < selectionPropLen-4 {
			return propErr(v, BadProperty14BadLen, "selection method property of %d bytes", len(body)+4)
		}
		name := body[12 : 12+selectionMethodLen]
		end := bytes.IndexByte(name, 0)
		if end < 0 {
			return propErr(v, BadProperty14BadValue, "selection method not NUL-terminated")
		}
		s.Method = string(name[:end])
		if s.Method != "hash" && s.Method != "dp_hash" {
			return propErr(v, BadProperty14BadValue, "selection method %q is not supported", s.Method)
		}
		s.Param = u64(body[12+selectionMethodLen:])
		raw := body[selectionPropLen-4:]
		if len(raw) > 0 && s.Method != "hash" {
			return propErr(v, BadProperty14BadValue, "selection method %s takes no fields", s.Method)
		}
		fs, err := decodeSelectionFields(raw)
		if err != nil {
			return propErr(v, BadProperty14BadValue, "%v", err)
		}
		s.Fields = fs
	}
}

// hasLiveness reports whether a bucket watches a port or a group.
func (b *Bucket) hasLiveness() bool { return b.WatchPort != PortAny || b.WatchGroup != GroupAny }

// checkGroupMod is ofputil_check_group_mod: the type, command and bucket
// checks OVS makes on every group mod it decodes.
func checkGroupMod(m *GroupMod) error {
	v := m.Version
	switch m.Type {
	case GroupTypeIndirect:
		if m.Command != GroupDelete && len(m.Buckets) != 1 {
			return groupErr(v, GroupModFailed13InvalidGroup, "an indirect group has exactly one bucket, not %d", len(m.Buckets))
		}
	case GroupTypeAll, GroupTypeSelect, GroupTypeFF:
	default:
		return groupErr(v, GroupModFailed13BadType, "group type %d", m.Type)
	}
	switch m.Command {
	case GroupAdd, GroupModify, GroupAddOrModify, GroupDelete, GroupInsertBucket:
	case GroupRemoveBucket:
		if len(m.Buckets) != 0 {
			return groupErr(v, GroupModFailed13BadBucket, "remove_bucket with buckets")
		}
	default:
		return groupErr(v, GroupModFailed13BadCommand, "group command %d", m.Command)
	}
	for i := range m.Buckets {
		bk := &m.Buckets[i]
		if bk.Weight != 0 && m.Type != GroupTypeSelect && m.Command != GroupInsertBucket {
			return groupErr(v, GroupModFailed13InvalidGroup, "weight in a group of type %d", m.Type)
		}
		switch m.Type {
		case GroupTypeAll, GroupTypeIndirect:
			if bk.hasLiveness() {
				return groupErr(v, GroupModFailed13WatchUnsup, "watch in a group of type %d", m.Type)
			}
		case GroupTypeFF:
			if !bk.hasLiveness() {
				return groupErr(v, GroupModFailed13InvalidGroup, "fast failover bucket %d watches nothing", i)
			}
		}
	}
	return nil
}

func decodeGroupMod(env Envelope, body []byte) (Msg, error) {
	v := env.Version
	m := &GroupMod{Envelope: env, CommandBucketID: BucketAll}
	if !bodyIs15(v) {
		if len(body) < groupMod11Len {
			return nil, badLen(v, "group mod", len(body), groupMod11Len)
		}
		m.Command, m.Type, m.GroupID = u16(body), body[2], u32(body[4:])
		bks, err := decodeBuckets11(v, body[groupMod11Len:])
		if err != nil {
			return nil, err
		}
		m.Buckets = bks
		if m.Command == GroupDelete && len(bks) > 0 {
			return nil, groupErr(v, GroupModFailed13InvalidGroup, "group delete with buckets")
		}
	} else {
		if len(body) < groupMod15Len {
			return nil, badLen(v, "group mod", len(body), groupMod15Len)
		}
		m.Command, m.Type, m.GroupID = u16(body), body[2], u32(body[4:])
		m.CommandBucketID = u32(body[12:])
		ok := false
		switch m.Command {
		case GroupRemoveBucket:
			ok = m.CommandBucketID == BucketAll
			fallthrough
		case GroupInsertBucket:
			ok = ok || m.CommandBucketID <= BucketMax || m.CommandBucketID == BucketFirst || m.CommandBucketID == BucketLast
		default:
			ok = m.CommandBucketID == BucketAll
		}
		if !ok {
			return nil, groupErr(v, GroupModFailed13BadBucket, "command bucket id %#x", m.CommandBucketID)
		}
		bl := int(u16(body[8:]))
		rest := body[groupMod15Len:]
		if bl > len(rest) {
			return nil, badLen(v, "group mod buckets", len(rest), bl)
		}
		bks, err := decodeBuckets15(v, rest[:bl], m.Type)
		if err != nil {
			return nil, err
		}
		m.Buckets = bks
		if err := decodeGroupProps(v, rest[bl:], m.Type, m.Command, &m.Selection); err != nil {
			return nil, err
		}
	}
	if err := checkGroupMod(m); err != nil {
		return nil, err
	}
	return m, nil
}

func appendBucket11(b []byte, v uint8, bk *Bucket) ([]byte, error) {
	at := len(b)
	b = zeros(be32(be32(be16(be16(b, 0), bk.Weight), bk.WatchPort), bk.WatchGroup), 4)
	b, err := appendActionsV(v, b, bk.Actions)
	if err != nil {
		return b[:at], err
	}
	n := len(b) - at
	if n > 0xffff {
		return b[:at], fmt.Errorf("openflow: bucket of %d bytes: %w", n, ErrTooLong)
	}
	b[at], b[at+1] = byte(n>>8), byte(n)
	return b, nil
}

func appendBucket15(b []byte, v uint8, typ uint8, bk *Bucket) ([]byte, error) {
	at := len(b)
	b = be32(zeros(b, 4), bk.ID)
	b, err := appendActionsV(v, b, bk.Actions)
	if err != nil {
		return b[:at], err
	}
	an := len(b) - at - bucket15Len
	if typ == GroupTypeSelect {
		b = zeros(be16(be16(be16(b, groupBucketPropWeight), 8), bk.Weight), 2)
	}
	if bk.WatchPort != PortAny {
		b = be32(be16(be16(b, groupBucketPropWatchPort), 8), bk.WatchPort)
	}
	if bk.WatchGroup != GroupAny {
		b = be32(be16(be16(b, groupBucketPropWatchGroup), 8), bk.WatchGroup)
	}
	n := len(b) - at
	if n > 0xffff || an > 0xffff {
		return b[:at], fmt.Errorf("openflow: bucket of %d bytes: %w", n, ErrTooLong)
	}
	b[at], b[at+1], b[at+2], b[at+3] = byte(n>>8), byte(n), byte(an>>8), byte(an)
	return b, nil
}

// appendBuckets appends bks in v's bucket form and returns the length of
// the bucket list.
func appendBuckets(b []byte, v uint8, typ uint8, bks []Bucket) ([]byte, int, error) {
	at := len(b)
	var err error
	for i := range bks {
		if bodyIs15(v) {
			b, err = appendBucket15(b, v, typ, &bks[i])
		} else {
			b, err = appendBucket11(b, v, &bks[i])
		}
		if err != nil {
			return b[:at], 0, err
		}
	}
	return b, len(b) - at, nil
}

// appendSelection appends the selection method property, none for the
// default method.
func appendSelection(b []byte, v uint8, s *Selection) []byte {
	if s.Method == "" {
		return b
	}
	at := len(b)
	b = be32(be32(be16(be16(b, 0xffff), 0), NTRVendorID), NTRSelectionMethod)
	b = zeros(b, 4)
	b = appendCString(b, s.Method, selectionMethodLen)
	b = be64(b, s.Param)
	b = appendSelectionFields(b, v, s.Fields)
	n := len(b) - at
	b[at+2], b[at+3] = byte(n>>8), byte(n)
	return zeros(b, (8-n%8)%8)
}

func (m *GroupMod) Append(b []byte) ([]byte, error) {
	v := m.Version
	if err := checkVersion(v); err != nil {
		return b, err
	}
	var start int
	if v == Version10 {
		var err error
		if b, start, err = appendNXHeader(b, &m.Envelope, NXTGroupMod); err != nil {
			return b, err
		}
	} else {
		b, start = begin(b, v, Type13GroupMod, m.Xid)
	}
	b = be32(append(be16(b, m.Command), m.Type, 0), m.GroupID)
	if !bodyIs15(v) {
		b, _, err := appendBuckets(b, v, m.Type, m.Buckets)
		if err != nil {
			return b[:start], err
		}
		return finish(b, start)
	}
	lenAt := len(b)
	b = be32(be16(be16(b, 0), 0), m.CommandBucketID)
	b, n, err := appendBuckets(b, v, m.Type, m.Buckets)
	if err != nil {
		return b[:start], err
	}
	b[lenAt], b[lenAt+1] = byte(n>>8), byte(n)
	b = appendSelection(b, v, &m.Selection)
	return finish(b, start)
}

// GroupStatsRequest asks for the counters of GroupID (GroupAll: every
// group).
type GroupStatsRequest struct {
	Envelope
	Flags   uint16
	GroupID uint32
}

// BucketCounter is one bucket's counters.
type BucketCounter struct {
	PacketCount uint64
	ByteCount   uint64
}

// GroupStats is one group's counters.
type GroupStats struct {
	GroupID      uint32
	RefCount     uint32
	PacketCount  uint64
	ByteCount    uint64
	DurationSec  uint32
	DurationNsec uint32
	Buckets      []BucketCounter
}

// GroupStatsReply answers a GroupStatsRequest.
type GroupStatsReply struct {
	Envelope
	Flags uint16
	Stats []GroupStats
}

// GroupDescRequest asks for group descriptions: in 1.5 (and OVS's 1.0
// extension) of GroupID, else of every group (GroupID GroupAll).
type GroupDescRequest struct {
	Envelope
	Flags   uint16
	GroupID uint32
}

// GroupDesc describes one group.
type GroupDesc struct {
	Type      uint8
	GroupID   uint32
	Buckets   []Bucket
	Selection Selection
}

// GroupDescReply answers a GroupDescRequest.
type GroupDescReply struct {
	Envelope
	Flags  uint16
	Groups []GroupDesc
}

// GroupFeaturesRequest asks for the group features.
type GroupFeaturesRequest struct {
	Envelope
	Flags uint16
}

// Group capabilities (OFPGFC_*).
const (
	GroupCapSelectWeight   uint32 = 1 << 0
	GroupCapSelectLiveness uint32 = 1 << 1
	GroupCapChaining       uint32 = 1 << 2
	GroupCapChainingChecks uint32 = 1 << 3
)

// GroupFeaturesReply describes what groups the switch has.
type GroupFeaturesReply struct {
	Envelope
	Flags        uint16
	Types        uint32 // bitmap of 1 << GroupType*
	Capabilities uint32
	MaxGroups    [4]uint32 // by group type
	Actions      [4]uint32 // bitmap of 1 << OFPAT_* per group type
}

// Nicira stats subtypes of OVS's 1.0 group extension.
const (
	NXSTGroup         uint32 = 7
	NXSTGroupDesc     uint32 = 8
	NXSTGroupFeatures uint32 = 9
)

// decodeGroupStats decodes the group multipart messages; ok is false for
// another type.
func decodeGroupStats(env Envelope, typ, flags uint16, b []byte, reply bool) (Msg, bool, error) {
	v := env.Version
	exact := func(n int, what string) error {
		if len(b) != n {
			return badLen(v, what, len(b), n)
		}
		return nil
	}
	switch typ {
	case StatsGroup:
		if !reply {
			if err := exact(8, "group stats request"); err != nil {
				return nil, true, err
			}
			return &GroupStatsRequest{Envelope: env, Flags: flags, GroupID: u32(b)}, true, nil
		}
		m, err := decodeGroupStatsReply(env, flags, b)
		return m, true, err
	case StatsGroupDesc:
		if !reply {
			if bodyIs15(v) {
				if err := exact(8, "group desc request"); err != nil {
					return nil, true, err
				}
				return &GroupDescRequest{Envelope: env, Flags: flags, GroupID: u32(b)}, true, nil
			}
			if err := exact(0, "group desc request"); err != nil {
				return nil, true, err
			}
			return &GroupDescRequest{Envelope: env, Flags: flags, GroupID: GroupAll}, true, nil
		}
		m, err := decodeGroupDescReply(env, flags, b)
		return m, true, err
	case StatsGroupFeatures:
		if !reply {
			if err := exact(0, "group features request"); err != nil {
				return nil, true, err
			}
			return &GroupFeaturesRequest{Envelope: env, Flags: flags}, true, nil
		}
		if err := exact(groupFeaturesLen, "group features reply"); err != nil {
			return nil, true, err
		}
		r := &GroupFeaturesReply{Envelope: env, Flags: flags, Types: u32(b), Capabilities: u32(b[4:])}
		for i := 0; i < 4; i++ {
			r.MaxGroups[i], r.Actions[i] = u32(b[8+4*i:]), u32(b[24+4*i:])
		}
		return r, true, nil
	}
	return nil, false, nil
}

// nxGroupStatsType maps an NXST group subtype to its multipart type.
func nxGroupStatsType(sub uint32) (uint16, bool) {
	switch sub {
	case NXSTGroup:
		return StatsGroup, true
	case NXSTGroupDesc:
		return StatsGroupDesc, true
	case NXSTGroupFeatures:
		return StatsGroupFeatures, true
	}
	return 0, false
}

func decodeGroupStatsReply(env Envelope, flags uint16, b []byte) (Msg, error) {
	v := env.Version
	r := &GroupStatsReply{Envelope: env, Flags: flags}
	for len(b) > 0 {
		if len(b) < groupStatsLen {
			return nil, badLen(v, "group stats entry", len(b), groupStatsLen)
		}
		n := int(u16(b))
		if n < groupStatsLen || n > len(b) || (n-groupStatsLen)%bucketCounterLen != 0 {
			return nil, errOf(v, kBadLen, "group stats entry length %d in %d bytes", n, len(b))
		}
		s := GroupStats{GroupID: u32(b[4:]), RefCount: u32(b[8:]), PacketCount: u64(b[16:]), ByteCount: u64(b[24:]),
			DurationSec: u32(b[32:]), DurationNsec: u32(b[36:])}
		for c := b[groupStatsLen:n]; len(c) > 0; c = c[bucketCounterLen:] {
			s.Buckets = append(s.Buckets, BucketCounter{PacketCount: u64(c), ByteCount: u64(c[8:])})
		}
		r.Stats = append(r.Stats, s)
		b = b[n:]
	}
	return r, nil
}

func decodeGroupDescReply(env Envelope, flags uint16, b []byte) (Msg, error) {
	v := env.Version
	r := &GroupDescReply{Envelope: env, Flags: flags}
	hl := groupDesc11Len
	if bodyIs15(v) {
		hl = groupDesc15Len
	}
	for len(b) > 0 {
		if len(b) < hl {
			return nil, badLen(v, "group desc entry", len(b), hl)
		}
		n := int(u16(b))
		if n < hl || n > len(b) {
			return nil, errOf(v, kBadLen, "group desc entry length %d in %d bytes", n, len(b))
		}
		d := GroupDesc{Type: b[2], GroupID: u32(b[4:])}
		var err error
		if bodyIs15(v) {
			bl := int(u16(b[8:]))
			if bl > n-hl {
				return nil, errOf(v, kBadLen, "group desc buckets of %d bytes in %d", bl, n-hl)
			}
			if d.Buckets, err = decodeBuckets15(v, b[hl:hl+bl], d.Type); err != nil {
				return nil, err
			}
			if err = decodeGroupProps(v, b[hl+bl:n], d.Type, GroupAdd, &d.Selection); err != nil {
				return nil, err
			}
		} else if d.Buckets, err = decodeBuckets11(v, b[hl:n]); err != nil {
			return nil, err
		}
		r.Groups = append(r.Groups, d)
		b = b[n:]
	}
	return r, nil
}

func groupStatsHeader(b []byte, e *Envelope, reply bool, typ, flags uint16) ([]byte, int, error) {
	if e.Version == Version10 {
		var sub uint32
		switch typ {
		case StatsGroup:
			sub = NXSTGroup
		case StatsGroupDesc:
			sub = NXSTGroupDesc
		case StatsGroupFeatures:
			sub = NXSTGroupFeatures
		default:
			return b, 0, fmt.Errorf("openflow: multipart type %d in OpenFlow 1.0: %w", typ, ErrBadVersion)
		}
		return statsHeader(b, e, reply, typ, flags, true, sub)
	}
	return statsHeader(b, e, reply, typ, flags, false, 0)
}

func (m *GroupStatsRequest) Append(b []byte) ([]byte, error) {
	b, start, err := groupStatsHeader(b, &m.Envelope, false, StatsGroup, m.Flags)
	if err != nil {
		return b, err
	}
	return finish(zeros(be32(b, m.GroupID), 4), start)
}

func (m *GroupDescRequest) Append(b []byte) ([]byte, error) {
	b, start, err := groupStatsHeader(b, &m.Envelope, false, StatsGroupDesc, m.Flags)
	if err != nil {
		return b, err
	}
	if bodyIs15(m.Version) {
		b = zeros(be32(b, m.GroupID), 4)
	}
	return finish(b, start)
}

func (m *GroupFeaturesRequest) Append(b []byte) ([]byte, error) {
	b, start, err := groupStatsHeader(b, &m.Envelope, false, StatsGroupFeatures, m.Flags)
	if err != nil {
		return b, err
	}
	return finish(b, start)
}

func (m *GroupFeaturesReply) Append(b []byte) ([]byte, error) {
	b, start, err := groupStatsHeader(b, &m.Envelope, true, StatsGroupFeatures, m.Flags)
	if err != nil {
		return b, err
	}
	b = be32(be32(b, m.Types), m.Capabilities)
	for _, x := range m.MaxGroups {
		b = be32(b, x)
	}
	for _, x := range m.Actions {
		b = be32(b, x)
	}
	return finish(b, start)
}

// appendGroupReply is appendReply for the group replies, whose 1.0 form
// is a Nicira stats reply.
func appendGroupReply(b []byte, r replyBody) ([]byte, error) {
	if r.env.Version == Version10 {
		r.nx = true
		switch r.typ {
		case StatsGroup:
			r.sub = NXSTGroup
		case StatsGroupDesc:
			r.sub = NXSTGroupDesc
		}
	}
	return appendReply(b, r, 0, false)
}

func (m *GroupStatsReply) Append(b []byte) ([]byte, error) {
	return appendGroupReply(b, replyBody{env: &m.Envelope, typ: StatsGroup, flags: m.Flags, n: len(m.Stats),
		entry: func(b []byte, i int) ([]byte, error) {
			s := &m.Stats[i]
			n := groupStatsLen + bucketCounterLen*len(s.Buckets)
			if n > 0xffff {
				return b, fmt.Errorf("openflow: group %d stats of %d bytes: %w", s.GroupID, n, ErrTooLong)
			}
			b = be32(be32(zeros(be16(b, uint16(n)), 2), s.GroupID), s.RefCount)
			b = be64(be64(zeros(b, 4), s.PacketCount), s.ByteCount)
			b = be32(be32(b, s.DurationSec), s.DurationNsec)
			for _, c := range s.Buckets {
				b = be64(be64(b, c.PacketCount), c.ByteCount)
			}
			return b, nil
		}})
}

func (m *GroupDescReply) Append(b []byte) ([]byte, error) {
	v := m.Version
	return appendGroupReply(b, replyBody{env: &m.Envelope, typ: StatsGroupDesc, flags: m.Flags, n: len(m.Groups),
		entry: func(b []byte, i int) ([]byte, error) {
			d := &m.Groups[i]
			at := len(b)
			b = be32(append(be16(b, 0), d.Type, 0), d.GroupID)
			if bodyIs15(v) {
				b = zeros(b, 8)
			}
			b, bl, err := appendBuckets(b, v, d.Type, d.Buckets)
			if err != nil {
				return b[:at], err
			}
			if bodyIs15(v) {
				b[at+8], b[at+9] = byte(bl>>8), byte(bl)
				b = appendSelection(b, v, &d.Selection)
			}
			n := len(b) - at
			if n > 0xffff {
				return b[:at], fmt.Errorf("openflow: group %d description of %d bytes: %w", d.GroupID, n, ErrTooLong)
			}
			b[at], b[at+1] = byte(n>>8), byte(n)
			return b, nil
		}})
}
