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
	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/unixctl"
	"golang.org/x/sys/unix"
)

// Version is the daemon's version line, as ovs-appctl version prints it.
const Version = "govswitchd (govswitch) 0.1.0"

// Daemon is a running switch: its bridges, their datapaths, and the
// control socket.
type Daemon struct {
	cfg      Config
	log      *slog.Logger
	level    *slog.LevelVar // changed by vlog/set
	provider datapath.Provider

	mu      sync.Mutex
	bridges []*ofproto.Bridge
	byName  map[string]*ofproto.Bridge
	conns   map[string]*ofproto.ConnManager // flag-configured bridges' OpenFlow connections
	exiting bool                            // set by Cleanup: no bridge comes up any more
	routes  userRoutes                      // ovs/route/add's routes

	ctl         *unixctl.Server
	pidfile     *unixctl.Pidfile
	metrics     *metricsServer // nil unless --metrics
	metricsAddr string
	exit        chan struct{}
	once        sync.Once
}

// New checks cfg and prepares a daemon. provider may be nil: then
// cfg.Datapath chooses the kernel module or a fresh in-memory datapath.
// Logs go to logOut (stderr when nil).
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
	if logOut == nil {
		logOut = os.Stderr
	}
	lv := new(slog.LevelVar)
	level, _ := parseLevel(cfg.LogLevel)
	lv.Set(level)
	d := &Daemon{
		cfg: cfg, provider: provider, level: lv,
		log:    slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: lv})),
		byName: map[string]*ofproto.Bridge{}, conns: map[string]*ofproto.ConnManager{}, exit: make(chan struct{}),
	}
	return d, nil
}

func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug", "dbg":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error", "err":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
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
		pf, err := unixctl.CreatePidfile(d.cfg.Pidfile)
		if err != nil {
			return err
		}
		d.pidfile = pf
	}
	for _, spec := range d.cfg.Bridges {
		if err := d.startBridge(spec); err != nil {
			d.Stop()
			return err
		}
	}
	d.ctl = unixctl.NewServer(Version)
	d.registerCommands()
	if err := d.ctl.Listen(unixctl.SocketPath(d.cfg.Rundir, "ovs-vswitchd", os.Getpid())); err != nil {
		d.Stop()
		return err
	}
	if d.cfg.Metrics != "" {
		if err := d.startMetrics(d.cfg.Metrics); err != nil {
			d.Stop()
			return err
		}
	}
	d.log.Info("govswitchd started", "datapath", d.cfg.Datapath, "bridges", len(d.cfg.Bridges),
		"handlers", d.cfg.Handlers, "governor", d.cfg.Governor, "megaflows", !d.cfg.DisableMegaflows,
		"scheduling", d.cfg.Scheduling)
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
	dpcfg := datapath.Config{Handlers: or(s.Handlers, d.cfg.Handlers)}
	dp, err := d.provider.Open(s.Name, dpcfg)
	reattached := err == nil
	if errors.Is(err, os.ErrNotExist) {
		dp, err = d.provider.Create(s.Name, dpcfg)
	}
	if err != nil {
		return fmt.Errorf("bridge %s: datapath: %w (is the openvswitch module loaded? try modprobe openvswitch)", s.Name, err)
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
	b, err := ofproto.NewBridge(ofproto.BridgeConfig{Name: s.Name, FailMode: fail,
		HasControllers: len(s.Controllers) > 0, MaxFlows: d.cfg.MaxFlows, MACTableSize: or(s.MACTableSize, d.cfg.MACTableSize),
		MACAging: or(s.MACAging, d.cfg.MACAging), Upcall: up}, dp)
	if err != nil {
		dp.Close()
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
			dp.Close()
			return fmt.Errorf("bridge %s: %w", s.Name, err)
		}
	}
	b.Udpif.OnGovernorGeneration = func(g governor.Generation) {
		d.log.Info("governor generation ended", "bridge", s.Name, "packets", g.Packets,
			"seconds", g.Elapsed.Seconds(), "size", g.NewSize, "hashes", g.Flows, "setups", g.Setups,
			"shortcuts", g.Shortcuts)
	}
	// The connection manager hooks packet-ins, port status and flow
	// removal into the bridge: it must exist before the bridge starts.
	cc := ofproto.ConnConfig{Rundir: d.cfg.Rundir, Controllers: s.Controllers, Listeners: s.Listeners,
		Protocols: s.Protocols, ProbeInterval: s.ProbeInterval, MaxBackoff: s.MaxBackoff, Logger: d.log,
		SSLPrivateKey: d.cfg.SSLPrivateKey, SSLCertificate: d.cfg.SSLCertificate, SSLCACert: d.cfg.SSLCACert}
	cm, err := ofproto.NewConnManager(b, cc)
	if err != nil && s.Lenient && (len(cc.Controllers) > 0 || len(cc.Listeners) > 0) {
		d.log.Warn("controllers not usable; running the bridge without them", "bridge", s.Name, "err", err)
		cc.Controllers, cc.Listeners = nil, nil
		cm, err = ofproto.NewConnManager(b, cc)
	}
	if err != nil {
		dp.Close()
		return err
	}
	b.Start()
	if err := cm.Start(); err != nil {
		b.Stop()
		dp.Close()
		return err
	}
	d.mu.Lock()
	if d.exiting {
		// Cleanup ran while this bridge came up: it must not outlive it.
		d.mu.Unlock()
		cm.Close()
		b.Stop()
		dp.Close()
		d.provider.Delete(s.Name)
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
	for _, b := range d.Bridges() {
		b.Stop()
		b.DP.Close()
	}
	if d.pidfile != nil {
		d.pidfile.Remove()
		d.pidfile = nil
	}
	d.log.Info("govswitchd stopped")
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
