package ofproto

import (
	"fmt"
	"hash/fnv"
)

// AddPatchPort adds a patch port called name whose peer is the patch
// port called peer (of another bridge on the same datapath), as OpenFlow
// port ofport (or the next free number when 0), with VLAN configuration
// v. A patch port has no datapath port: a packet output to it continues
// its translation in the peer's bridge (see xlate_patch.go). A peer that
// does not exist (yet), or whose own peer is not name, leaves the port
// unconnected: output to it drops, as in ovs-vswitchd; adding the peer
// later connects the two.
func (b *Bridge) AddPatchPort(name, peer string, ofport uint32, v PortVLAN) (Port, error) {
	if peer == "" {
		return Port{}, fmt.Errorf("%s: patch type requires valid 'peer' argument", name)
	}
	if peer == name {
		return Port{}, fmt.Errorf("%s: patch peer must not be self", name)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Ports.byName(name) != nil {
		return Port{}, fmt.Errorf("port %s already exists on bridge %s", name, b.Name)
	}
	bk := b.Backer
	bk.mu.Lock()
	defer bk.mu.Unlock()
	if end, ok := bk.set.Load().patches[name]; ok {
		return Port{}, fmt.Errorf("patch port %s is already on bridge %s", name, end.b.Name)
	}
	p := Port{OFPort: ofport, Name: name, Type: PortTypePatch, Peer: peer, VLAN: v, HWAddr: patchMAC(name)}
	if p.OFPort == 0 {
		p.OFPort = b.Ports.NextOFPort()
	}
	if err := b.Ports.Add(p); err != nil {
		return Port{}, err
	}
	bk.portsChanged()
	b.Tables.Invalidate()
	if b.OnPortEvent != nil {
		b.OnPortEvent(PortEvent{Reason: 0, Port: p})
	}
	return p, nil
}

// patchMAC is a patch port's Ethernet address, which OpenFlow's port
// description carries: a locally administered unicast address derived
// from the name (ovs-vswitchd picks a random one; this one survives a
// restart).
func patchMAC(name string) [6]byte {
	h := fnv.New64a()
	h.Write([]byte("patch:" + name))
	v := h.Sum64()
	var m [6]byte
	for i := range m {
		m[i] = byte(v >> (8 * i))
	}
	m[0] = m[0]&^1 | 2
	return m
}

// IsPatch reports whether p is a patch port.
func (p *Port) IsPatch() bool { return p.Type == PortTypePatch }

// peerOf returns the bridge and port a packet output to patch port p
// enters by, or nil when p is not connected: its peer is missing, is not
// a patch port, or names another port as its own peer.
func (s *backerSet) peerOf(p *Port) (*Bridge, *Port) {
	end, ok := s.patches[p.Peer]
	if !ok || end.p.Peer != p.Name {
		return nil, nil
	}
	return end.b, end.p
}
