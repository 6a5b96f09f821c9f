package vswitchd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ofproto/openflow"
	"github.com/govswitch/govswitch/ovsdb"
)

// OVSDB-driven configuration: bridges and ports added and removed at
// runtime as ovsdb-server's tables change (see package ovsdb). The daemon
// then has no flag-configured bridge; ovs-vsctl is the way to configure it.

// SplitOVSDBArgs takes the OVSDB remote out of a govswitchd command line,
// before ParseArgs sees the rest. It accepts "--ovsdb REMOTE",
// "--ovsdb=REMOTE", and a bare "unix:PATH" / "tcp:IP:PORT" argument as
// ovs-vswitchd takes its database. remote is "" when none was given.
func SplitOVSDBArgs(args []string) (remote string, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--ovsdb":
			if i+1 >= len(args) {
				return "", nil, errors.New("--ovsdb needs a value, such as " + ovsdb.DefaultRemote)
			}
			i++
			remote = args[i]
		case strings.HasPrefix(a, "--ovsdb="):
			remote = strings.TrimPrefix(a, "--ovsdb=")
		case strings.HasPrefix(a, "unix:") || strings.HasPrefix(a, "tcp:"):
			remote = a
		default:
			rest = append(rest, a)
		}
	}
	if remote != "" && !strings.HasPrefix(remote, "unix:") && !strings.HasPrefix(remote, "tcp:") && !strings.HasPrefix(remote, "ssl:") {
		return "", nil, fmt.Errorf("--ovsdb %q: want unix:PATH, tcp:IP:PORT or ssl:IP:PORT", remote)
	}
	return remote, rest, nil
}

// NewForOVSDB is New for a daemon configured from ovsdb-server: cfg needs
// no bridge (flag-configured bridges are refused: the database owns the
// bridges), and everything else in cfg is checked and used as New does.
// Call RunOVSDB, not Run.
func NewForOVSDB(cfg Config, provider datapath.Provider, logOut io.Writer) (*Daemon, error) {
	if len(cfg.Bridges) > 0 {
		return nil, errors.New("--bridge and --ovsdb exclude each other: with --ovsdb, add bridges with ovs-vsctl add-br")
	}
	// The remote itself is given to RunOVSDB; validate with the default.
	if cfg.OVSDB == "" {
		cfg.OVSDB = ovsdb.DefaultRemote
	}
	return New(cfg, provider, logOut)
}

// RunOVSDB starts the daemon (ovs-appctl socket, pidfile) with no bridge,
// connects to the ovsdb-server at remote and keeps the bridges and ports
// configured from it, until ctx ends or Exit is called. Then it stops the
// OpenFlow connections and the daemon; datapaths are left in place, as by
// Stop. A failure to reach the database at start is returned.
func (d *Daemon) RunOVSDB(ctx context.Context, remote string) error {
	if err := d.Start(); err != nil {
		return err
	}
	sw := newOVSDBSwitch(d)
	m := ovsdb.NewMonitor(sw, remote)
	if strings.HasPrefix(remote, "ssl:") {
		tc, err := ofproto.ClientTLSConfig(d.cfg.SSLPrivateKey, d.cfg.SSLCertificate, d.cfg.SSLCACert)
		if err != nil {
			d.teardown()
			return fmt.Errorf("database %s: %w", remote, err)
		}
		m.TLS = tc
	}
	idl := d.moduleLogger("reconnect")
	m.Logf = func(l slog.Level, format string, args ...any) { idl.Log(ctx, l, fmt.Sprintf(format, args...)) }
	m.ConfigLogf = func(l slog.Level, format string, args ...any) { d.log.Log(ctx, l, fmt.Sprintf(format, args...)) }
	m.OnReconciled = d.ready
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(mctx) }()
	var err error
	ran := false
	select {
	case <-ctx.Done():
	case <-d.exit:
	case err = <-done:
		ran = true
	}
	cancel()
	if !ran {
		err = <-done
	}
	if err != nil {
		d.teardown() // the caller reports err; "stopped" would come first
		return err
	}
	d.Stop()
	return nil
}

