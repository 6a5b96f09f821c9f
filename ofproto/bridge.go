package ofproto

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/maclearn"
	"github.com/govswitch/govswitch/ofproto/openflow"
	"golang.org/x/sys/unix"
)

// FailMode is what a bridge does while no controller is connected.
type FailMode uint8

const (
	// FailStandalone makes the bridge a learning switch (a priority-0
	// NORMAL flow) when it has no controller.
	FailStandalone FailMode = iota
	// FailSecure forwards only what the flow tables say.
	FailSecure
)

// ParseFailMode parses "standalone" or "secure" ("" is standalone).
func ParseFailMode(s string) (FailMode, error) {
	switch s {
	case "", "standalone":
		return FailStandalone, nil
	case "secure":
		return FailSecure, nil
	}
	return 0, fmt.Errorf("fail mode %q: want standalone or secure", s)
}

func (m FailMode) String() string {
	if m == FailSecure {
		return "secure"
	}
	return "standalone"
}

// BridgeConfig configures a bridge.
type BridgeConfig struct {
	Name     string
	FailMode FailMode
	// HasControllers says controllers are configured: then a standalone
	// bridge does not add its NORMAL flow at creation.
	HasControllers bool
	MACTableSize   int
	MACAging       time.Duration
	MaxFlows       int // OpenFlow flows in all tables; 0 = no limit
	Upcall         UpcallConfig
}

// PortEvent reports a port change to OpenFlow connections (port_status).
type PortEvent struct {
	Reason uint8 // openflow.PortReasonAdd/Delete/Modify values: 0 add, 1 delete, 2 modify
	Port   Port
}

// Bridge is one OpenFlow switch over a datapath: its ports, flow tables,
// MAC table and translation. Its datapath's upcall machinery (Udpif) is
// its Backer's, shared with the other bridges of the datapath.
type Bridge struct {
	Name   string
	DP     datapath.Datapath
	Backer *Backer
	Tables *Tables
	Ports  *Ports
	MAC    *maclearn.Table
	X      *Xlator
	Groups *Groups
	Meters *Meters
	TLVs   TLVTable // the Geneve option map (NXT_TLV_TABLE_MOD)
	Udpif  *Udpif
	Config BridgeConfig

	// dpid is the OpenFlow datapath id (DatapathID, SetDatapathID).
	dpid atomic.Uint64
	// forwardBPDU is other_config:forward-bpdu (SetForwardBPDU).
	forwardBPDU atomic.Bool
	// desc is OpenFlow's switch description (SetDescription).
	desc atomic.Pointer[Description]

	mu sync.Mutex
	// hostDevices is set when the datapath's ports are this host's
	// network devices (whose link state the bridge follows); links is the
	// watcher that follows it.
	hostDevices bool
	links       *linkWatch
	// OnPortEvent, if set, is told of port additions, removals and
	// changes. It must not block.
	OnPortEvent func(PortEvent)
	// onPacketIn receives the bridge's packets for the controller
	// (SetPacketIn).
	onPacketIn atomic.Pointer[func(PacketIn)]
	// onStatus is told when status the database shows changes without a
	// port change (SetStatusChanged).
	onStatus atomic.Pointer[func()]
}

// SetStatusChanged makes fn be called when status that a database layer
// writes back changes on its own: today a bond member's LACP partner
// information turning current or defaulted (LACPCurrent), as OVS bumps
// its connectivity sequence. fn runs on the bond's runner and must not
// block.
func (b *Bridge) SetStatusChanged(fn func()) { b.onStatus.Store(&fn) }

func (b *Bridge) statusChanged() {
	if fn := b.onStatus.Load(); fn != nil {
		(*fn)()
	}
}

// SetPacketIn makes fn receive the bridge's packets for the controller.
// fn runs on an upcall handler and must not block: queue and return.
func (b *Bridge) SetPacketIn(fn func(PacketIn)) { b.onPacketIn.Store(&fn) }

