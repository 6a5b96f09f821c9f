package ofproto

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
	"golang.org/x/sys/unix"
)

// SharedDatapathName is the datapath every bridge of the system type
// shares, as ovs-vswitchd names it.
const SharedDatapathName = "ovs-system"

// translator is what a Udpif's handlers and revalidator translate with:
// one bridge's Xlator (a bridge with a datapath of its own), or a Backer,
// which hands each packet to the bridge owning its input port.
type translator interface {
	// Translate is Xlator.Translate; out's versions are the translator's.
	Translate(key *flow.Key, now time.Time, learn bool, out *Out)
	// TranslatePacket is Xlator.TranslatePacket: Translate with the
	// packet's bytes, which multicast snooping learns from.
	TranslatePacket(key *flow.Key, packet []byte, now time.Time, learn bool, out *Out)
	// versions returns the tables' and MAC tables' versions, numbers that
	// change (grow) whenever a translation may change.
	versions() (tables, mac uint64)
	// changed holds a token after a tables version change (Tables.Changed).
	changed() <-chan struct{}
	// expire expires OpenFlow flows and MAC entries.
	expire(now time.Time)
	// setControllerPID says where userspace actions send packets.
	setControllerPID(pid uint32)
	// packetIn hands a controller-bound packet to its bridge.
	packetIn(pi PacketIn)
}

func (x *Xlator) versions() (uint64, uint64)  { return x.Tables.Version(), x.macVersion() }
func (x *Xlator) changed() <-chan struct{}    { return x.Tables.Changed() }
func (x *Xlator) setControllerPID(pid uint32) { x.ControllerPID.Store(pid) }

func (x *Xlator) expire(now time.Time) {
	x.Tables.Expire(now)
	if x.MAC != nil {
		x.MAC.Expire(now)
	}
	if ms := x.mcast.Load(); ms != nil {
		ms.Expire(now)
	}
}

func (x *Xlator) packetIn(pi PacketIn) {
	if x.bridge != nil {
		x.bridge.deliverPacketIn(pi)
	}
}

func (bk *Backer) setControllerPID(pid uint32) {
	bk.pid.Store(pid)
	bk.eachX(func(x *Xlator) { x.setControllerPID(pid) })
}

// Backer is one datapath and the bridges that share it, as ovs-vswitchd's
// dpif_backer: every bridge of the system type lives on the one kernel
// datapath ovs-system. Each bridge's LOCAL port is an internal port named
// after the bridge; OpenFlow port numbers are per bridge and map onto the
// datapath's port numbers. The backer runs the datapath's one set of upcall
// handlers and its revalidator (Udpif): a miss is translated by the bridge
// that owns its input port, and a patch port carries the translation on
// into its peer's tables. A change to any bridge re-translates every
// datapath flow (a flow can cross bridges through patch ports), as OVS's
// backer-wide need_revalidate does.
type Backer struct {
	DP    datapath.Datapath
	Udpif *Udpif

	// mu serialises changes to the set of bridges and their ports.
	mu  sync.Mutex
	set atomic.Pointer[backerSet]
	// tablesChanged is every bridge's Tables.Changed channel: one
	// revalidator receives for them all.
	tablesChanged chan struct{}
	pid           atomic.Uint32
	nextID        uint16
	// private is set for a datapath of one bridge's own (NewBridge): the
	// bridge's Start and Stop start and stop the Udpif.
	private bool

	// SetLinkUp, if set, sets the network device name administratively up
	// or down (a port mod's OFPPC_PORT_DOWN), as ovs-vswitchd does; nil
	// for datapaths whose devices are not the host's.
	SetLinkUp func(name string, up bool) error
	// flushCt is SetFlushCt's function.
	flushCt atomic.Pointer[func(m *openflow.CtFlush) error]
	// meterIDs is the datapath's meter id pool, shared by its bridges
	// (meter.go).
	meterIDs meterIDPool
	// CTZones, if set, are the conntrack zones' timeout policies that
	// ct(commit) translations name (ct_timeout.go).
	CTZones *CTZoneTimeouts
	// featOff holds the datapath features turned off at run time
	// (dpif/set-dp-features: backer_features.go).
	featOff atomic.Uint32
}

