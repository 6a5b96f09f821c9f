package ofproto

import (
	"fmt"
	"sync"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// The tun_metadata layout: where each mapped tun_metadata<n> lives in the
// OpenFlow form of a Key's tunnel metadata (flow.TunMetadata), for every
// bridge of the process at once: the fields are laid out in 4-byte
// chunks of flow.TunMetadataSpace, a field in one contiguous run. A field
// mapped on several bridges must have one length there; refs counts the
// bridges that map it.
var tunMD struct {
	mu     sync.Mutex
	refs   [flow.TunMetadataFields]int
	layout openflow.TunMDLayout
}

// tunMDLayoutChange moves the layout from a table's old maps (oldMaps,
// oldUsed) to its new ones, all or nothing: a new field gets space (or
// shares another bridge's mapping of the same length); a field no longer
// mapped frees its space when no bridge maps it.
func tunMDLayoutChange(oldMaps, newMaps *[tlvMaxFields]openflow.TLVMap, oldUsed, newUsed *[tlvMaxFields]bool) error {
	tunMD.mu.Lock()
	defer tunMD.mu.Unlock()
	refs, layout := tunMD.refs, tunMD.layout
	for i := range oldUsed {
		if oldUsed[i] && (!newUsed[i] || newMaps[i].Len != oldMaps[i].Len) {
			if refs[i]--; refs[i] == 0 {
				layout[i] = openflow.TunMDLoc{}
			}
		}
	}
	for i := range newUsed {
		if !newUsed[i] || oldUsed[i] && newMaps[i].Len == oldMaps[i].Len {
			continue
		}
		n := newMaps[i].Len
		if refs[i] > 0 {
			if layout[i].Len != n {
				return &tlvFailure{openflow.TLVTableFull, fmt.Sprintf(
					"tun_metadata%d is mapped with %d bytes on another bridge; govswitchd keeps one layout", i, layout[i].Len)}
			}
			refs[i]++
			continue
		}
		off, ok := tunMDFree(&layout, n)
		if !ok {
			return &tlvFailure{openflow.TLVTableFull, fmt.Sprintf(
				"no room for %d more bytes of tunnel metadata (govswitchd holds %d bytes in all)", n, flow.TunMetadataSpace)}
		}
		refs[i], layout[i] = 1, openflow.TunMDLoc{Off: off, Len: n}
	}
	tunMD.refs, tunMD.layout = refs, layout
	openflow.SetTunMDLayout(layout)
	return nil
}

// tunMDFree finds the first run of n free bytes (n a multiple of 4; 0
// needs none) in layout.
func tunMDFree(layout *openflow.TunMDLayout, n uint8) (uint8, bool) {
	if n == 0 {
		return 0, true // a zero-length option is only ever present or not
	}
	var busy [flow.TunMetadataSpace / 4]bool
	for _, l := range layout {
		for c := int(l.Off) / 4; c < int(l.Off+l.Len)/4; c++ {
			busy[c] = true
		}
	}
	need := int(n) / 4
	run := 0
	for c := range busy {
		if busy[c] {
			run = 0
			continue
		}
		if run++; run == need {
			return uint8(4 * (c - need + 1)), true
		}
	}
	return 0, false
}

// tunMDInUse reports whether a flow of the bridge matches tun_metadata<n>.
func (b *Bridge) tunMDInUse(n int) bool {
	v := b.Tables.View()
	for id := range NumTables {
		for r := range v.Table(uint8(id)).Rules(nil) {
			if r.Match.Mask.Tunnel.Metadata.Present&(1<<n) != 0 {
				return true
			}
		}
	}
	return false
}

// geneveOpt walks the option TLVs of b: class, type, data of the first
// one, and the rest; ok false when b is malformed.
func geneveOpt(b []byte) (class uint16, typ uint8, data, rest []byte, ok bool) {
	if len(b) < 4 {
		return 0, 0, nil, nil, false
	}
	n := 4 + 4*int(b[3]&0x1f)
	if n > len(b) {
		return 0, 0, nil, nil, false
	}
	return uint16(b[0])<<8 | uint16(b[1]), b[2], b[4:n], b[n:], true
}

// tunMDFromDatapath turns the tunnel metadata t of a packet from the
// datapath form (the Geneve TLVs) into the OpenFlow form through the
// bridge's TLV table, as OVS's tun_metadata_from_geneve_udpif: options the
// table does not map are left out. It fails (the packet is dropped) on
// malformed options, a mapped option of another length than its mapping,
// or an unmapped critical option (type bit 7). It does not allocate.
func (t *TLVTable) tunMDFromDatapath(tun *flow.Tunnel) bool {
	if tun.Flags&flow.TunnelUDPIF == 0 {
		return true
	}
	raw := tun.Metadata
	opts := raw.Opts[:min(raw.Present, flow.TunMetadataSpace)]
	tun.Flags &^= flow.TunnelUDPIF
	tun.Metadata = flow.TunMetadata{}
	var byOpt map[uint32]uint8
	if p := t.byOpt.Load(); p != nil {
		byOpt = *p
	}
	layout := openflow.CurrentTunMDLayout()
	for len(opts) > 0 {
		class, typ, data, rest, ok := geneveOpt(opts)
		if !ok {
			return false
		}
		opts = rest
		i, mapped := byOpt[uint32(class)<<8|uint32(typ)]
		if !mapped {
			if typ&0x80 != 0 {
				return false
			}
			continue
		}
		loc := layout[i]
		if int(loc.Len) != len(data) {
			return false
		}
		copy(tun.Metadata.Opts[loc.Off:], data)
		tun.Metadata.Present |= 1 << i
	}
	return true
}

// tunMDMaskToDatapath turns the OpenFlow-form tunnel metadata mask wc of
// a translation into the datapath form for the packet's tunnel key (in
// datapath form), as OVS's tun_metadata_to_geneve_mask__: every option's
// class, type and length exact, its data masked as its field was, or
// wildcarded when unmapped.
func (t *TLVTable) tunMDMaskToDatapath(key *flow.Tunnel, wc *flow.Tunnel) {
	opts := key.GeneveOpts()
	if opts == nil {
		wc.Metadata = flow.TunMetadata{}
		return
	}
	mapped := wc.Metadata
	wc.Metadata = flow.TunMetadata{Present: 0xff}
	wc.Flags |= flow.TunnelUDPIF // a masked key keeps its form
	var byOpt map[uint32]uint8
	if p := t.byOpt.Load(); p != nil {
		byOpt = *p
	}
	layout := openflow.CurrentTunMDLayout()
	at := 0
	for len(opts) > 0 {
		class, typ, data, rest, ok := geneveOpt(opts)
		if !ok {
			// Malformed (the translation dropped it): match it all.
			for i := at; i < len(key.GeneveOpts()); i++ {
				wc.Metadata.Opts[i] = 0xff
			}
			return
		}
		m := wc.Metadata.Opts[at:]
		m[0], m[1], m[2], m[3] = 0xff, 0xff, 0xff, 0x1f
		if i, ok := byOpt[uint32(class)<<8|uint32(typ)]; ok && int(layout[i].Len) == len(data) {
			copy(m[4:4+len(data)], mapped.Opts[layout[i].Off:])
		}
		at += 4 + len(data)
		opts = rest
	}
}

// tunMDToDatapath writes the OpenFlow-form metadata md as Geneve TLVs into
// the datapath-form out (for set(tunnel(...)) on a Geneve port), in field
// order, as OVS's tun_metadata_to_geneve__. Fields that no longer fit are
// left out.
func (t *TLVTable) tunMDToDatapath(md *flow.TunMetadata, out *flow.Tunnel) {
	if md.Present == 0 {
		return
	}
	t.mu.Lock()
	maps := t.maps
	t.mu.Unlock()
	layout := openflow.CurrentTunMDLayout()
	n := 0
	var o flow.TunMetadata
	for i := range flow.TunMetadataFields {
		if md.Present&(1<<i) == 0 || layout[i].Len == 0 {
			continue
		}
		loc := layout[i]
		if n+4+int(loc.Len) > flow.TunMetadataSpace {
			break
		}
		m := &maps[i]
		o.Opts[n], o.Opts[n+1], o.Opts[n+2], o.Opts[n+3] = byte(m.Class>>8), byte(m.Class), m.Type, loc.Len/4
		copy(o.Opts[n+4:], md.Opts[loc.Off:loc.Off+loc.Len])
		n += 4 + int(loc.Len)
	}
	if n > 0 {
		o.Present = uint64(n)
		out.Metadata = o
		out.Flags |= flow.TunnelUDPIF
	}
}

// pinTunMetadata adds the present tun_metadata fields of k to a
// packet-in's metadata m, and to the megaflow wc (the userdata carries
// them).
func pinTunMetadata(m *openflow.Match, k *flow.Key, wc *flow.Mask) {
	p := k.Tunnel.Metadata.Present
	if p == 0 || k.Tunnel.Flags&flow.TunnelUDPIF != 0 {
		return
	}
	for i := range flow.TunMetadataFields {
		if p&(1<<i) == 0 {
			continue
		}
		f := openflow.FieldTunMetadata0 + openflow.Field(i)
		m.Set(f, k)
		c := f.Cover()
		wc.Or(&c)
	}
}

// tunMDFromDatapath puts the packet's Geneve options into the OpenFlow
// form for the tables (see TLVTable.tunMDFromDatapath); false drops the
// packet.
func (c *xctx) tunMDFromDatapath() bool {
	b := c.x.bridge
	if b == nil {
		c.flow.Tunnel.Metadata, c.flow.Tunnel.Flags = flow.TunMetadata{}, c.flow.Tunnel.Flags&^flow.TunnelUDPIF
		return true
	}
	if !b.TLVs.tunMDFromDatapath(&c.flow.Tunnel) {
		c.out.Actions = c.out.Actions[:0]
		c.out.Dropped = "invalid geneve options"
		return false
	}
	return true
}

// tunMDMask turns the megaflow's tun_metadata mask into the datapath's
// form for key, the packet's tunnel key as the datapath gave it.
func (c *xctx) tunMDMask(key *flow.Key) {
	if b := c.x.bridge; b != nil {
		b.TLVs.tunMDMaskToDatapath(&key.Tunnel, &c.out.WC.Tunnel)
		return
	}
	var t TLVTable
	t.tunMDMaskToDatapath(&key.Tunnel, &c.out.WC.Tunnel)
}

// tunMDOutput gives the tunnel t of an output to a Geneve port the
// flow's tun_metadata fields as options; the fields join wc (the megaflow
// when they may have come from the packet).
func (c *xctx) tunMDOutput(t *flow.Tunnel, wc *flow.Mask) {
	md := &c.flow.Tunnel.Metadata
	if md.Present == 0 || c.x.bridge == nil {
		return
	}
	c.x.bridge.TLVs.tunMDToDatapath(md, t)
	for i := range flow.TunMetadataFields {
		if md.Present&(1<<i) != 0 {
			f := openflow.FieldTunMetadata0 + openflow.Field(i)
			cv := f.Cover()
			wc.Or(&cv)
		}
	}
}

// resumeTunMetadata gives a resumed packet's key the tun_metadata fields
// of its packet-in metadata md (OpenFlow form).
func resumeTunMetadata(key *flow.Key, md *openflow.Match) {
	p := md.Mask.Tunnel.Metadata.Present & md.Key.Tunnel.Metadata.Present
	if p == 0 {
		return
	}
	key.Tunnel.Metadata.Present = p
	for i := range key.Tunnel.Metadata.Opts {
		key.Tunnel.Metadata.Opts[i] = md.Key.Tunnel.Metadata.Opts[i] & md.Mask.Tunnel.Metadata.Opts[i]
	}
}

// deleteTunMD carries out delete_field:tun_metadata<n>: the field is no
// longer present, so a later output to a Geneve port sends no option for
// it and a later match sees it absent, as OVS's tun_metadata_delete. Metadata
// still in the datapath's form (no TLV table to read it with) is left as
// it is, as OVS leaves it.
func (c *xctx) deleteTunMD(f openflow.Field) {
	if !f.IsTunMetadata() || c.flow.Tunnel.Flags&flow.TunnelUDPIF != 0 {
		return
	}
	c.flow.Tunnel.Metadata.Present &^= 1 << (f - openflow.FieldTunMetadata0)
}