// ovsdbSwitch is the ovsdb.Switch of a daemon. Its methods run on the
// monitor's goroutine only. The bridges it starts, with their connection
// managers, are the daemon's, like flag-configured ones.
type ovsdbSwitch struct {
	d      *Daemon
	global ovsdb.Global
	// qos and policing are what is applied to each interface (qos.go).
	qos      map[string]ovsdb.QoSConfig
	policing map[string]ovsdb.Policing
	// stp is each bridge's applied spanning tree (appctl_stp.go).
	stp map[string]stpApplied
	// heldCtl are the bridges built without their controllers while
	// flow-restore-wait was true, with the configuration to rebuild
	// them with (flowrestore.go).
	heldCtl map[string]ovsdb.BridgeConfig
	// status is StatusChanged's: the bridges' SetStatusChanged poke it.
	status chan struct{}
	// rstp is each bridge's applied rapid spanning tree (appctl_rstp.go).
	rstp map[string]rstpApplied
}

func newOVSDBSwitch(d *Daemon) *ovsdbSwitch {
	return &ovsdbSwitch{d: d, status: make(chan struct{}, 1)}
}

var (
	_ ovsdb.Switch         = (*ovsdbSwitch)(nil)
	_ ovsdb.StatusNotifier = (*ovsdbSwitch)(nil)
)

// StatusChanged is readable after a bridge said its status changed
// (a bond member's lacp_current).
func (s *ovsdbSwitch) StatusChanged() <-chan struct{} { return s.status }

func (s *ovsdbSwitch) statusPoke() {
	select {
	case s.status <- struct{}{}:
	default:
	}
}

// AddBridge opens or creates the datapath called cfg.Name and starts a
// bridge on it, with its OpenFlow connection manager (mgmt socket
// <rundir>/<bridge>.mgmt, cfg's controllers and protocols).
func (s *ovsdbSwitch) AddBridge(cfg *ovsdb.BridgeConfig, g ovsdb.Global) error {
	if s.d.Bridge(cfg.Name) != nil {
		return s.ReconfigureBridge(cfg, g)
	}
	// A datapath reattached after a restart keeps its ports: give them
	// the numbers the database has for them, so OpenFlow flows and
	// controllers see the same ports as before.
	ofports := map[string]uint32{}
	for _, p := range cfg.Ports {
		if p.OFPortRequest != 0 {
			ofports[p.Name] = p.OFPortRequest
		} else if p.OFPortHint != 0 {
			ofports[p.Name] = p.OFPortHint
		}
	}
	return s.build(cfg, g, ofports)
}

// ReconfigureBridge rebuilds the bridge's OpenFlow side over the same
// datapath: the datapath, its ports, their OpenFlow numbers and the
// kernel's flows stay; OpenFlow flows and learned MACs start afresh, as
// when ovs-vswitchd flushes a bridge whose fail mode or controller set
// changes. Used for fail_mode, controllers, protocols and the MAC table
// settings, which the running bridge cannot change in place.
func (s *ovsdbSwitch) ReconfigureBridge(cfg *ovsdb.BridgeConfig, g ovsdb.Global) error {
	b := s.d.Bridge(cfg.Name)
	if b == nil {
		return s.build(cfg, g, nil)
	}
	ofports := map[string]uint32{}
	for _, p := range b.Ports.Snapshot().List() {
		ofports[p.Name] = p.OFPort
	}
	s.d.takeDown(cfg.Name)
	// The kernel's flows were translated under the old settings (a
	// secure bridge must not keep forwarding by its standalone flows):
	// start the new bridge from an empty datapath flow table.
	if err := b.Backer.FlushBridge(b); err != nil {
		s.d.log.Error("flushing datapath flows for reconfiguration", "bridge", cfg.Name, "err", err)
	}
	return s.build(cfg, g, ofports)
}

// DeleteBridge stops the bridge and deletes its datapath ports (and the
// datapath with the last bridge), as ovs-vswitchd does on del-br. A
// bridge whose reconfiguration failed is not running but may still have
// its internal port.
func (s *ovsdbSwitch) DeleteBridge(name string) error {
	if err := s.d.destroyBridge(s.d.takeDown(name), name); err != nil {
		return fmt.Errorf("bridge %s: %w", name, err)
	}
	return nil
}

