package vswitchd

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/govswitch/govswitch/internal/vlog"
)

// govswitchd's command line is ovs-vswitchd's (getopt_long's rules: long
// options with unique prefixes, "--opt=VALUE" or "--opt VALUE" for
// options that need a value, "--opt=VALUE" only for optional ones, short
// options -h -V -v[SPEC] -p -c -C, non-options anywhere, "--" ending the
// options) plus govswitchd's own options. Errors read as ovs-vswitchd's
// do, so a script that starts either sees the same thing.

type argKind int

const (
	noArg argKind = iota
	reqArg
	optArg
)

type option struct {
	long  string
	short byte
	arg   argKind
	set   func(p *argParser, val string, hasVal bool) error
}

// argParser is the state of one ParseArgs call.
type argParser struct {
	cfg    Config
	getenv func(string) string
	help   bool
	ver    bool
	dbArgs []string
}

// needBridge is the bridge a bridge option applies to: the last one given
// (by --bridge or a --config file).
func (p *argParser) needBridge(opt string) (*BridgeSpec, error) {
	n := len(p.cfg.Bridges)
	if n == 0 {
		return nil, fmt.Errorf("--%s must follow a --bridge", opt)
	}
	return &p.cfg.Bridges[n-1], nil
}

func flagNum(name, val string) (int, error) {
	n, err := strconv.Atoi(val)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("--%s %q: want a non-negative number", name, val)
	}
	return n, nil
}

// flagDuration takes a Go duration ("10s", "500ms"). A bare number is
// refused: the database's other_config:max-idle is in milliseconds but
// mac-aging-time in seconds, so a unit-less flag would be a guess.
func flagDuration(name, val string) (time.Duration, error) {
	d, err := time.ParseDuration(val)
	if err == nil && d >= 0 {
		return d, nil
	}
	if _, nerr := strconv.Atoi(val); nerr == nil {
		return 0, fmt.Errorf("--%s %s: give a unit, such as %ss or %sms", name, val, val, val)
	}
	return 0, fmt.Errorf("--%s %q: want a duration such as 10s", name, val)
}

// ovsModules are the vlog modules govswitchd logs under, named for the
// ovs-vswitchd modules that do the same job, so that -vbridge:dbg or
// vlog/set vconn:file:dbg mean what they do there.
var ovsModules = []string{
	"bridge",              // bridges and ports coming and going, their configuration
	"vswitchd",            // the daemon's own failures (mlockall, a fatal error)
	"daemon_unix",         // the --monitor process
	"ofproto_dpif",        // what the datapath was probed to support
	"ofproto_dpif_upcall", // upcall handlers and revalidators, the governor
	"connmgr",             // OpenFlow connections of a bridge, fail-open
	"vconn",               // OpenFlow sessions: hello, version negotiation, errors
	"reconnect",           // the database connection
	"vlog",                // the log itself
}

