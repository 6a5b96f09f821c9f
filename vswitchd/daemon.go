package vswitchd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/govswitch/govswitch/datapath/kernel"
	"github.com/govswitch/govswitch/governor"
	"github.com/govswitch/govswitch/internal/vlog"
	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/unixctl"
	"golang.org/x/sys/unix"
)

// Version is the daemon's version line, as ovs-appctl version prints it.
const Version = "govswitchd (govswitch) 0.1.0"

// VersionCompat is the second line of --version: the ovs-vswitchd whose
// interface govswitchd takes. ovs-ctl reads the version it records in the
// database (ovs_version) from the --version line that says "Open
// vSwitch", and fails to start anything without one.
const VersionCompat = "in place of ovs-vswitchd (Open vSwitch) 3.1.0"

// Daemon is a running switch: its bridges, their datapaths, and the
// control socket.
type Daemon struct {
	cfg      Config
	vlog     *vlog.Log    // levels and destinations, vlog/set
	log      *slog.Logger // module "bridge"
	provider datapath.Provider
	qos      qosState // the applied QoS, for qos/show (appctl_qos.go)

	// OnReady, if set, is called once the daemon is serving: pidfile
	// written, control socket listening and, from a database, the first
	// configuration applied (what --detach waits for).
	OnReady   func()
	readyOnce sync.Once
	probeLog  sync.Once // logProbes: the datapath's features, once

	mu      sync.Mutex
	bridges []*ofproto.Bridge
	byName  map[string]*ofproto.Bridge
	conns   map[string]*ofproto.ConnManager // flag-configured bridges' OpenFlow connections
	exiting bool                            // set by Cleanup: no bridge comes up any more
	routes  userRoutes                      // ovs/route/add's routes
	neigh   neighCache                      // tnl/neigh/set's entries (tnl_neigh.go)

	// bkMu guards backer, the datapath all bridges share (ovs-system),
	// open while a bridge is on it.
	bkMu sync.Mutex
	// ctZones are the conntrack zones' timeout policies, which outlive a
	// datapath (the kernel keeps them per network namespace).
	ctZones ofproto.CTZoneTimeouts
	backer  *ofproto.Backer
	// frw is other_config:flow-restore-wait's state, under bkMu (flowrestore.go).
	frw flowRestore

	ctl         *unixctl.Server
	pidfile     *unixctl.Pidfile
	metrics     *metricsServer // nil unless --metrics
	metricsAddr string
	exit        chan struct{}
	once        sync.Once
}

// New checks cfg and prepares a daemon. provider may be nil: then
// cfg.Datapath chooses the kernel module or a fresh in-memory datapath.
// Console log lines go to logOut; when it is nil the daemon logs as
// ovs-vswitchd does, to stderr and to syslog (cfg.SyslogMethod), so tests
// that pass a writer send nothing to the host's syslog. cfg.LogFile is
// opened here, so that a bad path fails before the daemon detaches.
func New(cfg Config, provider datapath.Provider, logOut io.Writer) (*Daemon, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if provider == nil {
		if cfg.Datapath == "dummy" {
			provider = dummy.New()
		} else {
			provider = kernel.Provider{}
		}
	}
	vl, err := newVlog(cfg, logOut)
	if err != nil {
		return nil, err
	}
	d := &Daemon{
		cfg: cfg, provider: provider, vlog: vl, log: vl.Logger("bridge"),
		byName: map[string]*ofproto.Bridge{}, conns: map[string]*ofproto.ConnManager{}, exit: make(chan struct{}),
	}
	ofproto.SetXlateLog(vl.Logger("ofproto_dpif_xlate")) // NORMAL's dropped-VLAN warnings
	return d, nil
}

// ready calls OnReady the first time, then logs that the daemon started:
// as ovs-vswitchd's version line, after a detached daemon has left the
// terminal, so that what --detach prints on stderr is only what came
// before (OVS's test macros check that stderr, filtering known lines).
func (d *Daemon) ready() {
	d.readyOnce.Do(func() {
		d.pruneVports()
		if d.OnReady != nil {
			d.OnReady()
		}
		d.log.Info(Version+" started", "datapath", d.cfg.Datapath, "bridges", len(d.Bridges()),
			"handlers", d.cfg.Handlers, "governor", d.cfg.Governor, "megaflows", !d.cfg.DisableMegaflows,
			"scheduling", d.cfg.Scheduling)
	})
}

