package vswitchd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"

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

	ctl         *unixctl.Server
	pidfile     *unixctl.Pidfile
	metrics     *http.Server // nil unless --metrics
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
		"handlers", d.cfg.Handlers, "governor", d.cfg.Governor, "megaflows", !d.cfg.DisableMegaflows)
	return nil
}

func (d *Daemon) startBridge(spec BridgeSpec) error {
	dpcfg := datapath.Config{Handlers: d.cfg.Handlers}
	dp, err := d.provider.Open(spec.Name, dpcfg)
	reattached := err == nil
	if errors.Is(err, os.ErrNotExist) {
		dp, err = d.provider.Create(spec.Name, dpcfg)
	}
	if err != nil {
		return fmt.Errorf("bridge %s: datapath: %w (is the openvswitch module loaded? try modprobe openvswitch)", spec.Name, err)
	}
	fail, _ := ofproto.ParseFailMode(spec.FailMode)
	up := ofproto.UpcallConfig{FlowLimit: d.cfg.FlowLimit, MaxIdle: d.cfg.MaxIdle,
		DisableMegaflows: d.cfg.DisableMegaflows, GovernorThreshold: d.cfg.GovernorThreshold}
	if d.cfg.Governor {
		m, _ := governor.ParseMode(d.cfg.GovernorMode)
		up.Governor = &m
	}
	b, err := ofproto.NewBridge(ofproto.BridgeConfig{Name: spec.Name, FailMode: fail,
		HasControllers: len(spec.Controllers) > 0, MACTableSize: d.cfg.MACTableSize,
		MACAging: d.cfg.MACAging, Upcall: up}, dp)
	if err != nil {
		dp.Close()
		return err
	}
	have := map[string]bool{}
	for _, p := range b.Ports.Snapshot().List() {
		have[p.Name] = true
	}
	for _, ps := range spec.Ports {
		name, typ, _ := strings.Cut(ps, ":")
		if have[name] {
			continue // reattached: the datapath kept it
		}
		if _, err := b.AddPort(name, typ, 0); err != nil {
			dp.Close()
			return fmt.Errorf("bridge %s: %w", spec.Name, err)
		}
	}
	b.Udpif.OnGovernorGeneration = func(g governor.Generation) {
		d.log.Info("governor generation ended", "bridge", spec.Name, "packets", g.Packets,
			"seconds", g.Elapsed.Seconds(), "size", g.NewSize, "hashes", g.Flows, "setups", g.Setups,
			"shortcuts", g.Shortcuts)
	}
	// The connection manager hooks packet-ins, port status and flow
	// removal into the bridge: it must exist before the bridge starts.
	cm, err := ofproto.NewConnManager(b, ofproto.ConnConfig{Rundir: d.cfg.Rundir, Controllers: spec.Controllers,
		Listeners: spec.Listeners, Logger: d.log})
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
	d.bridges = append(d.bridges, b)
	d.byName[spec.Name] = b
	d.conns[spec.Name] = cm
	d.mu.Unlock()
	d.log.Info("bridge up", "bridge", spec.Name, "reattached", reattached,
		"dispatch", dispatchMode(dp.Features()), "ports", len(b.Ports.Snapshot().List()))
	return nil
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
