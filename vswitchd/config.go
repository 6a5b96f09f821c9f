// Package vswitchd is the govswitchd daemon: configuration, the datapath
// and bridges it runs, the ovs-appctl commands it answers, logging and
// shutdown. cmd/govswitchd is a thin main around it, so everything here is
// reachable from tests.
package vswitchd

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
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
	// Process-level settings, ovs-vswitchd's command line: see Usage.
	Detach           bool   `json:"detach,omitempty"`
	Monitor          bool   `json:"monitor,omitempty"`
	NoChdir          bool   `json:"no_chdir,omitempty"`
	OverwritePidfile bool   `json:"overwrite_pidfile,omitempty"`
	Unixctl          string `json:"unixctl,omitempty"` // control socket; "" = <rundir>/ovs-vswitchd.<pid>.ctl
	Mlockall         bool   `json:"mlockall,omitempty"`
	DisableSystem    bool   `json:"disable_system,omitempty"`
	// DisableSystemRoute leaves the kernel's routes out of the route
	// table (ovs/route/*): only those added with ovs/route/add are in it.
	DisableSystemRoute bool     `json:"disable_system_route,omitempty"`
	BootstrapCACert    string   `json:"bootstrap_ca_cert,omitempty"`
	LogFile            string   `json:"log_file,omitempty"`      // "" = no log file
	Verbose            []string `json:"verbose,omitempty"`       // vlog specs, applied in order after LogLevel
	SyslogMethod       string   `json:"syslog_method,omitempty"` // libc (/dev/log, the default), unix:FILE, udp:IP:PORT
	SyslogTarget       string   `json:"syslog_target,omitempty"` // HOST:PORT, also sent syslog lines over UDP
	// Scheduling is the policy of the daemon's threads: "batch" (the
	// default, SCHED_BATCH: upcalls are taken in batches while the CPU is
	// busy) or "normal" (SCHED_OTHER). See SetScheduling.
	Scheduling string `json:"scheduling,omitempty"`
}

// Defaults.
const (
	DefaultRundir = "/var/run/openvswitch"
	DefaultLogdir = "/var/log/openvswitch"
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
	if c.SSLCACert == "" && c.BootstrapCACert != "" {
		c.SSLCACert = c.BootstrapCACert
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
	case strings.HasPrefix(c.OVSDB, "ssl:") && (c.SSLPrivateKey == "" || c.SSLCertificate == "" || c.SSLCACert == ""):
		return fmt.Errorf("database %s needs -p/--private-key, -c/--certificate and -C/--ca-cert", c.OVSDB)
	case c.OVSDB != "" && !strings.HasPrefix(c.OVSDB, "unix:") && !strings.HasPrefix(c.OVSDB, "tcp:") && !strings.HasPrefix(c.OVSDB, "ssl:"):
		return fmt.Errorf("--ovsdb %q: want unix:PATH, tcp:IP:PORT or ssl:IP:PORT", c.OVSDB)
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
				return fmt.Errorf("bridge %s: %s needs --private-key, --certificate and --ca-cert (or --bootstrap-ca-cert)", b.Name, t)
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
	if c.BootstrapCACert != "" {
		if _, err := os.Stat(c.BootstrapCACert); err != nil {
			return fmt.Errorf("--bootstrap-ca-cert %s: %w; govswitchd does not fetch the CA certificate from its peer: put it there or use --ca-cert", c.BootstrapCACert, err)
		}
	}
	if c.SyslogTarget != "" {
		if _, _, err := net.SplitHostPort(c.SyslogTarget); err != nil {
			return fmt.Errorf("--syslog-target %q: want HOST:PORT", c.SyslogTarget)
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