// Bridge returns the running bridge called name, or nil.
func (d *Daemon) Bridge(name string) *ofproto.Bridge {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.byName[name]
}

// Bridges returns the running bridges in configuration order.
func (d *Daemon) Bridges() []*ofproto.Bridge {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*ofproto.Bridge(nil), d.bridges...)
}

// Provider returns the datapath provider the daemon runs on (for tests on
// the in-memory datapath, which attach devices through it).
func (d *Daemon) Provider() datapath.Provider { return d.provider }

// Start opens or creates each bridge's datapath, adds its ports, starts
// its handlers, and serves ovs-appctl. A datapath left by an earlier run
// is reattached, not recreated, so its flows keep forwarding meanwhile.
func (d *Daemon) Start() error {
	if err := os.MkdirAll(d.cfg.Rundir, 0o755); err != nil {
		return fmt.Errorf("rundir %s: %w", d.cfg.Rundir, err)
	}
	if d.cfg.Pidfile != "-" {
		if d.cfg.OverwritePidfile {
			// Unlinking the file drops whoever holds its lock from
			// ovs-appctl's view; the new file is ours.
			os.Remove(d.cfg.Pidfile)
		}
		pf, err := unixctl.CreatePidfile(d.cfg.Pidfile)
		if err != nil {
			return err
		}
		d.pidfile = pf
	}
	for _, spec := range d.cfg.Bridges {
		if err := d.startBridge(spec); err != nil {
			d.teardown()
			return err
		}
	}
	d.ctl = unixctl.NewServer(Version)
	d.registerCommands()
	d.registerVlogCommands()
	sock := d.cfg.Unixctl
	if sock == "" {
		sock = unixctl.SocketPath(d.cfg.Rundir, "ovs-vswitchd", os.Getpid())
	}
	if err := d.ctl.Listen(sock); err != nil {
		d.teardown()
		return err
	}
	if d.cfg.Metrics != "" {
		if err := d.startMetrics(d.cfg.Metrics); err != nil {
			d.teardown()
			return err
		}
	}
	if d.cfg.OVSDB == "" {
		d.ready()
	}
	return nil
}

// bridgeSetup is what bringing a bridge up needs, however it was
// configured (flags or the database). Zero values take the daemon's.
type bridgeSetup struct {
	Name                      string
	FailMode                  string
	Controllers, Listeners    []string
	Protocols                 []uint8
	ProbeInterval, MaxBackoff time.Duration
	Handlers                  int
	FlowLimit                 int
	MaxIdle                   time.Duration
	Governor                  *bool
	MACTableSize              int
	MACAging                  time.Duration
	// Ports are devices ("dev[:type]") to add unless the datapath already
	// has them (a reattached datapath keeps its ports).
	Ports []string
	// Prepare, if set, runs on the bridge before it starts (renumbering
	// reattached ports, say).
	Prepare func(*ofproto.Bridge)
	// Lenient runs the bridge without its controllers and listeners when
	// they are unusable, as ovs-vswitchd does for database-configured
	// ones, instead of failing the bridge.
	Lenient bool
}

func (d *Daemon) startBridge(spec BridgeSpec) error {
	return d.bringUp(bridgeSetup{Name: spec.Name, FailMode: spec.FailMode, Controllers: spec.Controllers,
		Listeners: spec.Listeners, Ports: spec.Ports})
}