// build opens (or creates) the datapath and starts the bridge, through
// the daemon's one bridge builder. ofports, when not nil, gives ports the
// datapath already has their former OpenFlow numbers (NewBridge numbers
// them as the datapath does).
func (s *ovsdbSwitch) build(cfg *ovsdb.BridgeConfig, g ovsdb.Global, ofports map[string]uint32) error {
	setup := bridgeSetup{Name: cfg.Name, FailMode: cfg.FailMode, Protocols: cfg.Protocols,
		Handlers: g.Handlers, FlowLimit: g.FlowLimit, MaxIdle: g.MaxIdle, Governor: g.Governor,
		MACTableSize: cfg.MACTableSize, MACAging: cfg.MACAging, Lenient: true,
		Prepare: func(b *ofproto.Bridge) { renumber(b, ofports); b.SetStatusChanged(s.statusPoke) }}
	for _, c := range cfg.Controllers {
		// As with ovs-vswitchd, a controller the switch cannot use
		// costs that controller, not the bridge.
		switch {
		case strings.HasPrefix(c.Target, "tcp:"), strings.HasPrefix(c.Target, "unix:"):
			setup.Controllers = append(setup.Controllers, c.Target)
		case strings.HasPrefix(c.Target, "ptcp:"), strings.HasPrefix(c.Target, "punix:"):
			setup.Listeners = append(setup.Listeners, c.Target) // a passive controller target is a listener
		case (strings.HasPrefix(c.Target, "ssl:") || strings.HasPrefix(c.Target, "pssl:")) && !s.d.hasTLS():
			s.d.log.Warn("controller target needs -p/--private-key, -c/--certificate and -C/--ca-cert on the command line (the SSL table is not read); ignored",
				"bridge", cfg.Name, "target", c.Target)
			continue
		case strings.HasPrefix(c.Target, "ssl:"):
			setup.Controllers = append(setup.Controllers, c.Target)
		case strings.HasPrefix(c.Target, "pssl:"):
			setup.Listeners = append(setup.Listeners, c.Target)
		default:
			s.d.log.Warn("controller target not supported (tcp:, ssl:, unix:, ptcp:, pssl: and punix: are); ignored",
				"bridge", cfg.Name, "target", c.Target)
			continue
		}
		// One probe interval and backoff per bridge: the smallest asked.
		if c.ProbeInterval > 0 && (setup.ProbeInterval == 0 || c.ProbeInterval < setup.ProbeInterval) {
			setup.ProbeInterval = c.ProbeInterval
		}
		if c.MaxBackoff > 0 && (setup.MaxBackoff == 0 || c.MaxBackoff < setup.MaxBackoff) {
			setup.MaxBackoff = c.MaxBackoff
		}
	}
	delete(s.heldCtl, cfg.Name)
	if len(cfg.Controllers) > 0 && s.d.flowRestoreWaiting() {
		// As ovs-vswitchd: no controller (active or passive) may change
		// the tables while they are restored; SetGlobal brings them in.
		if s.heldCtl == nil {
			s.heldCtl = map[string]ovsdb.BridgeConfig{}
		}
		s.heldCtl[cfg.Name] = *cfg
		setup.Controllers, setup.Listeners = nil, nil
		s.d.log.Info("flow-restore-wait: not connecting the bridge's controllers until it is false", "bridge", cfg.Name)
	}
	return s.d.bringUp(setup)
}

// connectHeldControllers rebuilds the bridges whose controllers
// flow-restore-wait held back, now with them. Like ovs-vswitchd, whose
// bridge going from no controller to some flushes its OpenFlow tables,
// the rebuilt bridge starts with empty tables: its controllers fill them.
func (s *ovsdbSwitch) connectHeldControllers(g ovsdb.Global) {
	for _, name := range slices.Sorted(maps.Keys(s.heldCtl)) {
		cfg := s.heldCtl[name]
		delete(s.heldCtl, name)
		if s.d.Bridge(name) == nil {
			continue
		}
		if err := s.ReconfigureBridge(&cfg, g); err != nil {
			s.d.log.Error("flow-restore-wait done: connecting the bridge's controllers", "bridge", name, "err", err)
		}
	}
}

// renumber gives the bridge's ports the OpenFlow numbers in ofports
// (by name), before the bridge starts.
func renumber(b *ofproto.Bridge, ofports map[string]uint32) {
	for _, p := range b.Ports.Snapshot().List() {
		want, ok := ofports[p.Name]
		if !ok || want == p.OFPort || b.Ports.Snapshot().ByOF(want) != nil {
			continue
		}
		np := *p
		np.OFPort = want
		b.Ports.Remove(p.OFPort)
		if err := b.Ports.Add(np); err != nil {
			b.Ports.Add(*p) // keep the port, under its old number
		}
	}
}