// ovsOtherModules are the rest of ovs-vswitchd 3.1's modules (its
// vlog/list). govswitchd logs nothing under them, but a spec that names
// one (OVS's test macros pass -vofproto_dpif) is accepted, as there.
var ovsOtherModules = []string{
	"backtrace", "bfd", "bond", "bundle", "bundles", "cfm", "collectors", "command_line", "conntrack",
	"conntrack_tp", "coverage", "ct_dpif", "daemon", "dns_resolve", "dpdk", "dpif",
	"dpif_lookup_autovalidator", "dpif_lookup_generic", "dpif_mfex_extract_study", "dpif_netdev",
	"dpif_netdev_extract", "dpif_netdev_impl", "dpif_netdev_lookup", "dpif_netlink",
	"dpif_netlink_rtnl", "entropy", "fail_open", "fatal_signal", "flow", "hmap", "in_band", "ipf",
	"ipfix", "jsonrpc", "lacp", "lldp", "lldpd", "lldpd_structs", "lockfile", "memory", "meta_flow",
	"native_tnl", "netdev", "netdev_afxdp", "netdev_dummy", "netdev_linux", "netdev_offload",
	"netdev_offload_tc", "netdev_vport", "netflow", "netlink", "netlink_conntrack",
	"netlink_notifier", "netlink_socket", "nx_match", "odp_execute", "odp_execute_impl", "odp_util",
	"ofp_actions", "ofp_bundle", "ofp_connection", "ofp_errors", "ofp_flow", "ofp_group", "ofp_match",
	"ofp_meter", "ofp_monitor", "ofp_msgs", "ofp_packet", "ofp_port", "ofp_protocol", "ofp_queue",
	"ofp_table", "ofp_util", "ofproto", "ofproto_dpif_mirror", "ofproto_dpif_monitor",
	"ofproto_dpif_rid", "ofproto_dpif_xlate", "ofproto_xlate_cache", "ovs_lldp", "ovs_numa",
	"ovs_rcu", "ovs_replay", "ovs_router", "ovs_thread", "ovsdb_cs", "ovsdb_error", "ovsdb_idl",
	"ox_stat", "pcap", "pmd_perf", "poll_loop", "process", "rconn", "route_table", "rstp", "rstp_sm",
	"sflow", "sha1", "signals", "socket_util", "socket_util_unix", "stp", "stream", "stream_fd",
	"stream_replay", "stream_ssl", "stream_tcp", "stream_unix", "svec", "system_stats", "tc",
	"timeval", "tunnel", "unixctl", "userspace_tso", "util", "uuid", "vconn_stream",
}

// allModules are the modules a spec may name.
func allModules() []string { return append(append([]string(nil), ovsModules...), ovsOtherModules...) }