// backerSet is one immutable version of the backer's bridges.
type backerSet struct {
	bridges []*Bridge
	// owner maps a datapath port number to the bridge it belongs to.
	owner map[uint32]*Bridge
	// byID finds a bridge by the number its controller actions carry.
	byID map[uint16]*Bridge
	// patches finds a patch port by name (Interface names are unique
	// across bridges), for a peer to continue in.
	patches map[string]patchEnd
	// tunnels finds the tunnel ports on a shared tunnel vport, by its
	// datapath port number (tunnel.go).
	tunnels map[uint32][]tunnelEnd
	// tunnelMatch finds a tunnel port by what it receives (tunnel.go).
	tunnelMatch map[tunnelMatchKey]*tunnelEnd
	// retired keeps the versions of removed bridges (and one more per
	// removal), so versions never go back.
	retiredTables, retiredMAC uint64
}

type patchEnd struct {
	b *Bridge
	p *Port
}

// NewBacker returns a backer over dp, which must be open, with no bridge.
// Start starts its handlers.
func NewBacker(dp datapath.Datapath, cfg UpcallConfig) *Backer {
	bk := &Backer{DP: dp, tablesChanged: make(chan struct{}, 1)}
	bk.set.Store(&backerSet{owner: map[uint32]*Bridge{}, byID: map[uint16]*Bridge{}, patches: map[string]patchEnd{}})
	bk.Udpif = NewUdpif(dp, bk, cfg)
	noteDatapathFeatures(dp.Features()) // conntrack support: support_ct.go
	return bk
}

// Start starts the upcall handlers and the revalidator.
func (bk *Backer) Start() { bk.Udpif.Start() }

// Stop stops them; the datapath, its ports and flows stay.
func (bk *Backer) Stop() { bk.Udpif.Stop() }

// Bridges returns the backer's bridges, in the order they were added.
func (bk *Backer) Bridges() []*Bridge { return append([]*Bridge(nil), bk.set.Load().bridges...) }

// Owner returns the bridge datapath port portNo belongs to, or nil.
// A shared tunnel vport belongs to the first bridge with a tunnel port on it.
func (bk *Backer) Owner(portNo uint32) *Bridge {
	s := bk.set.Load()
	if b := s.owner[portNo]; b != nil {
		return b
	}
	if t := s.tunnels[portNo]; len(t) > 0 {
		return t[0].b
	}
	return nil
}

func (bk *Backer) eachX(fn func(*Xlator)) {
	for _, b := range bk.set.Load().bridges {
		fn(b.X)
	}
}

// Translate hands key to the bridge that owns its input port. A packet
// on a port no bridge owns (the datapath's own port 0, a port being
// removed) is dropped by a flow that matches the port alone.
func (bk *Backer) Translate(key *flow.Key, now time.Time, learn bool, out *Out) {
	bk.TranslatePacket(key, nil, now, learn, out)
}

// TranslatePacket is Translate with the packet's bytes
// (Xlator.TranslatePacket).
func (bk *Backer) TranslatePacket(key *flow.Key, packet []byte, now time.Time, learn bool, out *Out) {
	s := bk.set.Load()
	tv, mv := s.versions()
	if b := s.owner[key.InPort]; b != nil {
		b.X.TranslatePacket(key, packet, now, learn, out)
	} else if te := s.tunnelReceiver(key); te != nil {
		te.b.X.TranslatePacket(key, packet, now, learn, out) // finds te.p again: xlate_tunnel.go
	} else if s.tunnels[key.InPort] != nil {
		out.reset()
		tunnelReceiveMask(key, &out.WC)
		out.WC.InPort, out.WC.RecircID, out.WC.EthType = ^uint32(0), ^uint32(0), 0xffff
		out.Dropped = "no tunnel port matches the packet's tunnel metadata"
	} else {
		out.reset()
		out.WC.InPort, out.WC.RecircID, out.WC.EthType = ^uint32(0), ^uint32(0), 0xffff
		out.Dropped = "unknown input port"
	}
	out.TablesVersion, out.MACVersion = tv, mv
}

func (s *backerSet) versions() (tables, mac uint64) {
	tables, mac = s.retiredTables, s.retiredMAC
	for _, b := range s.bridges {
		tables += b.Tables.Version()
		mac += b.X.macVersion()
	}
	return tables, mac
}

