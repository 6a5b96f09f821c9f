package ofproto

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Port mirroring (the Mirror table), as ofproto-dpif-mirror and the
// translator's mirror_packet do it: a mirror selects packets by the ports
// they enter (SrcPorts) or leave by (DstPorts), or all of them, optionally
// only those of some VLANs, and sends a copy of each to one port
// (OutputPort) or floods it in a VLAN (OutputVLAN, remote SPAN). A packet
// goes to each mirror at most once however often it matches. A mirror
// output port takes no part in NORMAL switching: what arrives on it is
// dropped, and NORMAL neither floods nor forwards to it.

// maxMirrors is OVS's MAX_MIRRORS: a translation tracks mirrors in a
// 32-bit mask.
const maxMirrors = 32

// MirrorConfig is one mirror as the configuration asks for it. Ports are
// device names (a bond's members for a bond Port).
type MirrorConfig struct {
	Name      string
	SelectAll bool
	SrcPorts  []string
	DstPorts  []string
	// VLANs limits the mirror to packets of these VLANs (nil: all).
	VLANs []uint16
	// OutputPort is the port copies go to, or "" when OutputVLAN is set:
	// then copies are flooded in VLAN OutputVLAN.
	OutputPort string
	OutputVLAN uint16
	// Snaplen, when in 1..65534, cuts each copy to that many bytes with
	// the datapath's trunc action before its output, as ovs-vswitchd
	// does (the database allows 14..65535; 0 and 65535 copy whole).
	Snaplen int
}

// mirror is a MirrorConfig compiled against one port set.
type mirror struct {
	name string
	bit  uint32
	// dup is the bits of every mirror with the same output (port, or
	// VLAN) as this one, its own included: a packet sent to one of them
	// is not sent to the others (OVS's dup_mirrors).
	dup uint32
	// stats counts what the mirror was sent, as OVS's mirror
	// packet_count and byte_count: a counter noted among a translation's
	// rules whenever the translation mirrors to it, so each upcalled
	// packet and the datapath flow's packets at each revalidation credit
	// it (the stats of the packets mirrored, not of the copies' bytes).
	stats    *Rule
	all      bool
	src, dst map[uint32]bool // OpenFlow ports
	vlans    *VLANSet        // nil: any VLAN
	out      *Port           // nil: OutputVLAN
	outVLAN  uint16
	snaplen  uint32 // 0: whole packets
}

// mirrorSet is the bridge's mirrors for one PortSet.
type mirrorSet struct {
	list []mirror
	// outPorts are the mirror output ports, which NORMAL leaves alone.
	outPorts map[uint32]bool
}

// compileMirrors builds the mirrors of cfgs over the ports in list. A
// mirror naming a missing output port does nothing (as in OVS, where it
// has no output until the port exists); a missing selected port selects
// nothing.
func compileMirrors(cfgs []MirrorConfig, stats map[string]*Rule, list []*Port) *mirrorSet {
	if len(cfgs) == 0 {
		return nil
	}
	byName := make(map[string]*Port, len(list))
	for _, p := range list {
		byName[p.Name] = p
	}
	ms := &mirrorSet{outPorts: map[uint32]bool{}}
	for i, c := range cfgs {
		if i >= maxMirrors {
			break
		}
		m := mirror{name: c.Name, stats: stats[c.Name], bit: 1 << i, all: c.SelectAll, src: map[uint32]bool{}, dst: map[uint32]bool{}, outVLAN: c.OutputVLAN}
		if c.Snaplen > 0 && c.Snaplen < 0xffff {
			m.snaplen = uint32(c.Snaplen)
		}
		for _, n := range c.SrcPorts {
			if p := byName[n]; p != nil {
				m.src[p.OFPort] = true
			}
		}
		for _, n := range c.DstPorts {
			if p := byName[n]; p != nil {
				m.dst[p.OFPort] = true
			}
		}
		if len(c.VLANs) > 0 {
			m.vlans = new(VLANSet)
			for _, v := range c.VLANs {
				m.vlans.Add(v & 0xfff)
			}
		}
		if c.OutputPort != "" {
			m.out = byName[c.OutputPort]
			if m.out == nil {
				continue
			}
			ms.outPorts[m.out.OFPort] = true
		}
		ms.list = append(ms.list, m)
	}
	for i := range ms.list {
		for j := range ms.list {
			if a, b := &ms.list[i], &ms.list[j]; a.out == b.out && (a.out != nil || a.outVLAN == b.outVLAN) {
				a.dup |= b.bit
			}
		}
	}
	return ms
}