// bringUp opens the bridge's datapath (creating it if it does not exist:
// a restart reattaches instead of tearing traffic down), builds the bridge
// and its OpenFlow connection manager, adds missing ports, starts it all
// and registers the bridge with the daemon.
func (d *Daemon) bringUp(s bridgeSetup) error {
	d.mu.Lock()
	exiting := d.exiting
	d.mu.Unlock()
	if exiting {
		return fmt.Errorf("bridge %s: %w", s.Name, errExiting)
	}
	fail, err := ofproto.ParseFailMode(s.FailMode)
	if err != nil {
		return fmt.Errorf("bridge %s: %w", s.Name, err)
	}
	if d.cfg.DisableSystem && d.cfg.Datapath == "system" {
		return fmt.Errorf("bridge %s: system datapaths are disabled by --disable-system, and govswitchd has no other real datapath", s.Name)
	}
	bk, reattached, err := d.sharedBacker(s)
	if err != nil {
		return fmt.Errorf("bridge %s: datapath: %w", s.Name, err)
	}
	dp := bk.DP
	d.logProbes(dp)
	b, err := bk.AddBridge(ofproto.BridgeConfig{Name: s.Name, FailMode: fail,
		HasControllers: len(s.Controllers) > 0, MaxFlows: d.cfg.MaxFlows, MACTableSize: or(s.MACTableSize, d.cfg.MACTableSize),
		MACAging: or(s.MACAging, d.cfg.MACAging)})
	if err != nil {
		return err
	}
	if s.Prepare != nil {
		s.Prepare(b)
	}
	have := map[string]bool{}
	for _, p := range b.Ports.Snapshot().List() {
		have[p.Name] = true
	}
	for _, ps := range s.Ports {
		name, typ, _ := strings.Cut(ps, ":")
		if have[name] {
			continue
		}
		if _, err := b.AddPort(name, typ, 0); err != nil {
			b.Stop()
			return fmt.Errorf("bridge %s: %w", s.Name, err)
		}
	}
	// The connection manager hooks packet-ins, port status and flow
	// removal into the bridge: it must exist before the bridge starts.
	cc := ofproto.ConnConfig{Rundir: d.cfg.Rundir, Controllers: s.Controllers, Listeners: s.Listeners,
		Protocols: s.Protocols, ProbeInterval: s.ProbeInterval, MaxBackoff: s.MaxBackoff, Logger: d.moduleLogger("connmgr"),
		SSLPrivateKey: d.cfg.SSLPrivateKey, SSLCertificate: d.cfg.SSLCertificate, SSLCACert: d.cfg.SSLCACert}
	cm, err := ofproto.NewConnManager(b, cc)
	if err != nil && s.Lenient && (len(cc.Controllers) > 0 || len(cc.Listeners) > 0) {
		d.log.Warn("controllers not usable; running the bridge without them", "bridge", s.Name, "err", err)
		cc.Controllers, cc.Listeners = nil, nil
		cm, err = ofproto.NewConnManager(b, cc)
	}
	if err != nil {
		b.Stop()
		return err
	}
	b.Start()
	if err := cm.Start(); err != nil {
		b.Stop()
		return err
	}
	d.mu.Lock()
	if d.exiting {
		// Cleanup ran while this bridge came up: it must not outlive it.
		d.mu.Unlock()
		cm.Close()
		b.Stop()
		d.destroyBridge(b, s.Name)
		return fmt.Errorf("bridge %s: %w", s.Name, errExiting)
	}
	d.bridges = append(d.bridges, b)
	d.byName[s.Name] = b
	d.conns[s.Name] = cm
	d.mu.Unlock()
	d.log.Info("bridge up", "bridge", s.Name, "reattached", reattached, "fail_mode", fail,
		"controllers", len(cc.Controllers), "dispatch", dispatchMode(dp.Features()),
		"ports", len(b.Ports.Snapshot().List()))
	return nil
}

// takeDown closes a bridge's OpenFlow connections, stops its handlers and
// unregisters it, returning it; its datapath stays open for the caller.
func (d *Daemon) takeDown(name string) *ofproto.Bridge {
	d.mu.Lock()
	b, cm := d.byName[name], d.conns[name]
	delete(d.byName, name)
	delete(d.conns, name)
	for i, x := range d.bridges {
		if x == b {
			d.bridges = append(d.bridges[:i:i], d.bridges[i+1:]...)
			break
		}
	}
	d.mu.Unlock()
	if cm != nil {
		cm.Close()
	}
	if b != nil {
		b.Stop()
	}
	return b
}

