package ofproto

import (
	"fmt"
	"slices"
	"sync"

	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TLVTable is a bridge's map from Geneve option TLVs to the
// NXM_NX_TUN_METADATA<n> fields (OVS's tun_metadata table), as
// NXT_TLV_TABLE_MOD leaves it. ovn-controller maps its option (class
// 0x0102, type 0x80) on every connection before it installs flows.
//
// The table is kept and reported; the fields themselves are not
// implemented yet: a flow that matches or sets tun_metadata<n> is refused
// by the flow mod decoder, so no flow ever uses a mapping and a delete is
// never refused with NXTTMFC_INVALID_TLV_DEL.
type TLVTable struct {
	mu   sync.Mutex
	maps [tlvMaxFields]openflow.TLVMap
	used [tlvMaxFields]bool
}

// ovs-vswitchd's limits: 64 fields, 256 bytes of option data in all, 124
// bytes per option.
const (
	tlvMaxFields = 64
	tlvMaxSpace  = 256
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
		space := 0
		for i := range next {
			if used[i] {
				space += int(next[i].Len)
			}
		}
		if space > tlvMaxSpace {
			return &tlvFailure{openflow.TLVTableFull, fmt.Sprintf("%d bytes of options, at most %d", space, tlvMaxSpace)}
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
	t.maps, t.used = next, used
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
	if err := c.m.b.TLVs.Apply(m.Command, m.Maps); err != nil {
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