func (b *Bridge) deliverPacketIn(pi PacketIn) {
	if fn := b.onPacketIn.Load(); fn != nil {
		(*fn)(pi)
	}
}

// NewBridge builds a bridge over a datapath of its own, dp, which must be
// open. It learns the datapath's existing ports: port 0 (the datapath's
// internal port, named as the bridge) becomes OpenFlow port LOCAL and port
// n becomes OpenFlow port n. Start begins handling traffic. Bridges that
// share a datapath are made with Backer.AddBridge instead.
func NewBridge(cfg BridgeConfig, dp datapath.Datapath) (*Bridge, error) {
	bk := NewBacker(dp, cfg.Upcall)
	bk.private = true
	bk.mu.Lock()
	defer bk.mu.Unlock()
	b, err := bk.newBridge(cfg)
	if err != nil {
		return nil, err
	}
	vports, err := dp.Vports()
	if err != nil {
		return nil, fmt.Errorf("bridge %s: list ports: %w", cfg.Name, err)
	}
	for _, vp := range vports {
		b.hostDevices = b.hostDevices || vp.IfIndex != 0
		p := portFromVport(&vp)
		if vp.PortNo == 0 {
			p.OFPort = openflow.PortLocal
		}
		if err := b.Ports.Add(p); err != nil {
			return nil, fmt.Errorf("bridge %s: %w", cfg.Name, err)
		}
	}
	bk.attach(b)
	return b, nil
}