// or returns v unless it is zero, then def.
func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func dispatchMode(f datapath.Features) string {
	if f.PerCPUDispatch {
		return "per-cpu"
	}
	return "per-vport"
}

// Exit asks Run to return (ovs-appctl exit).
func (d *Daemon) Exit() { d.once.Do(func() { close(d.exit) }) }

// Run starts the daemon, waits until ctx ends or Exit is called, and
// stops it.
func (d *Daemon) Run(ctx context.Context) error {
	// A process-wide setting, so it is made here, by the process's entry
	// point, not by Start (which tests call in their own process).
	if err := SetScheduling(d.cfg.Scheduling); err != nil {
		return err
	}
	if d.cfg.OVSDB != "" {
		return d.RunOVSDB(ctx, d.cfg.OVSDB)
	}
	if err := d.Start(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-d.exit:
	}
	d.Stop()
	return nil
}

// Stop stops handlers and revalidators and closes sockets. Datapaths,
// ports and flows are left in place: traffic keeps flowing in the kernel,
// and the next start reattaches.
func (d *Daemon) Stop() {
	d.teardown()
	d.log.Info("govswitchd stopped")
	d.vlog.Close() // the file and syslog; the console stays
}

// teardown is Stop without its log line: a start that failed has not
// run, so it does not say it stopped (the caller reports the error).
func (d *Daemon) teardown() {
	if d.ctl != nil {
		d.ctl.Close()
	}
	if d.metrics != nil {
		d.metrics.Close()
	}
	d.mu.Lock()
	conns := d.conns
	d.conns = map[string]*ofproto.ConnManager{}
	d.mu.Unlock()
	for _, cm := range conns {
		cm.Close()
	}
	// The handlers and the revalidator stop first: a bridge taken off a
	// running datapath has its flows deleted, and these must stay.
	d.bkMu.Lock()
	bk := d.backer
	d.backer = nil
	d.bkMu.Unlock()
	if bk != nil {
		bk.Stop()
	}
	for _, b := range d.Bridges() {
		b.Stop()
	}
	if bk != nil {
		bk.DP.Close()
	}
	if d.pidfile != nil {
		d.pidfile.Remove()
		d.pidfile = nil
	}
}

// Fatal logs err at EMER to the log file and syslog, for an error that
// ends the daemon (main prints it on stderr, so not to the console
// again), and closes the log.
func (d *Daemon) Fatal(err error) {
	d.vlog.Fatal("vswitchd", err.Error())
	d.vlog.Close()
}

// monotonicMillis returns CLOCK_MONOTONIC in milliseconds, the clock the
// kernel datapath reports flow use times in.
func monotonicMillis() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Sec*1000 + ts.Nsec/1e6
}

// Backer returns the datapath the bridges share, nil while there is none.
func (d *Daemon) Backer() *ofproto.Backer {
	d.bkMu.Lock()
	defer d.bkMu.Unlock()
	return d.backer
}