// AddPort adds the device to the bridge, as OpenFlow port
// p.OFPortRequest when set (a requested number another port holds is an
// error rather than a silent renumbering of either port), else as the
// number the database remembers when it is free.
func (s *ovsdbSwitch) AddPort(bridge string, p *ovsdb.PortConfig) error {
	b := s.d.Bridge(bridge)
	if b == nil {
		return fmt.Errorf("bridge %s: not running", bridge)
	}
	ofport := p.OFPortRequest
	if ofport != 0 {
		if q := b.Ports.Snapshot().ByOF(ofport); q != nil {
			return fmt.Errorf("ofport_request %d is already OpenFlow port %d (%s)", ofport, q.OFPort, q.Name)
		}
	} else if p.OFPortHint != 0 && b.Ports.Snapshot().ByOF(p.OFPortHint) == nil {
		ofport = p.OFPortHint
	}
	v, err := portVLAN(&p.VLAN)
	if err != nil {
		return err
	}
	switch {
	case p.Type == ofproto.PortTypePatch:
		_, err = b.AddPatchPort(p.Name, p.Peer, ofport, v)
	case p.Type == datapath.TunnelBareUDP || p.Type == datapath.TunnelGTPU:
		return s.refuseTunnel(b, p) // tunnel_probe.go
	case ofproto.IsTunnelType(p.Type):
		err = addTunnelPort(b, p, ofport, v) // tunnel.go
	default:
		_, err = b.AddPortVLAN(p.Name, p.Type, ofport, v)
	}
	if err != nil {
		return err
	}
	if p.Bond != "" {
		b.HoldForBond(p.Name, p.Bond) // carries nothing until SetBonds (ofproto/bond_hold.go)
	}
	s.invalidate(b)
	return nil
}

// SetPortVLAN applies the port's VLAN columns; a change re-translates
// every datapath flow now, as a port change does.
func (s *ovsdbSwitch) SetPortVLAN(bridge string, p *ovsdb.PortConfig) (bool, error) {
	b := s.d.Bridge(bridge)
	if b == nil {
		return false, fmt.Errorf("bridge %s: not running", bridge)
	}
	v, err := portVLAN(&p.VLAN)
	if err != nil {
		return false, err
	}
	pt := portByName(b, p.Name)
	if pt == nil {
		return false, fmt.Errorf("port %s: %w", p.Name, ofproto.ErrNoPort)
	}
	if pt.VLAN.Equal(&v) {
		return false, nil
	}
	if err := b.SetPortVLAN(p.Name, v); err != nil {
		return false, err
	}
	s.invalidate(b)
	return true, nil
}

// portVLAN turns the database's VLAN columns into the port's setting.
func portVLAN(c *ovsdb.VLANConfig) (ofproto.PortVLAN, error) {
	tag := -1
	if c.HasTag {
		tag = c.Tag
	}
	v, err := ofproto.NewPortVLAN(c.Mode, tag, c.Trunks)
	if err == nil {
		err = v.SetTunnel(c.CVLANs, c.QinQEthtype) // dot1q-tunnel only
	}
	v.PriorityTags = ofproto.ParsePriorityTags(c.PriorityTags)
	return v, err
}

func portByName(b *ofproto.Bridge, name string) *ofproto.Port {
	for _, pt := range b.Ports.Snapshot().List() {
		if pt.Name == name {
			return pt
		}
	}
	return nil
}

// DeletePort removes the port from the bridge and the datapath.
func (s *ovsdbSwitch) DeletePort(bridge, port string) error {
	b := s.d.Bridge(bridge)
	if b == nil {
		return fmt.Errorf("bridge %s: not running", bridge)
	}
	if err := b.DeletePort(port); err != nil {
		return err
	}
	s.invalidate(b)
	return nil
}

// invalidate makes the bridge's revalidator translate every datapath
// flow again, and runs it, after a port change: flows that flooded to the
// old set of ports, or output to a removed one, must follow the new set.
// It re-translates now rather than within the revalidator's interval, so
// that when ovs-vsctl returns (after cur_cfg) the datapath's flows already
// follow the new ports.
func (s *ovsdbSwitch) invalidate(b *ofproto.Bridge) {
	b.Tables.Invalidate()
	b.Udpif.Revalidate()
}

// ofppLocal is OFPP_LOCAL as the database stores ofport: OpenFlow 1.0's
// 16-bit number.
const ofppLocal = 65534

