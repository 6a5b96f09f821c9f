package ofproto

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/govswitch/govswitch/flow"

	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TLVTable is a bridge's map from Geneve option TLVs to the
// NXM_NX_TUN_METADATA<n> fields (OVS's tun_metadata table), as
// NXT_TLV_TABLE_MOD leaves it. ovn-controller maps its option (class
// 0x0102, type 0x80) on every connection before it installs flows.
//
// Where a mapped field's bytes live in a Key is the process's one
// tun_metadata layout (tun_metadata.go), which every bridge's table
// shares: a field mapped on two bridges has one length.
type TLVTable struct {
	mu   sync.Mutex
	maps [tlvMaxFields]openflow.TLVMap
	used [tlvMaxFields]bool
	// byOpt finds a mapped option's field by (class<<8 | type); it is
	// replaced, never changed, so translations read it without the lock.
	byOpt atomic.Pointer[map[uint32]uint8]
}

// The limits: 64 fields and 124 bytes per option as in ovs-vswitchd; the
// option data of all fields in all bridges shares flow.TunMetadataSpace
// bytes (ovs-vswitchd: 256 per bridge).
const (
	tlvMaxFields = flow.TunMetadataFields
	tlvMaxSpace  = flow.TunMetadataSpace
	tlvMaxOptLen = 124
)

// tlvFailure is a refused TLV table mod, with its NXTTMFC_* code.
type tlvFailure struct {
	code uint16
	msg  string
}

func (e *tlvFailure) Error() string { return e.msg }

// Apply carries out one NXT_TLV_TABLE_MOD all or nothing, with OVS's
// checks: an index out of range, a length that is not a multiple of 4 (or
// over 124), an index already mapped, an option mapped twice, or more
// than 256 bytes of options in all fail the whole message.
func (t *TLVTable) Apply(cmd uint16, maps []openflow.TLVMap) error {
	return t.apply(cmd, maps, nil)
}

// apply is Apply with inUse, which reports whether a flow matches
// tun_metadata<n> (nil: none does): deleting such a field's mapping
// fails with NXTTMFC_INVALID_TLV_DEL.
func (t *TLVTable) apply(cmd uint16, maps []openflow.TLVMap, inUse func(n int) bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	next, used := t.maps, t.used
	switch cmd {
	case openflow.TLVTableAdd:
		for _, m := range maps {
			if m.Index >= tlvMaxFields {
				return &tlvFailure{openflow.TLVTableBadFieldIdx, fmt.Sprintf("tun_metadata%d: only 0 to %d", m.Index, tlvMaxFields-1)}
			}
			if m.Len%4 != 0 || m.Len > tlvMaxOptLen {
				return &tlvFailure{openflow.TLVTableBadOptLen, fmt.Sprintf("option length %d", m.Len)}
			}
			if used[m.Index] {
				return &tlvFailure{openflow.TLVTableAlreadyMapped, fmt.Sprintf("tun_metadata%d is mapped", m.Index)}
			}
			for i := range next {
				if used[i] && next[i].Class == m.Class && next[i].Type == m.Type {
					return &tlvFailure{openflow.TLVTableDupEntry,
						fmt.Sprintf("option class %#x type %#x is tun_metadata%d", m.Class, m.Type, i)}
				}
			}
			next[m.Index], used[m.Index] = m, true
		}
	case openflow.TLVTableDelete:
		for _, m := range maps {
			if m.Index >= tlvMaxFields {
				return &tlvFailure{openflow.TLVTableBadFieldIdx, fmt.Sprintf("tun_metadata%d: only 0 to %d", m.Index, tlvMaxFields-1)}
			}
			used[m.Index] = false
		}
	case openflow.TLVTableClear:
		used = [tlvMaxFields]bool{}
	default:
		return &tlvFailure{openflow.TLVTableBadCommand, fmt.Sprintf("TLV table command %d", cmd)}
	}
	for i := range used {
		if t.used[i] && !used[i] && inUse != nil && inUse(i) {
			return &tlvFailure{openflow.TLVTableInvalidDel, fmt.Sprintf("tun_metadata%d is matched by a flow", i)}
		}
	}
	if err := tunMDLayoutChange(&t.maps, &next, &t.used, &used); err != nil {
		return err
	}
	t.maps, t.used = next, used
	byOpt := map[uint32]uint8{}
	for i := range used {
		if used[i] {
			byOpt[uint32(next[i].Class)<<8|uint32(next[i].Type)] = uint8(i)
		}
	}
	t.byOpt.Store(&byOpt)
	return nil
}

// Maps returns the table's maps, by index.
func (t *TLVTable) Maps() []openflow.TLVMap {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []openflow.TLVMap
	for i := range t.maps {
		if t.used[i] {
			out = append(out, t.maps[i])
		}
	}
	return slices.Clip(out)
}

func (c *Conn) tlvTableMod(raw []byte, m *openflow.TLVTableMod) error {
	if slave, err := c.isSlave(raw); slave {
		return err
	}
	if err := c.m.b.TLVs.apply(m.Command, m.Maps, c.m.b.tunMDInUse); err != nil {
		c.log.Debug("TLV table mod failed", "err", err)
		code := err.(*tlvFailure).code
		return c.queueMsg(openflow.TLVTableError(c.Version(), code, err.Error()).Reply(raw))
	}
	return nil
}

func (c *Conn) tlvTableRequest(m *openflow.TLVTableRequest) error {
	return c.queueMsg(&openflow.TLVTableReply{Envelope: openflow.Envelope{Version: c.Version(), Xid: m.Xid},
		MaxOptionSpace: tlvMaxSpace, MaxFields: tlvMaxFields, Maps: c.m.b.TLVs.Maps()})
}