// sharedBacker returns the one datapath every bridge is on, ovs-system, as
// ovs-vswitchd has it: opened the first time a bridge needs it (an earlier
// run's, with its ports and flows, which the bridges then adopt, so traffic
// keeps flowing across a restart) or created, and its handlers started.
// The first bridge's setup sizes its handlers and flow limits.
// reattached says the datapath was an earlier run's.
func (d *Daemon) sharedBacker(s bridgeSetup) (bk *ofproto.Backer, reattached bool, err error) {
	d.bkMu.Lock()
	defer d.bkMu.Unlock()
	if d.backer != nil {
		return d.backer, true, nil
	}
	name := ofproto.SharedDatapathName
	dpcfg := datapath.Config{Handlers: or(s.Handlers, d.cfg.Handlers)}
	dp, err := d.provider.Open(name, dpcfg)
	reattached = err == nil
	if errors.Is(err, os.ErrNotExist) {
		dp, err = d.provider.Create(name, dpcfg)
	}
	if errors.Is(err, datapath.ErrNotSupported) {
		// The kernel provider's error already asks whether the module
		// is loaded; say what to do about it.
		return nil, false, fmt.Errorf("%w; try modprobe openvswitch", err)
	}
	if err != nil {
		return nil, false, err
	}
	up := ofproto.UpcallConfig{FlowLimit: or(s.FlowLimit, d.cfg.FlowLimit), MaxIdle: or(s.MaxIdle, d.cfg.MaxIdle),
		DisableMegaflows: d.cfg.DisableMegaflows, GovernorThreshold: d.cfg.GovernorThreshold}
	gov := d.cfg.Governor
	if s.Governor != nil {
		gov = *s.Governor
	}
	if gov {
		m, _ := governor.ParseMode(d.cfg.GovernorMode)
		up.Governor = &m
	}
	bk = ofproto.NewBacker(dp, up)
	bk.CTZones = &d.ctZones
	if _, inMemory := d.provider.(*dummy.Provider); !inMemory {
		bk.SetLinkUp = setLinkUp // the kernel datapath's ports are the host's devices
		bk.SetFlushCt(flushConntrackOF)
	}
	bk.Udpif.OnGovernorGeneration = func(g governor.Generation) {
		d.moduleLogger("ofproto_dpif_upcall").Info("governor generation ended", "datapath", name, "packets", g.Packets,
			"seconds", g.Elapsed.Seconds(), "size", g.NewSize, "hashes", g.Flows, "setups", g.Setups,
			"shortcuts", g.Shortcuts)
	}
	d.backer = bk
	if d.frw.wait && !d.frw.done {
		// The kernel's flows keep forwarding until the restore is done.
		d.frw.held = true
		d.log.Info("flow-restore-wait: keeping the datapath's flows, not handling upcalls until it is false", "datapath", name)
		return bk, reattached, nil
	}
	bk.Start()
	return bk, reattached, nil
}

// destroyBridge deletes a bridge's datapath ports, as ovs-vswitchd's del-br
// does, b having been taken down (b nil: a bridge not running, of which
// only the internal port named name can be found). When no bridge remains,
// the shared datapath goes too, as ovs-vswitchd deletes its backer's
// datapath with its last bridge.
func (d *Daemon) destroyBridge(b *ofproto.Bridge, name string) error {
	d.bkMu.Lock()
	defer d.bkMu.Unlock()
	bk := d.backer
	var errs []error
	if bk != nil {
		if b != nil {
			errs = append(errs, bk.RemoveBridge(b, true))
		} else if vp, err := bk.DP.Vport(name); err == nil && vp.PortNo != 0 && bk.Owner(vp.PortNo) == nil {
			errs = append(errs, bk.DP.DeleteVport(vp.PortNo))
		}
		if len(bk.Bridges()) > 0 {
			return errors.Join(errs...)
		}
		bk.Stop()
		bk.DP.Close()
		d.backer = nil
	}
	if err := d.provider.Delete(ofproto.SharedDatapathName); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("delete datapath %s: %w", ofproto.SharedDatapathName, err))
	} else if err == nil {
		d.log.Info("datapath deleted", "datapath", ofproto.SharedDatapathName)
	}
	return errors.Join(errs...)
}

// pruneVports deletes the ports of ovs-system that no bridge claimed once
// the first configuration is applied: an earlier run's ports of bridges
// or ports since removed from the configuration, as ovs-vswitchd deletes
// the datapath ports it finds no configuration for when it starts.
func (d *Daemon) pruneVports() {
	bk := d.Backer()
	if bk == nil {
		return
	}
	vps, err := bk.DP.Vports()
	if err != nil {
		d.log.Warn("listing the datapath's ports", "datapath", bk.DP.Name(), "err", err)
		return
	}
	for _, vp := range vps {
		if vp.PortNo == 0 || bk.Owner(vp.PortNo) != nil {
			continue
		}
		if err := bk.DP.DeleteVport(vp.PortNo); err != nil {
			d.log.Warn("deleting a datapath port no bridge has", "datapath", bk.DP.Name(), "port", vp.Name, "err", err)
			continue
		}
		d.log.Info("deleted a datapath port no bridge has", "datapath", bk.DP.Name(), "port", vp.Name)
	}
}
