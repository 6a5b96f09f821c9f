package ofproto

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/govswitch/govswitch/ofproto/openflow"
	"github.com/govswitch/govswitch/ofproto/rstp"
	"github.com/govswitch/govswitch/ofproto/stp"
)

// Port is one port of the bridge as OpenFlow and the datapath know it.
// A Port is immutable once added; a change replaces it.
type Port struct {
	OFPort  uint32 // OpenFlow port number; openflow.PortLocal for the bridge's internal port
	DPPort  uint32 // datapath port number
	Name    string
	HWAddr  [6]byte
	Type    string // "system", "internal", "vxlan", ...
	NoFlood bool   // OFPPC_NO_FLOOD: FLOOD and NORMAL's flooding skip it
	Down    bool   // administratively down (OFPPC_PORT_DOWN): nothing is sent to it
	// NoRecv (OFPPC_NO_RECV) drops what arrives on the port; NoFwd
	// (OFPPC_NO_FWD) drops what is output to it; NoPacketIn
	// (OFPPC_NO_PACKET_IN) sends none of its table misses to the
	// controller.
	NoRecv, NoFwd, NoPacketIn bool
	// LinkDown is set while the device has no carrier (OFPPS_LINK_DOWN):
	// fast failover groups skip buckets that watch it.
	LinkDown bool
	// VLAN is the port's 802.1Q configuration, which NORMAL applies; the
	// zero value is a trunk of all VLANs.
	VLAN PortVLAN
	// Peer is a patch port's peer, the patch port of another bridge
	// (Type PortTypePatch) that a packet output here enters by. A patch
	// port has no datapath port: DPPort is meaningless.
	Peer string
	// patch counts a patch port's packets (nil for other ports); copies
	// of the Port share it.
	patch *patchStats
	// tunnel is a tunnel port's configuration (nil for other ports;
	// tunnel.go). Its DPPort is the vport its datapath's tunnels of the
	// type share.
	tunnel *tunnelPort
	// Bond is the bond the port is a member of (bond.go), nil for none.
	Bond *Bond
	// LACPBundle is, for a port of one interface running LACP, its
	// bundle of one (BondConfig.Single): LACP runs on it as on a bond's
	// members, but NORMAL sees a plain port, as ovs-vswitchd's bundle
	// with LACP and no bond. nil for none; never set with Bond.
	LACPBundle *Bond
	// STP is the port's spanning tree state, 0 when it takes no part in
	// one (stp_bridge.go).
	STP stp.State
	// RSTP is the port's rapid spanning tree state, rstp.Disabled when
	// it takes no part in one (rstp_bridge.go).
	RSTP rstp.State
}

// PortTypePatch is the type of a patch port.
const PortTypePatch = "patch"

// PortSet is one immutable version of the bridge's ports.
type PortSet struct {
	byOF map[uint32]*Port
	byDP map[uint32]*Port
	// tunnelDP maps a shared tunnel vport to one of the bridge's tunnel
	// ports on it (all of one type); nil when the bridge has none.
	tunnelDP map[uint32]*Port
	list     []*Port // by OpenFlow port number
	// floodOrder is list with LOCAL moved to the front: the order
	// ovs-vswitchd floods a bridge's ports in (its bridge port is its
	// first bundle), which OVS's tests see in datapath actions such as
	// "actions:br0,ovs-p2".
	floodOrder []*Port
	flood      []uint32 // datapath ports that take flooded packets
	// vlans is set when some port has a VLAN configuration other than a
	// trunk of all VLANs: without one, NORMAL forwards every frame with
	// the headers it came with, and skips the per-port VLAN work.
	vlans bool
	// bonds are the states of the bridge's bonds (bond.go), nil when
	// there is none.
	bonds map[*Bond]*bondState
	// mirrors are the bridge's mirrors (mirror.go), nil when none.
	mirrors *mirrorSet
}

// ByOF returns the port with OpenFlow number p, or nil.
func (s *PortSet) ByOF(p uint32) *Port { return s.byOF[p] }

// ByDP returns the port with datapath number p, or nil.
func (s *PortSet) ByDP(p uint32) *Port { return s.byDP[p] }

// TunnelByDP returns a tunnel port of the bridge on the shared tunnel
// vport with datapath number p, or nil. The tunnel ports on one vport
// share their type and UDP port, not the rest of their configuration.
func (s *PortSet) TunnelByDP(p uint32) *Port { return s.tunnelDP[p] }

// List returns the ports ordered by OpenFlow port number. The slice is
// shared: do not modify it.
func (s *PortSet) List() []*Port { return s.list }