// buildBridge makes the bridge's tables, ports, MAC table and
// translator, on bk, with no port.
func buildBridge(cfg BridgeConfig, bk *Backer) (*Bridge, error) {
	tables := NewTables()
	tables.MaxFlows = cfg.MaxFlows
	b := &Bridge{
		Name: cfg.Name, DP: bk.DP, Backer: bk, Udpif: bk.Udpif, Tables: tables, Ports: NewPorts(),
		MAC: maclearn.New(cfg.MACTableSize, cfg.MACAging), Config: cfg,
	}
	b.Groups, b.Meters = NewGroups(b.Tables), newMeters(b.Tables, bk.DP, &bk.meterIDs)
	b.Tables.Groups, b.Tables.Meters = b.Groups, b.Meters
	b.X = &Xlator{Tables: b.Tables, Ports: b.Ports, MAC: b.MAC, Groups: b.Groups, Meters: b.Meters, bridge: b, backer: bk}
	b.dpid.Store(datapathID(cfg.Name))
	if cfg.FailMode == FailStandalone && !cfg.HasControllers {
		// OVS's bridge starts as a learning switch: one visible flow,
		// priority 0, NORMAL, that ovs-ofctl can delete.
		fm := FlowMod{Command: CmdAdd, OutPort: openflow.PortAny,
			Instructions: openflow.Instructions{Apply: []openflow.Action{openflow.Output(openflow.PortNormal, 0)}}}
		if err := b.Tables.Apply(&fm, time.Now()); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// DatapathID returns the bridge's OpenFlow datapath id.
func (b *Bridge) DatapathID() uint64 { return b.dpid.Load() }

// SetDatapathID changes the datapath id: switches configured from the
// database take it from the bridge's address or other_config:datapath-id
// (ovsdb.pickBridgeAddress). Feature replies sent after it carry it.
func (b *Bridge) SetDatapathID(id uint64) { b.dpid.Store(id) }

// SetForwardBPDU sets whether NORMAL forwards frames to IEEE's reserved
// multicast addresses (STP, LACP, pause, 802.1X ...), which it otherwise
// drops, as ovs-vswitchd's other_config:forward-bpdu. Datapath flows are
// translated again.
func (b *Bridge) SetForwardBPDU(on bool) {
	if b.forwardBPDU.Swap(on) != on {
		b.Tables.Invalidate()
	}
}

// Description is what OFPST_DESC (ovs-ofctl dump-desc) reports.
type Description struct {
	Mfr, HW, SW, Serial, DP string
}

// defaultDescription is the description of a bridge whose configuration
// sets none of it.
var defaultDescription = Description{Mfr: DescMfr, HW: DescHW, SW: DescSW, Serial: DescSerial, DP: DescDP}

// Description returns the bridge's switch description.
func (b *Bridge) Description() Description {
	if d := b.desc.Load(); d != nil {
		return *d
	}
	return defaultDescription
}

// SetDescription sets the serial number and datapath description of the
// switch description, as other_config dp-sn and dp-desc do ("" for the
// default).
func (b *Bridge) SetDescription(serial, dp string) {
	d := defaultDescription
	if serial != "" {
		d.Serial = serial
	}
	if dp != "" {
		d.DP = dp
	}
	b.desc.Store(&d)
}

// datapathID derives a stable 48-bit datapath id from the bridge name, a
// locally administered MAC address: the id of a bridge until its
// configuration gives it another.
func datapathID(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	id := h.Sum64() & 0xffffffffffff
	id |= 0x020000000000  // locally administered
	id &^= 0x010000000000 // unicast
	return id
}

// portFromVport is the port for vp, with OpenFlow number vp's datapath
// number (the caller renumbers it as its bridge numbers ports).
func portFromVport(vp *datapath.Vport) Port {
	p := Port{OFPort: vp.PortNo, DPPort: vp.PortNo, Name: vp.Name, Type: vportTypeName(vp.Type)}
	// A port of the kernel datapath is a network device of this host;
	// OpenFlow's port descriptions carry its address. (The in-memory
	// datapath's devices are not the host's: they keep a zero address.)
	if vp.IfIndex != 0 {
		if ifi, err := net.InterfaceByIndex(int(vp.IfIndex)); err == nil && ifi.Name == vp.Name && len(ifi.HardwareAddr) == 6 {
			copy(p.HWAddr[:], ifi.HardwareAddr)
		}
		p.LinkDown = linkDownOf(int(vp.IfIndex), vp.Name)
	}
	return p
}

func vportTypeName(t datapath.VportType) string {
	switch t {
	case datapath.VportNetdev:
		return "system"
	case datapath.VportInternal:
		return "internal"
	}
	return t.String()
}

// Start begins handling upcalls and revalidating, for a bridge with a
// datapath of its own; a bridge on a shared datapath handles its traffic
// from AddBridge on, and its Backer's Start starts the handlers. Either
// way it starts following its devices' link state.
func (b *Bridge) Start() {
	if b.Backer.private {
		b.Udpif.Start()
	}
	b.startLinkWatch()
}

// Stop stops the upcall handlers and revalidator (of a datapath of the
// bridge's own), or takes the bridge off its shared datapath keeping its
// ports. The datapath and its flows stay, so traffic keeps flowing in the
// kernel.
func (b *Bridge) Stop() {
	b.stopLinkWatch()
	b.stopBondRunners() // lacp_bond.go
	b.stopSTP()
	b.stopRSTP()
	b.stopSFlow()
	b.stopIPFIX()
	b.stopNetFlow()
	if b.Backer.private {
		b.Udpif.Stop()
		return
	}
	b.Backer.RemoveBridge(b, false)
}

// AddPort adds a datapath port for the network device name (typ "system"
// or "internal") and gives it OpenFlow port ofport, or the next free
// number when ofport is 0 (the datapath port number when it is free).
func (b *Bridge) AddPort(name, typ string, ofport uint32) (Port, error) {
	return b.AddPortVLAN(name, typ, ofport, PortVLAN{})
}

// AddPortVLAN is AddPort for a port that has the VLAN configuration v
// from its first packet on.
func (b *Bridge) AddPortVLAN(name, typ string, ofport uint32, v PortVLAN) (Port, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	vt := datapath.VportNetdev
	switch typ {
	case "", "system":
	case "internal":
		vt = datapath.VportInternal
	default:
		return Port{}, fmt.Errorf("port %s: type %q is not supported", name, typ)
	}
	if b.Ports.byName(name) != nil {
		return Port{}, fmt.Errorf("port %s already exists on bridge %s", name, b.Name)
	}
	bk := b.Backer
	bk.mu.Lock()
	defer bk.mu.Unlock()
	vp, adopted, err := bk.vportFor(name, vt)
	if err != nil {
		return Port{}, err
	}
	p := portFromVport(&vp)
	p.VLAN = v
	switch {
	case ofport != 0:
		p.OFPort = ofport
	case !bk.private || b.Ports.Snapshot().ByOF(p.OFPort) != nil:
		// On a shared datapath OpenFlow numbers are the bridge's own,
		// from 1; on a datapath of its own the bridge takes the
		// datapath's number while it is free.
		p.OFPort = b.Ports.NextOFPort()
	}
	if err := b.Ports.Add(p); err != nil {
		if !adopted {
			b.DP.DeleteVport(vp.PortNo)
		}
		return Port{}, err
	}
	bk.portsChanged()
	b.Tables.Invalidate() // flooding now includes the new port
	if b.OnPortEvent != nil {
		b.OnPortEvent(PortEvent{Reason: 0, Port: p})
	}
	return p, nil
}

// ErrNoPort is returned for a port name the bridge does not have.
var ErrNoPort = errors.New("no such port")

// portNamed is the port called name, or an error wrapping ErrNoPort.
// The caller holds b.mu.
func (b *Bridge) portNamed(name string) (*Port, error) {
	var p *Port
	for _, q := range b.Ports.Snapshot().List() {
		if q.Name == name {
			p = q
		}
	}
	if p == nil {
		return nil, fmt.Errorf("port %s: %w", name, ErrNoPort)
	}
	return p, nil
}

// DeletePort removes the port called name from the bridge and the
// datapath, and forgets what the MAC table learned on it.
func (b *Bridge) DeletePort(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.portNamed(name)
	if err != nil {
		return err
	}
	if p.OFPort == openflow.PortLocal {
		return fmt.Errorf("port %s is the bridge's own port", name)
	}
	bk := b.Backer
	bk.mu.Lock()
	defer bk.mu.Unlock()
	if p.ownsVport() {
		// A vport whose network device was deleted (ip link del) is
		// already gone from the kernel's datapath (ENODEV): the port
		// still leaves the bridge, without an error, as it does from
		// ovs-vswitchd's.
		if err := b.DP.DeleteVport(p.DPPort); err != nil && !errors.Is(err, unix.ENODEV) {
			return fmt.Errorf("delete port %s: %w", name, err)
		}
	}
	b.Ports.Remove(p.OFPort)
	bk.portsChanged()
	if p.tunnel != nil {
		if err := bk.releaseTunnelVport(p.DPPort); err != nil {
			b.Tables.Invalidate()
			return fmt.Errorf("delete port %s: its tunnel vport: %w", name, err)
		}
	}
	b.MAC.FlushPort(p.OFPort)
	if b.Ports.mirrorSelects(name) {
		// As ofproto-dpif, when a port a mirror selected by name
		// (select_src_port/select_dst_port, not its output) leaves,
		// the whole MAC table and the snooping table are forgotten.
		b.MAC.Flush()
		b.flushMcast()
	}
	b.Tables.Invalidate() // flows that flooded or output to it must change
	if b.OnPortEvent != nil {
		b.OnPortEvent(PortEvent{Reason: 1, Port: *p})
	}
	return nil
}

// SetPortVLAN gives the port called name the VLAN configuration v. As
// ofproto-dpif does on a VLAN change, it forgets the addresses learned on
// the port (they were learned in VLANs the port may no longer carry) and
// makes every translation stale.
func (b *Bridge) SetPortVLAN(name string, v PortVLAN) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.portNamed(name)
	if err != nil {
		return err
	}
	if p.VLAN.Equal(&v) {
		return nil
	}
	np := *p
	np.VLAN = v
	if err := b.Ports.Add(np); err != nil {
		return err
	}
	b.MAC.FlushPort(p.OFPort)
	b.Tables.Invalidate()
	return nil
}

// PacketOut sends packet as a controller's packet-out asks: through acts,
// as if it had arrived on OpenFlow port inPort (a real port, or a reserved
// one such as openflow.PortController).
func (b *Bridge) PacketOut(packet []byte, inPort uint32, acts []openflow.Action) error {
	return b.PacketOutPipeline(packet, inPort, nil, acts)
}

// PacketOutPipeline is PacketOut for a packet whose pipeline starts with
// the registers and metadata of pipe (an OpenFlow 1.5 packet-out's match:
// openflow.PacketOut.Pipeline), the bits outside its mask zero; nil is
// PacketOut.
func (b *Bridge) PacketOutPipeline(packet []byte, inPort uint32, pipe *openflow.Match, acts []openflow.Action) error {
	now := time.Now()
	md := flow.Metadata{}
	if p := b.Ports.Snapshot().ByOF(inPort); p != nil {
		md.InPort = p.DPPort
	}
	key := flow.Extract(packet, md)
	if pipe != nil {
		for i := range key.Regs {
			key.Regs[i] = pipe.Key.Regs[i] & pipe.Mask.Regs[i]
		}
		key.OFMetadata = pipe.Key.OFMetadata & pipe.Mask.OFMetadata
	}
	var out Out
	flow.ExtractNDExt(&key, packet, nil) // for rules on nd_reserved, nd_options_type
	b.X.TranslateActions(&key, inPort, acts, now, &out)
	// The rules a resubmit or output:TABLE ran count the packet, as
	// ovs-vswitchd's do.
	for r := 0; r < out.NRules; r++ {
		out.Rules[r].Value.Credit(1, uint64(len(packet)), now)
	}
	applyLearns(&out, now)
	out.applyFinTimeouts(key.TCPFlags) // a resubmit's rules' (xlate_fintimeout.go)
	if out.Dropped != "" {
		return fmt.Errorf("packet-out: %s", out.Dropped)
	}
	if len(out.Actions) == 0 {
		return nil
	}
	if err := executeWithHelp(b.DP, packet, &key, &out); err != nil { // upcall_slow.go
		exact := flow.ExactMask()
		return &ExecuteError{DP: b.DP.Name(), Actions: datapath.FormatActions(out.Actions), Packet: flow.Format(&key, &exact), Err: err}
	}
	return nil
}

// ExecuteError is a packet the datapath refused to execute, for example
// a ct(commit) over its zone's connection limit (ENOMEM). As in
// ovs-vswitchd, that is logged, not answered with an OpenFlow error: the
// packet-out itself was good.
type ExecuteError struct {
	DP, Actions, Packet string
	Err                 error
}

func (e *ExecuteError) Error() string {
	return fmt.Sprintf("system@%s: execute %s failed (%s) on packet %s", e.DP, e.Actions, datapath.ErrnoText(e.Err),
		e.Packet)
}

func (e *ExecuteError) Unwrap() error { return e.Err }

// execWarnLimit rate-limits ExecuteError warnings, as OVS's error_rl
// does (at most 5 a second), so that a controller's packet-out storm
// into a full zone cannot flood the log.
var execWarnLimit struct {
	mu     sync.Mutex
	second int64
	n      int
}

// warnAllowed reports whether another ExecuteError may be logged now.
func warnAllowed(now time.Time) bool {
	l := &execWarnLimit
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := now.Unix(); s != l.second {
		l.second, l.n = s, 0
	}
	l.n++
	return l.n <= 5
}
