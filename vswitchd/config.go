// Package vswitchd is the govswitchd daemon: configuration, the datapath
// and bridges it runs, the ovs-appctl commands it answers, logging and
// shutdown. cmd/govswitchd is a thin main around it, so everything here is
// reachable from tests.
package vswitchd

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/govswitch/govswitch/governor"
	"github.com/govswitch/govswitch/ofproto"
)

// BridgeSpec is one bridge of the configuration.
type BridgeSpec struct {
	Name string `json:"name"`
	// Ports are network device names, optionally with a type after a
	// colon: "eth1", "vm0:internal".
	Ports       []string `json:"ports,omitempty"`
	Controllers []string `json:"controllers,omitempty"` // tcp:IP[:PORT], ssl:IP[:PORT], unix:PATH
	Listeners   []string `json:"listeners,omitempty"`   // ptcp:PORT[:IP], pssl:PORT[:IP] besides the punix mgmt socket
	FailMode    string   `json:"fail_mode,omitempty"`   // standalone (default) or secure
}

// Config is the daemon's configuration, from flags or a JSON file.
type Config struct {
	Datapath          string       `json:"datapath"` // "system" (the kernel module) or "dummy" (in memory)
	Bridges           []BridgeSpec `json:"bridges"`
	Governor          bool         `json:"governor,omitempty"`
	GovernorMode      string       `json:"governor_mode,omitempty"` // auto, always, never
	GovernorThreshold int          `json:"governor_threshold,omitempty"`
	Handlers          int          `json:"handlers,omitempty"`
	Revalidators      int          `json:"revalidators,omitempty"`
	FlowLimit         int          `json:"flow_limit,omitempty"`
	// MaxFlows bounds the OpenFlow flows of each bridge, all tables
	// together; an add beyond it fails with OFPFMFC_TABLE_FULL (1.3) or
	// ALL_TABLES_FULL (1.0). 0 means no limit.
	MaxFlows int `json:"max_flows,omitempty"`
	// SSLPrivateKey, SSLCertificate and SSLCACert are the PEM files of
	// ssl: controllers and pssl: listeners (ovs-vswitchd's -p, -c, -C).
	SSLPrivateKey    string        `json:"ssl_private_key,omitempty"`
	SSLCertificate   string        `json:"ssl_certificate,omitempty"`
	SSLCACert        string        `json:"ssl_ca_cert,omitempty"`
	MaxIdle          time.Duration `json:"max_idle,omitempty"`
	DisableMegaflows bool          `json:"disable_megaflows,omitempty"`
	MACTableSize     int           `json:"mac_table_size,omitempty"`
	MACAging         time.Duration `json:"mac_aging,omitempty"`
	Rundir           string        `json:"rundir,omitempty"`
	Pidfile          string        `json:"pidfile,omitempty"` // "" = <rundir>/ovs-vswitchd.pid; "-" = none
	LogLevel         string        `json:"log_level,omitempty"`
	// Metrics, when set, serves Prometheus metrics at http://ADDR/metrics
	// (host:port). Off by default.
	Metrics string `json:"metrics,omitempty"`
	// OVSDB, when set, is the ovsdb-server to take bridges and ports from
	// (unix:PATH or tcp:IP:PORT), as ovs-vswitchd does; Bridges must then
	// be empty: ovs-vsctl configures the switch.
	OVSDB string `json:"ovsdb,omitempty"`
	// Scheduling is the policy of the daemon's threads: "batch" (the
	// default, SCHED_BATCH: upcalls are taken in batches while the CPU is
	// busy) or "normal" (SCHED_OTHER). See SetScheduling.
	Scheduling string `json:"scheduling,omitempty"`
}

// Defaults.
const (
	DefaultRundir = "/var/run/openvswitch"
)