func (bk *Backer) versions() (uint64, uint64) { return bk.set.Load().versions() }
func (bk *Backer) changed() <-chan struct{}   { return bk.tablesChanged }

func (bk *Backer) expire(now time.Time) {
	bk.eachX(func(x *Xlator) { x.expire(now) })
}

// packetIn gives a controller-bound packet to the bridge whose actions
// sent it (the number in the userdata), or the input port's owner.
func (bk *Backer) packetIn(pi PacketIn) {
	s := bk.set.Load()
	b := s.byID[pi.Bridge]
	if b == nil {
		b = s.owner[pi.Key.InPort]
	}
	if b != nil {
		b.deliverPacketIn(pi)
	}
}

// bump posts a tables change, for a change no bridge's tables record.
func (bk *Backer) bump() {
	select {
	case bk.tablesChanged <- struct{}{}:
	default:
	}
}

// publish makes a new set from bridges (or the current ones), under
// bk.mu, adding retire to the retired versions.
func (bk *Backer) publish(bridges []*Bridge, retireTables, retireMAC uint64) {
	old := bk.set.Load()
	if bridges == nil {
		bridges = old.bridges
	}
	s := &backerSet{bridges: bridges, owner: map[uint32]*Bridge{}, byID: map[uint16]*Bridge{}, patches: map[string]patchEnd{},
		retiredTables: old.retiredTables + retireTables, retiredMAC: old.retiredMAC + retireMAC}
	for _, b := range bridges {
		s.byID[b.X.ID] = b
		for _, p := range b.Ports.Snapshot().List() {
			if p.Type == PortTypePatch {
				s.patches[p.Name] = patchEnd{b: b, p: p}
				continue
			}
			if p.tunnel != nil {
				if s.tunnels == nil {
					s.tunnels = map[uint32][]tunnelEnd{}
				}
				s.tunnels[p.DPPort] = append(s.tunnels[p.DPPort], tunnelEnd{b: b, p: p})
				continue
			}
			s.owner[p.DPPort] = b
		}
	}
	s.indexTunnels() // tunnel.go
	bk.set.Store(s)
}

// ErrBridgeExists is returned when a bridge of that name is on the backer.
var ErrBridgeExists = errors.New("bridge exists")

// AddBridge adds a bridge to the datapath: its LOCAL port is the
// internal port named cfg.Name, adopted if the datapath has it (a
// restart), created otherwise. Its other ports come with AddPort, which
// likewise adopts ports an earlier run left. The bridge handles traffic
// at once if the backer is started.
func (bk *Backer) AddBridge(cfg BridgeConfig) (*Bridge, error) {
	bk.mu.Lock()
	defer bk.mu.Unlock()
	for _, b := range bk.set.Load().bridges {
		if b.Name == cfg.Name {
			return nil, fmt.Errorf("bridge %s: %w", cfg.Name, ErrBridgeExists)
		}
	}
	b, err := bk.newBridge(cfg)
	if err != nil {
		return nil, err
	}
	vp, err := bk.DP.Vport(cfg.Name)
	if err == nil && (vp.Type != datapath.VportInternal || bk.set.Load().owner[vp.PortNo] != nil || vp.PortNo == 0) {
		return nil, fmt.Errorf("bridge %s: datapath %s already has a port %s that is not the bridge's own", cfg.Name, bk.DP.Name(), cfg.Name)
	}
	if err != nil {
		vp, err = bk.DP.AddVport(datapath.VportSpec{Name: cfg.Name, Type: datapath.VportInternal})
		if err != nil {
			return nil, fmt.Errorf("bridge %s: add its internal port: %w", cfg.Name, err)
		}
	}
	lp := portFromVport(&vp)
	lp.OFPort = openflow.PortLocal
	if err := b.Ports.Add(lp); err != nil {
		return nil, err
	}
	b.hostDevices = vp.IfIndex != 0 // a kernel datapath: follow link state (linkstate.go)
	bk.attach(b)
	return b, nil
}