// FloodOrder returns the ports in the order flooding outputs to them:
// LOCAL first, then by OpenFlow port number. The slice is shared.
func (s *PortSet) FloodOrder() []*Port { return s.floodOrder }

// Ports is the bridge's port table. Readers (translation, on every miss)
// take a Snapshot without locking; changes publish a new PortSet.
type Ports struct {
	mu  sync.Mutex
	cur atomic.Pointer[PortSet]
	// mirrorCfg is the mirrors each new PortSet compiles (mirror.go),
	// under mu.
	mirrorCfg []MirrorConfig
	// mirrorStats are the mirrors' counters by name (mirror.go): they
	// outlive a PortSet, and a change of a mirror's settings.
	mirrorStats map[string]*Rule
}

// store publishes a PortSet of list with the mirrors. The caller holds mu.
func (p *Ports) store(list []*Port) {
	s := buildPortSet(list)
	s.mirrors = compileMirrors(p.mirrorCfg, p.mirrorStats, s.list)
	p.cur.Store(s)
}

// NewPorts returns an empty port table.
func NewPorts() *Ports {
	p := &Ports{}
	p.cur.Store(buildPortSet(nil))
	return p
}

// Snapshot returns the current ports.
func (p *Ports) Snapshot() *PortSet { return p.cur.Load() }

func buildPortSet(list []*Port) *PortSet {
	s := &PortSet{byOF: make(map[uint32]*Port, len(list)), byDP: make(map[uint32]*Port, len(list)), list: list}
	sort.Slice(list, func(i, j int) bool { return list[i].OFPort < list[j].OFPort })
	s.floodOrder = make([]*Port, 0, len(list))
	for _, pt := range list {
		if pt.OFPort == openflow.PortLocal {
			s.floodOrder = append(s.floodOrder, pt)
		}
	}
	for _, pt := range list {
		if pt.OFPort != openflow.PortLocal {
			s.floodOrder = append(s.floodOrder, pt)
		}
	}
	for _, pt := range list {
		s.byOF[pt.OFPort] = pt
		if pt.ownsVport() {
			s.byDP[pt.DPPort] = pt
		}
		if pt.tunnel != nil {
			if s.tunnelDP == nil {
				s.tunnelDP = map[uint32]*Port{}
			}
			s.tunnelDP[pt.DPPort] = pt
		}
		if pt.ownsVport() && !pt.NoFlood && !pt.Down {
			s.flood = append(s.flood, pt.DPPort)
		}
		if pt.VLAN.Mode != VLANTrunk || pt.VLAN.Trunks != nil {
			s.vlans = true
		}
	}
	s.bonds = buildBondStates(list)
	return s
}

// Add adds or replaces (by OpenFlow number) a port. It fails if another
// port already has the datapath number, the OpenFlow number is reserved,
// or the name is taken by another port.
func (p *Ports) Add(pt Port) error {
	if pt.OFPort == 0 || pt.OFPort >= openflow.PortMax && pt.OFPort != openflow.PortLocal {
		return fmt.Errorf("port %s: OpenFlow port number %d is reserved", pt.Name, pt.OFPort)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.cur.Load()
	list := make([]*Port, 0, len(old.list)+1)
	for _, q := range old.list {
		if q.OFPort == pt.OFPort {
			continue
		}
		if q.DPPort == pt.DPPort && q.ownsVport() && pt.ownsVport() {
			return fmt.Errorf("port %s: datapath port %d is already %s", pt.Name, pt.DPPort, q.Name)
		}
		if q.Name == pt.Name {
			return fmt.Errorf("port %s already exists as OpenFlow port %d", pt.Name, q.OFPort)
		}
		list = append(list, q)
	}
	np := pt
	list = append(list, &np)
	p.store(list)
	return nil
}

// Remove removes the port with OpenFlow number ofport and returns it, or
// nil if there was none.
func (p *Ports) Remove(ofport uint32) *Port {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.cur.Load()
	var gone *Port
	list := make([]*Port, 0, len(old.list))
	for _, q := range old.list {
		if q.OFPort == ofport {
			gone = q
			continue
		}
		list = append(list, q)
	}
	if gone != nil {
		p.store(list)
	}
	return gone
}

// NextOFPort returns the lowest free OpenFlow port number at or above 1,
// for a port added without ofport_request.
func (p *Ports) NextOFPort() uint32 {
	s := p.Snapshot()
	for n := uint32(1); ; n++ {
		if s.byOF[n] == nil {
			return n
		}
	}
}

// byName returns the port called name, or nil.
func (p *Ports) byName(name string) *Port {
	for _, q := range p.Snapshot().List() {
		if q.Name == name {
			return q
		}
	}
	return nil
}