func (p *argParser) options() []option {
	str := func(dst *string) func(*argParser, string, bool) error {
		return func(_ *argParser, v string, _ bool) error { *dst = v; return nil }
	}
	flag := func(dst *bool) func(*argParser, string, bool) error {
		return func(*argParser, string, bool) error { *dst = true; return nil }
	}
	num := func(name string, dst *int) func(*argParser, string, bool) error {
		return func(_ *argParser, v string, _ bool) (err error) { *dst, err = flagNum(name, v); return }
	}
	dur := func(name string, dst *time.Duration) func(*argParser, string, bool) error {
		return func(_ *argParser, v string, _ bool) (err error) { *dst, err = flagDuration(name, v); return }
	}
	refuse := func(why string) func(*argParser, string, bool) error {
		return func(*argParser, string, bool) error { return fmt.Errorf("%s", why) }
	}
	// bridgeOpt is an option of the last --bridge: set applies its value.
	bridgeOpt := func(name string, set func(b *BridgeSpec, v string)) func(*argParser, string, bool) error {
		return func(p *argParser, v string, _ bool) error {
			b, err := p.needBridge(name)
			if err == nil {
				set(b, v)
			}
			return err
		}
	}
	c := &p.cfg
	return []option{
		// ovs-vswitchd's options.
		{"help", 'h', noArg, func(p *argParser, _ string, _ bool) error { p.help = true; return nil }},
		{"version", 'V', noArg, func(p *argParser, _ string, _ bool) error { p.ver = true; return nil }},
		{"verbose", 'v', optArg, func(p *argParser, v string, _ bool) error {
			if err := vlog.Check(v, allModules()); err != nil {
				return fmt.Errorf("processing %q: %v", v, err)
			}
			c.Verbose = append(c.Verbose, v)
			return nil
		}},
		{"log-file", 0, optArg, func(p *argParser, v string, has bool) error {
			if !has {
				v = filepath.Join(envOr(p.getenv, "OVS_LOGDIR", DefaultLogdir), "ovs-vswitchd.log")
			}
			c.LogFile = absPath(v)
			return nil
		}},
		{"syslog-method", 0, reqArg, func(_ *argParser, v string, _ bool) error {
			switch {
			case v == "libc", strings.HasPrefix(v, "unix:"), strings.HasPrefix(v, "udp:"):
				c.SyslogMethod = v
				return nil
			}
			return fmt.Errorf("--syslog-method %q: want libc, unix:FILE or udp:IP:PORT", v)
		}},
		{"syslog-target", 0, reqArg, str(&c.SyslogTarget)},
		{"detach", 0, noArg, flag(&c.Detach)},
		{"monitor", 0, noArg, flag(&c.Monitor)},
		{"no-chdir", 0, noArg, flag(&c.NoChdir)},
		{"pidfile", 0, optArg, func(p *argParser, v string, has bool) error {
			if has {
				c.Pidfile = v
			} else {
				c.Pidfile = ""
			}
			return nil
		}},
		{"overwrite-pidfile", 0, noArg, flag(&c.OverwritePidfile)},
		{"unixctl", 0, reqArg, str(&c.Unixctl)},
		{"mlockall", 0, noArg, flag(&c.Mlockall)},
		{"disable-system", 0, noArg, flag(&c.DisableSystem)},
		// govswitchd confines itself to nothing and reads no system
		// routing table, so these ask for what it does anyway.
		{"no-self-confinement", 0, noArg, func(*argParser, string, bool) error { return nil }},
		{"disable-system-route", 0, noArg, flag(&c.DisableSystemRoute)},
		{"user", 0, reqArg, refuse("--user: not supported; run govswitchd as root (the datapath needs CAP_NET_ADMIN)")},
		{"private-key", 'p', reqArg, str(&c.SSLPrivateKey)},
		{"certificate", 'c', reqArg, str(&c.SSLCertificate)},
		{"ca-cert", 'C', reqArg, str(&c.SSLCACert)},
		{"bootstrap-ca-cert", 0, reqArg, str(&c.BootstrapCACert)},
		{"peer-ca-cert", 0, reqArg, refuse("--peer-ca-cert: not supported (govswitchd sends only its own certificate chain)")},
		{"ssl-protocols", 0, reqArg, refuse("--ssl-protocols: not supported; govswitchd's TLS (Go crypto/tls) negotiates TLS 1.2 or 1.3")},
		{"ssl-ciphers", 0, reqArg, refuse("--ssl-ciphers: not supported; govswitchd's TLS uses Go crypto/tls's cipher suites")},
		// govswitchd's own.
		{"datapath", 0, reqArg, str(&c.Datapath)},
		{"bridge", 0, reqArg, func(p *argParser, v string, _ bool) error {
			c.Bridges = append(c.Bridges, BridgeSpec{Name: v})
			return nil
		}},
		{"port", 0, reqArg, bridgeOpt("port", func(b *BridgeSpec, v string) { b.Ports = append(b.Ports, v) })},
		{"controller", 0, reqArg, bridgeOpt("controller", func(b *BridgeSpec, v string) { b.Controllers = append(b.Controllers, v) })},
		{"listen", 0, reqArg, bridgeOpt("listen", func(b *BridgeSpec, v string) { b.Listeners = append(b.Listeners, v) })},
		{"fail-mode", 0, reqArg, bridgeOpt("fail-mode", func(b *BridgeSpec, v string) { b.FailMode = v })},
		{"config", 0, reqArg, func(p *argParser, v string, _ bool) error {
			fc, err := LoadFile(v)
			if err == nil {
				p.cfg = fc
			}
			return err
		}},
		{"ovsdb", 0, reqArg, func(p *argParser, v string, _ bool) error { p.dbArgs = append(p.dbArgs, v); return nil }},
		{"governor", 0, noArg, flag(&c.Governor)},
		{"governor-mode", 0, reqArg, func(_ *argParser, v string, _ bool) error {
			c.Governor, c.GovernorMode = true, v
			return nil
		}},
		{"governor-threshold", 0, reqArg, num("governor-threshold", &c.GovernorThreshold)},
		{"handlers", 0, reqArg, num("handlers", &c.Handlers)},
		{"revalidators", 0, reqArg, num("revalidators", &c.Revalidators)},
		{"flow-limit", 0, reqArg, num("flow-limit", &c.FlowLimit)},
		{"max-flows", 0, reqArg, num("max-flows", &c.MaxFlows)},
		{"ssl-private-key", 0, reqArg, str(&c.SSLPrivateKey)},
		{"ssl-certificate", 0, reqArg, str(&c.SSLCertificate)},
		{"ssl-ca-cert", 0, reqArg, str(&c.SSLCACert)},
		{"max-idle", 0, reqArg, dur("max-idle", &c.MaxIdle)},
		{"disable-megaflows", 0, noArg, flag(&c.DisableMegaflows)},
		{"mac-table-size", 0, reqArg, num("mac-table-size", &c.MACTableSize)},
		{"mac-aging", 0, reqArg, dur("mac-aging", &c.MACAging)},
		{"rundir", 0, reqArg, str(&c.Rundir)},
		{"log-level", 0, reqArg, func(_ *argParser, v string, _ bool) error {
			if _, err := parseLevel(v); err != nil {
				return err
			}
			c.LogLevel = v
			return nil
		}},
		{"metrics", 0, reqArg, str(&c.Metrics)},
		{"scheduling", 0, reqArg, str(&c.Scheduling)},
	}
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// ParseArgs parses govswitchd's command line, with OVS_RUNDIR and
// OVS_LOGDIR from the environment. Options that configure a bridge apply
// to the last --bridge before them. With no --bridge and no DATABASE,
// the database is unix:$OVS_RUNDIR/db.sock, as for ovs-vswitchd.
func ParseArgs(args []string) (cfg Config, help, version bool, err error) {
	return parseArgs(args, os.Getenv)
}

func parseArgs(args []string, getenv func(string) string) (Config, bool, bool, error) {
	p := &argParser{getenv: getenv}
	opts := p.options()
	byShort := map[byte]*option{}
	for i := range opts {
		if opts[i].short != 0 {
			byShort[opts[i].short] = &opts[i]
		}
	}
	fail := func(err error) (Config, bool, bool, error) { return p.cfg, false, false, err }
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			p.dbArgs = append(p.dbArgs, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "--"):
			name, val, has := strings.Cut(a[2:], "=")
			o, err := findLong(opts, name)
			if err != nil {
				return fail(err)
			}
			switch {
			case o.arg == noArg && has:
				return fail(fmt.Errorf("option '--%s' doesn't allow an argument", o.long))
			case o.arg == reqArg && !has:
				if i+1 >= len(args) {
					return fail(fmt.Errorf("option '--%s' requires an argument", o.long))
				}
				i++
				val, has = args[i], true
			case o.long == "pidfile" && !has && i+1 < len(args) && looksLikePidfile(args[i+1]):
				// govswitchd took "--pidfile FILE" before it took
				// ovs-vswitchd's "--pidfile[=FILE]"; keep that working.
				i++
				val, has = args[i], true
			}
			if err := o.set(p, val, has); err != nil {
				return fail(err)
			}
		case strings.HasPrefix(a, "-") && a != "-":
		shorts:
			for j := 1; j < len(a); j++ {
				o := byShort[a[j]]
				if o == nil {
					return fail(fmt.Errorf("invalid option -- '%c'", a[j]))
				}
				rest := a[j+1:]
				switch o.arg {
				case noArg:
					if err := o.set(p, "", false); err != nil {
						return fail(err)
					}
					continue
				case optArg:
					if err := o.set(p, rest, rest != ""); err != nil {
						return fail(err)
					}
				case reqArg:
					if rest == "" {
						if i+1 >= len(args) {
							return fail(fmt.Errorf("option requires an argument -- '%c'", a[j]))
						}
						i++
						rest = args[i]
					}
					if err := o.set(p, rest, true); err != nil {
						return fail(err)
					}
				}
				break shorts // the rest of a was the option's value
			}
		default:
			p.dbArgs = append(p.dbArgs, a)
		}
	}
	if p.help || p.ver {
		return p.cfg, p.help, p.ver && !p.help, nil
	}
	if len(p.dbArgs) > 1 {
		return fail(fmt.Errorf("at most one non-option argument accepted; use --help for usage"))
	}
	cfg := p.cfg
	if cfg.Rundir == "" {
		cfg.Rundir = getenv("OVS_RUNDIR")
	}
	if cfg.Rundir != "" {
		cfg.Rundir = absPath(cfg.Rundir)
	}
	rundir := or(cfg.Rundir, DefaultRundir)
	if len(p.dbArgs) == 1 {
		cfg.OVSDB = p.dbArgs[0]
	} else if len(cfg.Bridges) == 0 && cfg.OVSDB == "" {
		cfg.OVSDB = "unix:" + filepath.Join(rundir, "db.sock")
	}
	if cfg.Pidfile != "" && cfg.Pidfile != "-" && !filepath.IsAbs(cfg.Pidfile) {
		cfg.Pidfile = filepath.Join(rundir, cfg.Pidfile) // as OVS: relative to the rundir
	}
	if cfg.Unixctl != "" && !filepath.IsAbs(cfg.Unixctl) {
		cfg.Unixctl = filepath.Join(rundir, cfg.Unixctl)
	}
	for _, f := range []*string{&cfg.SSLPrivateKey, &cfg.SSLCertificate, &cfg.SSLCACert, &cfg.BootstrapCACert} {
		if *f != "" {
			*f = absPath(*f) // --detach without --no-chdir moves to /
		}
	}
	return cfg, false, false, nil
}