// CheckMirrors reports what is wrong with cfgs as a whole: more mirrors
// than OVS allows, a name used twice, a mirror with no output or two.
func CheckMirrors(cfgs []MirrorConfig) error {
	if len(cfgs) > maxMirrors {
		return fmt.Errorf("%d mirrors: at most %d are supported", len(cfgs), maxMirrors)
	}
	seen := map[string]bool{}
	for _, c := range cfgs {
		if seen[c.Name] {
			return fmt.Errorf("mirror %s: name used twice", c.Name)
		}
		seen[c.Name] = true
		if (c.OutputPort == "") == (c.OutputVLAN == 0) {
			return fmt.Errorf("mirror %s: needs exactly one of output_port and output_vlan", c.Name)
		}
	}
	return nil
}

// SetMirrors makes cfgs the bridge's mirrors (replacing all) and makes
// every translation stale.
func (b *Bridge) SetMirrors(cfgs []MirrorConfig) error {
	if err := CheckMirrors(cfgs); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	cp := make([]MirrorConfig, len(cfgs))
	copy(cp, cfgs)
	sort.Slice(cp, func(i, j int) bool { return cp[i].Name < cp[j].Name })
	b.Ports.setMirrors(cp)
	b.Tables.Invalidate()
	return nil
}

// Mirrors returns the bridge's mirror configuration, by name.
func (b *Bridge) Mirrors() []MirrorConfig {
	b.Ports.mu.Lock()
	defer b.Ports.mu.Unlock()
	return append([]MirrorConfig(nil), b.Ports.mirrorCfg...)
}

// mirrorSelects reports whether a mirror names port as a source or a
// destination, and not as its output.
func (p *Ports) mirrorSelects(port string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.mirrorCfg {
		if c.OutputPort != port && (slices.Contains(c.SrcPorts, port) || slices.Contains(c.DstPorts, port)) {
			return true
		}
	}
	return false
}

// String describes a mirror for logs.
func (c *MirrorConfig) String() string {
	var parts []string
	if c.SelectAll {
		parts = append(parts, "select_all")
	}
	if len(c.SrcPorts) > 0 {
		parts = append(parts, "src="+strings.Join(c.SrcPorts, ","))
	}
	if len(c.DstPorts) > 0 {
		parts = append(parts, "dst="+strings.Join(c.DstPorts, ","))
	}
	if len(c.VLANs) > 0 {
		parts = append(parts, fmt.Sprintf("vlans=%v", c.VLANs))
	}
	if c.OutputPort != "" {
		parts = append(parts, "output_port="+c.OutputPort)
	} else {
		parts = append(parts, fmt.Sprintf("output_vlan=%d", c.OutputVLAN))
	}
	if c.Snaplen != 0 {
		parts = append(parts, fmt.Sprintf("snaplen=%d", c.Snaplen))
	}
	return c.Name + " (" + strings.Join(parts, " ") + ")"
}

// setMirrors republishes the port set with cfgs as its mirrors.
func (p *Ports) setMirrors(cfgs []MirrorConfig) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mirrorCfg = cfgs
	// A mirror keeps its counts while it exists, whatever else changes
	// (as ovs-vswitchd's struct mirror); a mirror made afresh starts at 0.
	stats := make(map[string]*Rule, len(cfgs))
	for _, c := range cfgs {
		if r := p.mirrorStats[c.Name]; r != nil {
			stats[c.Name] = r
		} else {
			stats[c.Name] = newCounter() // group.go
		}
	}
	p.mirrorStats = stats
	p.store(append([]*Port(nil), p.cur.Load().list...))
}

// MirrorStats is a mirror's tx_packets and tx_bytes (Mirror statistics).
type MirrorStats struct {
	Packets, Bytes uint64
}

// MirrorStats returns the counts of the bridge's mirrors that run now, by
// name: those whose output exists. A mirror ovs-vswitchd could not set up
// has no statistics there either.
func (b *Bridge) MirrorStats() map[string]MirrorStats {
	ms := b.Ports.Snapshot().mirrors
	if ms == nil {
		return nil
	}
	out := make(map[string]MirrorStats, len(ms.list))
	for i := range ms.list {
		m := &ms.list[i]
		if m.stats == nil {
			continue
		}
		p, by := m.stats.Value.Stats()
		out[m.name] = MirrorStats{Packets: p, Bytes: by}
	}
	return out
}