// withDefaults fills in what the user left out.
func (c Config) withDefaults() Config {
	if c.Datapath == "" {
		c.Datapath = "system"
	}
	if c.Handlers <= 0 {
		c.Handlers = runtime.NumCPU()
	}
	if c.Revalidators <= 0 {
		c.Revalidators = 1
	}
	if c.FlowLimit <= 0 {
		c.FlowLimit = ofproto.DefaultFlowLimit
	}
	if c.MaxIdle <= 0 {
		c.MaxIdle = ofproto.DefaultMaxIdle
	}
	if c.Rundir == "" {
		c.Rundir = DefaultRundir
	}
	if c.Pidfile == "" {
		c.Pidfile = c.Rundir + "/ovs-vswitchd.pid"
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.Scheduling == "" {
		c.Scheduling = SchedulingBatch
	}
	return c
}

// Validate checks the configuration for mistakes a user can fix, naming
// the offending setting.
func (c Config) Validate() error {
	switch c.Datapath {
	case "system", "dummy":
	default:
		return fmt.Errorf("--datapath %q: want system or dummy", c.Datapath)
	}
	switch c.Scheduling {
	case "", SchedulingBatch, SchedulingNormal:
	default:
		return fmt.Errorf("--scheduling %q: want batch or normal", c.Scheduling)
	}
	switch {
	case c.OVSDB != "" && len(c.Bridges) > 0:
		return errors.New("--bridge and --ovsdb exclude each other: with --ovsdb, add bridges with ovs-vsctl add-br")
	case c.OVSDB != "" && !strings.HasPrefix(c.OVSDB, "unix:") && !strings.HasPrefix(c.OVSDB, "tcp:"):
		return fmt.Errorf("--ovsdb %q: want unix:PATH or tcp:IP:PORT", c.OVSDB)
	case c.OVSDB == "" && len(c.Bridges) == 0:
		return errors.New("no bridge configured: give --bridge NAME (and --port DEV after it), or a database (--ovsdb unix:/var/run/openvswitch/db.sock)")
	}
	seen := map[string]bool{}
	for _, b := range c.Bridges {
		if b.Name == "" || len(b.Name) > 15 {
			return fmt.Errorf("bridge name %q: must be 1 to 15 characters (it names a network device)", b.Name)
		}
		if seen[b.Name] {
			return fmt.Errorf("bridge %s configured twice", b.Name)
		}
		seen[b.Name] = true
		if _, err := ofproto.ParseFailMode(b.FailMode); err != nil {
			return fmt.Errorf("bridge %s: %w", b.Name, err)
		}
		for _, t := range append(append([]string(nil), b.Controllers...), b.Listeners...) {
			if (strings.HasPrefix(t, "ssl:") || strings.HasPrefix(t, "pssl:")) &&
				(c.SSLPrivateKey == "" || c.SSLCertificate == "" || c.SSLCACert == "") {
				return fmt.Errorf("bridge %s: %s needs --ssl-private-key, --ssl-certificate and --ssl-ca-cert", b.Name, t)
			}
		}
		for _, p := range b.Ports {
			name, _, _ := strings.Cut(p, ":")
			if name == "" || len(name) > 15 {
				return fmt.Errorf("bridge %s: port %q: a device name is 1 to 15 characters", b.Name, p)
			}
			if seen["port:"+name] {
				return fmt.Errorf("port %s is on two bridges", name)
			}
			seen["port:"+name] = true
		}
	}
	if _, err := governor.ParseMode(c.GovernorMode); err != nil {
		return err
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return err
	}
	return nil
}

// LoadFile reads a JSON configuration file. Durations are Go durations
// in nanoseconds or strings such as "10s".
func LoadFile(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	var raw struct {
		Config
		MaxIdle  any `json:"max_idle"`
		MACAging any `json:"mac_aging"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	c := raw.Config
	if c.MaxIdle, err = jsonDuration(raw.MaxIdle); err != nil {
		return Config{}, fmt.Errorf("config %s: max_idle: %w", path, err)
	}
	if c.MACAging, err = jsonDuration(raw.MACAging); err != nil {
		return Config{}, fmt.Errorf("config %s: mac_aging: %w", path, err)
	}
	return c, nil
}

func jsonDuration(v any) (time.Duration, error) {
	switch v := v.(type) {
	case nil:
		return 0, nil
	case float64:
		return time.Duration(v), nil
	case string:
		return time.ParseDuration(v)
	}
	return 0, fmt.Errorf("want a duration such as \"10s\"")
}

// Usage is the daemon's help text.
const Usage = `usage: govswitchd [OPTIONS] [DATABASE]
A Go replacement for ovs-vswitchd over the Linux openvswitch datapath.
Configure it with flags (--bridge ...) or, as ovs-vswitchd, from
ovsdb-server: govswitchd unix:/var/run/openvswitch/db.sock, then ovs-vsctl.

  --datapath system|dummy   the kernel module (default) or an in-memory datapath
  --bridge NAME             add a bridge; --port and bridge options that follow apply to it
  --port DEV[:TYPE]         add device DEV (type system, or internal) to the last bridge
  --controller TARGET       tcp:IP[:PORT], ssl:IP[:PORT] or unix:PATH controller of the last bridge
  --listen TARGET           extra OpenFlow listener of the last bridge, ptcp:PORT[:IP] or pssl:PORT[:IP]
  --fail-mode MODE          standalone (default) or secure, for the last bridge
  --ovsdb REMOTE, DATABASE  take bridges and ports from ovsdb-server (unix:PATH or
                            tcp:IP:PORT); excludes --bridge
  --config FILE             read the configuration from a JSON file
  --governor                engage the flow-setup governor under many short flows
  --governor-mode MODE      auto (default), always (install every flow), never
  --governor-threshold N    installed flows that size engagement (default 2500)
  --handlers N              upcall handler threads (default: CPUs)
  --revalidators N          revalidator threads (default 1)
  --flow-limit N            datapath flow limit (default 200000)
  --max-flows N             OpenFlow flows per bridge, all tables (default 0: no limit)
  --ssl-private-key FILE    PEM private key for ssl:/pssl: (ovs-vswitchd -p)
  --ssl-certificate FILE    PEM certificate for ssl:/pssl: (ovs-vswitchd -c)
  --ssl-ca-cert FILE        PEM CA certificate peers must chain to (ovs-vswitchd -C)
  --max-idle DURATION       idle datapath flow lifetime (default 10s)
  --disable-megaflows       install exact-match datapath flows only
  --mac-table-size N        MAC learning table size (default 8192)
  --mac-aging DURATION      MAC learning entry lifetime (default 300s)
  --rundir DIR              sockets and pidfile (default /var/run/openvswitch)
  --pidfile FILE            pidfile (default RUNDIR/ovs-vswitchd.pid; - for none)
  --log-level LEVEL         debug, info, warn or error (default info)
  --metrics HOST:PORT       serve Prometheus metrics at http://HOST:PORT/metrics (off by default)
  --scheduling POLICY       batch (default: SCHED_BATCH, upcalls handled in batches while
                            the CPU is busy) or normal (SCHED_OTHER, as ovs-vswitchd)
  --version, --help
`

// ParseArgs parses the command line. Options that configure a bridge
// apply to the last --bridge before them.
func ParseArgs(args []string) (cfg Config, help, version bool, err error) {
	var cur *BridgeSpec
	needBridge := func(opt string) error {
		if cur == nil {
			return fmt.Errorf("%s must follow a --bridge", opt)
		}
		return nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		if strings.HasPrefix(a, "unix:") || strings.HasPrefix(a, "tcp:") {
			// ovs-vswitchd's DATABASE argument.
			cfg.OVSDB = a
			continue
		}
		if !strings.HasPrefix(name, "--") {
			return cfg, false, false, fmt.Errorf("unexpected argument %q (options start with --)", a)
		}
		name = name[2:]
		takes := map[string]bool{"datapath": true, "bridge": true, "port": true, "controller": true, "listen": true,
			"fail-mode": true, "config": true, "governor-mode": true, "governor-threshold": true, "handlers": true,
			"revalidators": true, "flow-limit": true, "max-idle": true, "mac-table-size": true, "mac-aging": true,
			"rundir": true, "pidfile": true, "log-level": true, "metrics": true, "ovsdb": true, "max-flows": true,
			"ssl-private-key": true, "ssl-certificate": true, "ssl-ca-cert": true, "scheduling": true}
		if takes[name] && !hasVal {
			if i+1 >= len(args) {
				return cfg, false, false, fmt.Errorf("--%s needs a value", name)
			}
			i++
			val = args[i]
		} else if !takes[name] && hasVal {
			return cfg, false, false, fmt.Errorf("--%s takes no value", name)
		}
		num := func() (int, error) {
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("--%s %q: want a non-negative number", name, val)
			}
			return n, nil
		}
		dur := func() (time.Duration, error) {
			d, err := time.ParseDuration(val)
			if err != nil {
				if n, nerr := strconv.Atoi(val); nerr == nil {
					return time.Duration(n) * time.Millisecond, nil // OVS gives these in ms
				}
				return 0, fmt.Errorf("--%s %q: want a duration such as 10s", name, val)
			}
			return d, nil
		}
		var e error
		switch name {
		case "help":
			return cfg, true, false, nil
		case "version":
			return cfg, false, true, nil
		case "datapath":
			cfg.Datapath = val
		case "bridge":
			cfg.Bridges = append(cfg.Bridges, BridgeSpec{Name: val})
			cur = &cfg.Bridges[len(cfg.Bridges)-1]
		case "port":
			if e = needBridge("--port"); e == nil {
				cur.Ports = append(cur.Ports, val)
			}
		case "controller":
			if e = needBridge("--controller"); e == nil {
				cur.Controllers = append(cur.Controllers, val)
			}
		case "listen":
			if e = needBridge("--listen"); e == nil {
				cur.Listeners = append(cur.Listeners, val)
			}
		case "fail-mode":
			if e = needBridge("--fail-mode"); e == nil {
				cur.FailMode = val
			}
		case "config":
			var fc Config
			if fc, e = LoadFile(val); e == nil {
				cfg = fc
				cur = nil
				if n := len(cfg.Bridges); n > 0 {
					cur = &cfg.Bridges[n-1]
				}
			}
		case "governor":
			cfg.Governor = true
		case "governor-mode":
			cfg.Governor, cfg.GovernorMode = true, val
		case "governor-threshold":
			cfg.GovernorThreshold, e = num()
		case "handlers":
			cfg.Handlers, e = num()
		case "revalidators":
			cfg.Revalidators, e = num()
		case "flow-limit":
			cfg.FlowLimit, e = num()
		case "max-flows":
			cfg.MaxFlows, e = num()
		case "ssl-private-key":
			cfg.SSLPrivateKey = val
		case "ssl-certificate":
			cfg.SSLCertificate = val
		case "ssl-ca-cert":
			cfg.SSLCACert = val
		case "max-idle":
			cfg.MaxIdle, e = dur()
		case "disable-megaflows":
			cfg.DisableMegaflows = true
		case "mac-table-size":
			cfg.MACTableSize, e = num()
		case "mac-aging":
			cfg.MACAging, e = dur()
		case "rundir":
			cfg.Rundir = val
		case "pidfile":
			cfg.Pidfile = val
		case "log-level":
			cfg.LogLevel = val
		case "metrics":
			cfg.Metrics = val
		case "ovsdb":
			cfg.OVSDB = val
		case "scheduling":
			cfg.Scheduling = val
		default:
			e = fmt.Errorf("unknown option --%s (see --help)", name)
		}
		if e != nil {
			return cfg, false, false, e
		}
		// Reslice after appends: cur must point into the current array.
		if n := len(cfg.Bridges); n > 0 && cur != nil {
			cur = &cfg.Bridges[n-1]
		}
	}
	return cfg, false, false, nil
}