// looksLikePidfile: a path, not DATABASE (which has a method prefix such
// as unix:) and not an option.
func looksLikePidfile(s string) bool {
	if s == "-" {
		return true
	}
	if strings.HasPrefix(s, "-") || strings.Contains(s, ":") {
		return false
	}
	return strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".pid")
}

// findLong finds a long option by name or unique prefix, as getopt_long.
func findLong(opts []option, name string) (*option, error) {
	var cands []*option
	for i := range opts {
		if opts[i].long == name {
			return &opts[i], nil
		}
		if name != "" && strings.HasPrefix(opts[i].long, name) {
			cands = append(cands, &opts[i])
		}
	}
	switch len(cands) {
	case 0:
		return nil, fmt.Errorf("unrecognized option '--%s'", name)
	case 1:
		return cands[0], nil
	}
	var names []string
	for _, c := range cands {
		names = append(names, "'--"+c.long+"'")
	}
	sort.Strings(names)
	return nil, fmt.Errorf("option '--%s' is ambiguous; possibilities: %s", name, strings.Join(names, " "))
}

// Usage is the daemon's help text: ovs-vswitchd's options first, then
// govswitchd's own.
const Usage = `govswitchd: a Go replacement for ovs-vswitchd over the Linux openvswitch datapath
usage: govswitchd [OPTIONS] [DATABASE]
where DATABASE is the ovsdb-server socket to take bridges and ports from
      (default: "unix:$OVS_RUNDIR/db.sock", OVS_RUNDIR default /var/run/openvswitch),
      unless bridges are given with --bridge.

DATABASE connection methods:
  tcp:HOST:PORT             PORT at remote HOST
  ssl:HOST:PORT             TLS PORT at remote HOST (with -p, -c, -C)
  unix:FILE                 Unix domain socket named FILE
TLS for an ssl: DATABASE, ssl: controllers and pssl: listeners (PEM files):
  -p, --private-key=FILE    private key
  -c, --certificate=FILE    certificate for the private key
  -C, --ca-cert=FILE        CA certificate peers must chain to
  --bootstrap-ca-cert=FILE  as --ca-cert; the file must exist (it is not fetched from the peer)

Daemon options:
  --detach                  run in the background; returns once the pidfile and the
                            control socket are in place and the database is applied
  --monitor                 keep a process that restarts the daemon if it crashes
                            (a fault signal, or a Go panic's exit status 2)
  --no-chdir                with --detach, stay in the current directory (else /)
  --pidfile[=FILE]          pidfile (default $OVS_RUNDIR/ovs-vswitchd.pid; written
                            even without this option, so ovs-appctl finds the daemon;
                            --pidfile=- for none)
  --overwrite-pidfile       start even if the pidfile is locked by a running daemon
  --unixctl=SOCKET          control socket (default $OVS_RUNDIR/ovs-vswitchd.PID.ctl)
  --mlockall                lock all memory (mlockall MCL_CURRENT|MCL_FUTURE)
  --disable-system          refuse system (kernel) datapaths; govswitchd has no other
                            real datapath, so every bridge then fails to come up
  --disable-system-route    leave the kernel's routes out of the route table
                            (ovs/route/show lists only ovs/route/add's)
  --no-self-confinement     accepted: govswitchd does not confine itself

Logging options (vlog, as ovs-vswitchd):
  -vSPEC, --verbose=SPEC    set levels: [MODULE][:console|syslog|file][:LEVEL],
                            LEVEL off, emer, err, warn, info or dbg; e.g. -vconsole:off,
                            -vfile:info, -vbridge:dbg; PATTERN:DEST:PATTERN sets a format
  -v, --verbose             every module at dbg everywhere
  --log-file[=FILE]         log to FILE (default $OVS_LOGDIR/ovs-vswitchd.log,
                            OVS_LOGDIR default /var/log/openvswitch)
  --syslog-method=(libc|unix:FILE|udp:IP:PORT)
                            where syslog lines go (default libc: /dev/log)
  --syslog-target=HOST:PORT also send syslog lines to HOST:PORT over UDP
  --log-level LEVEL         debug, info, warn or error, on console and file (govswitchd's)

govswitchd's own options:
  --datapath system|dummy   the kernel module (default) or an in-memory datapath
  --bridge NAME             add a bridge; --port and bridge options that follow apply to it
  --port DEV[:TYPE]         add device DEV (type system, or internal) to the last bridge
  --controller TARGET       tcp:IP[:PORT], ssl:IP[:PORT] or unix:PATH controller of the last bridge
  --listen TARGET           extra OpenFlow listener of the last bridge, ptcp:PORT[:IP] or pssl:PORT[:IP]
  --fail-mode MODE          standalone (default) or secure, for the last bridge
  --ovsdb REMOTE            the same as DATABASE
  --config FILE             read the configuration from a JSON file
  --governor                engage the flow-setup governor under many short flows
  --governor-mode MODE      auto (default), always (install every flow), never
  --governor-threshold N    installed flows that size engagement (default 2500)
  --handlers N              upcall handler threads (default: CPUs)
  --revalidators N          revalidator threads (default 1)
  --flow-limit N            datapath flow limit (default 200000)
  --max-flows N             OpenFlow flows per bridge, all tables (default 0: no limit)
  --ssl-private-key FILE, --ssl-certificate FILE, --ssl-ca-cert FILE
                            the same as -p, -c, -C
  --max-idle DURATION       idle datapath flow lifetime, with a unit: 10s, 1500ms (default 10s)
  --disable-megaflows       install exact-match datapath flows only
  --mac-table-size N        MAC learning table size (default 8192)
  --mac-aging DURATION      MAC learning entry lifetime, with a unit (default 300s)
  --rundir DIR              sockets and pidfile (default $OVS_RUNDIR)
  --metrics HOST:PORT       serve Prometheus metrics at http://HOST:PORT/metrics (off by default)
  --scheduling POLICY       batch (default: SCHED_BATCH, upcalls handled in batches while
                            the CPU is busy) or normal (SCHED_OTHER, as ovs-vswitchd)

Environment: OVS_RUNDIR, OVS_LOGDIR as above; OVS_DBDIR and OVS_PKGDATADIR are
read by ovs-ctl, not by the daemon.
Other options:
  -h, --help                this help
  -V, --version             the version
`