// Ports reports the bridge's ports. Device state (ifindex, MAC, up/down)
// comes from the host's network device of the port's name, and is not
// reported on the in-memory datapath, whose devices are not the host's.
func (s *ovsdbSwitch) Ports(bridge string) ([]ovsdb.PortState, error) {
	b := s.d.Bridge(bridge)
	if b == nil {
		return nil, fmt.Errorf("bridge %s: not running", bridge)
	}
	_, inMemory := s.d.provider.(*dummy.Provider)
	list := b.Ports.Snapshot().List()
	out := make([]ovsdb.PortState, 0, len(list))
	for _, p := range list {
		ps := ovsdb.PortState{Name: p.Name, Type: p.Type, OFPort: p.OFPort, Peer: p.Peer, Tunnel: tunnelOptionsText(p)}
		if cur, ok := b.LACPCurrent(p.Name); ok {
			ps.LACPCurrent = &cur
		}
		if p.OFPort == openflow.PortLocal {
			ps.OFPort = ofppLocal
		}
		if !inMemory && !p.IsPatch() && !p.IsTunnel() {
			if ifc, err := net.InterfaceByName(p.Name); err == nil {
				ps.Known = true
				ps.IfIndex = ifc.Index
				ps.MAC = ifc.HardwareAddr
				ps.AdminUp = ifc.Flags&net.FlagUp != 0
				ps.LinkUp = ifc.Flags&net.FlagRunning != 0
			}
		}
		out = append(out, ps)
	}
	return out, nil
}

// DatapathID returns the bridge's OpenFlow datapath id.
func (s *ovsdbSwitch) DatapathID(bridge string) (uint64, error) {
	b := s.d.Bridge(bridge)
	if b == nil {
		return 0, fmt.Errorf("bridge %s: not running", bridge)
	}
	return b.DatapathID(), nil
}

// SetGlobal records the Open_vSwitch other_config knobs. flow-limit
// applies to running bridges at once, as ovs-appctl upcall/set-flow-limit
// does (the revalidator's dynamic limit then moves under the cap the
// bridge started with). n-handler-threads, max-idle and
// govswitch-governor configure the upcall handlers of the datapath all
// bridges share: they apply when it is next opened (restart govswitchd,
// or once every bridge is gone).
func (s *ovsdbSwitch) SetGlobal(g ovsdb.Global) {
	old := s.global
	s.global = g
	s.d.setFlowRestoreWait(g.FlowRestoreWait)
	if len(s.heldCtl) > 0 && !s.d.flowRestoreWaiting() {
		s.connectHeldControllers(g)
	}
	if g.FlowLimit > 0 && g.FlowLimit != old.FlowLimit {
		for _, b := range s.d.Bridges() {
			b.Udpif.SetFlowLimit(g.FlowLimit)
		}
	}
	if g.VLANLimit != old.VLANLimit {
		// Every translation sees the new number of tags: re-translate
		// the datapath's flows now.
		ofproto.SetVLANLimit(g.VLANLimit)
		for _, b := range s.d.Bridges() {
			s.invalidate(b)
		}
	}
	if len(s.d.Bridges()) > 0 && (g.Handlers != old.Handlers || g.MaxIdle != old.MaxIdle ||
		(g.Governor == nil) != (old.Governor == nil) || g.Governor != nil && *g.Governor != *old.Governor) {
		s.d.log.Warn("other_config changed: n-handler-threads, max-idle and govswitch-governor apply when the datapath ovs-system is next opened; restart govswitchd to apply them now")
	}
}

// SetCTZoneTimeouts applies the database's conntrack zone timeout
// policies (ovs-vsctl add-zone-tp) to the kernel and the datapath's
// translations.
func (s *ovsdbSwitch) SetCTZoneTimeouts(zones map[uint16]map[string]uint32) error {
	if len(zones) > 0 {
		if _, inMemory := s.d.provider.(*dummy.Provider); inMemory {
			return errors.New("the in-memory datapath has no conntrack timeout policies")
		}
	}
	return s.d.ctZones.Set(zones, s.d.Backer())
}

// hasTLS reports whether the command line gave the TLS files that ssl:
// and pssl: targets need.
func (d *Daemon) hasTLS() bool {
	return d.cfg.SSLPrivateKey != "" && d.cfg.SSLCertificate != "" && d.cfg.SSLCACert != ""
}
