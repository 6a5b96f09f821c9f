package ofproto

import (
	"fmt"
	"hash/fnv"

	"github.com/govswitch/govswitch/ofproto/openflow"
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
	p := Port{OFPort: ofport, Name: name, Type: PortTypePatch, Peer: peer, VLAN: v, HWAddr: patchMAC(name), patch: newPatchStats()}
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

// patchStats are a patch port's counters. A patch port has no datapath
// port to count its packets, so translation counts them: each crossing
// notes tx of the port left and rx of the peer entered among the
// translation's rules, and they are credited as rules are (each upcalled
// packet, and the datapath flow's packets at each revalidation). Their
// entries are in no table (Table patchCounterTable).
type patchStats struct {
	tx, rx Rule
}

// patchCounterTable marks a patch counter's entry: no table has the id.
const patchCounterTable = 255

func newPatchStats() *patchStats {
	return &patchStats{tx: Rule{Value: &Entry{Table: patchCounterTable}}, rx: Rule{Value: &Entry{Table: patchCounterTable}}}
}

// isPatchCounter reports whether r is a patch port's counter, not a rule.
func isPatchCounter(r *Rule) bool { return r.Value.Table == patchCounterTable }

// appendPatchStats adds the patch ports' counters (port portNo, or all
// for PortAny) to a port stats reply of version v.
func appendPatchStats(stats []openflow.PortStats, ports *PortSet, portNo uint32, v uint8) []openflow.PortStats {
	for _, p := range ports.List() {
		if !p.IsPatch() || portNo != openflow.PortAny && portNo != p.OFPort {
			continue
		}
		if _, ok := openflow.Port32To10(p.OFPort); !ok && v == openflow.Version10 {
			continue
		}
		rxp, rxb := p.patch.rx.Value.Stats()
		txp, txb := p.patch.tx.Value.Stats()
		stats = append(stats, openflow.PortStats{PortNo: p.OFPort, RxPackets: rxp, RxBytes: rxb, TxPackets: txp, TxBytes: txb,
			RxFrameErr: ^uint64(0), RxOverErr: ^uint64(0), RxCRCErr: ^uint64(0), Collisions: ^uint64(0),
			DurationSec: ^uint32(0), DurationNsec: ^uint32(0)})
	}
	return stats
}