// newBridge builds a bridge for the backer (not yet attached). The
// caller holds bk.mu.
func (bk *Backer) newBridge(cfg BridgeConfig) (*Bridge, error) {
	b, err := buildBridge(cfg, bk)
	if err != nil {
		return nil, err
	}
	bk.nextID++
	b.X.ID = bk.nextID
	b.Tables.shareChanged(bk.tablesChanged)
	b.Config.Upcall = bk.Udpif.cfg // the datapath's, which its bridges share
	b.X.ControllerPID.Store(bk.pid.Load())
	return b, nil
}

// attach publishes b, under bk.mu.
func (bk *Backer) attach(b *Bridge) {
	old := bk.set.Load().bridges
	bridges := append(append(make([]*Bridge, 0, len(old)+1), old...), b)
	bk.publish(bridges, 0, 0)
	bk.bump()
}

// RemoveBridge takes b off the backer (if it is on it): its packets are
// no longer translated (their datapath flows are deleted at the next
// pass). With
// deletePorts, as ovs-vswitchd's del-br, its datapath ports go too,
// LOCAL's internal port included; without, they stay for a bridge of the
// same name to adopt.
func (bk *Backer) RemoveBridge(b *Bridge, deletePorts bool) error {
	bk.mu.Lock()
	defer bk.mu.Unlock()
	old := bk.set.Load().bridges
	var bridges []*Bridge
	found := false
	for _, x := range old {
		if x == b {
			found = true
			continue
		}
		bridges = append(bridges, x)
	}
	if found {
		if bridges == nil {
			bridges = []*Bridge{}
		}
		bk.publish(bridges, b.Tables.Version()+1, b.X.macVersion()+1)
		bk.bump()
	}
	if !deletePorts {
		return nil
	}
	var errs []error
	for _, p := range b.Ports.Snapshot().List() {
		if p.tunnel != nil {
			// The shared vport goes with its last tunnel port.
			if err := bk.releaseTunnelVport(p.DPPort); err != nil {
				errs = append(errs, fmt.Errorf("delete tunnel vport of port %s: %w", p.Name, err))
			}
			continue
		}
		if p.Type == PortTypePatch {
			continue
		}
		if err := bk.DP.DeleteVport(p.DPPort); err != nil && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("delete port %s: %w", p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// portsChanged republishes the set after a bridge's ports changed; the
// caller holds bk.mu.
func (bk *Backer) portsChanged() {
	bk.publish(nil, 0, 0)
	bk.bump()
}

// FlushBridge deletes the datapath flows whose input port is b's, the
// flows b's translations made.
func (bk *Backer) FlushBridge(b *Bridge) error {
	if bk.private {
		return bk.DP.FlushFlows()
	}
	mine := map[uint32]bool{}
	for _, p := range b.Ports.Snapshot().List() {
		if p.ownsVport() {
			mine[p.DPPort] = true
		}
	}
	var ops []datapath.Op
	err := bk.DP.DumpFlows(false, func(f *datapath.Flow) error {
		if mine[f.Key.InPort] {
			ops = append(ops, deleteOp(f))
		}
		return nil
	})
	if err != nil {
		return err
	}
	bk.Udpif.operateChunks(ops, func(op *datapath.Op) {})
	return nil
}

// vportFor returns the datapath port for a bridge port called name of
// type vt: one an earlier run left and no bridge claims is adopted (its
// flows keep forwarding across a restart; one of another type is
// replaced), else a new one is added. The caller holds bk.mu.
func (bk *Backer) vportFor(name string, vt datapath.VportType) (vp datapath.Vport, adopted bool, err error) {
	vp, err = bk.DP.Vport(name)
	if err == nil && !bk.private {
		if o := bk.set.Load().owner[vp.PortNo]; o != nil {
			return vp, false, fmt.Errorf("port %s is already on bridge %s", name, o.Name)
		}
		if vp.PortNo == 0 {
			return vp, false, fmt.Errorf("port %s is datapath %s's own port", name, bk.DP.Name())
		}
		if vp.Type == vt {
			return vp, true, nil
		}
		if err := bk.DP.DeleteVport(vp.PortNo); err != nil {
			return vp, false, fmt.Errorf("replace port %s of type %s: %w", name, vp.Type, err)
		}
	}
	vp, err = bk.DP.AddVport(datapath.VportSpec{Name: name, Type: vt})
	if err != nil {
		return vp, false, fmt.Errorf("add port %s: %w", name, err)
	}
	return vp, false, nil
}
