package vswitchd

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// TestParseOVSCommandLines: the command lines that start ovs-vswitchd
// (ovs-ctl's, OVS's test macros', the systemd unit's) parse into what
// they mean.
func TestParseOVSCommandLines(t *testing.T) {
	cwd, _ := os.Getwd()
	tests := []struct {
		name string
		args []string
		env  func(string) string
		want func(c *Config) bool
	}{
		{"ovs-ctl", strings.Fields("unix:/run/ovs/db.sock -vconsole:emer -vsyslog:err -vfile:info --mlockall --no-chdir " +
			"--log-file=/var/log/ovs/ovs-vswitchd.log --pidfile=/run/ovs/ovs-vswitchd.pid --detach --monitor"), env(),
			func(c *Config) bool {
				return c.OVSDB == "unix:/run/ovs/db.sock" && c.Mlockall && c.NoChdir && c.Detach && c.Monitor &&
					c.LogFile == "/var/log/ovs/ovs-vswitchd.log" && c.Pidfile == "/run/ovs/ovs-vswitchd.pid" &&
					reflect.DeepEqual(c.Verbose, []string{"console:emer", "syslog:err", "file:info"})
			}},
		{"OVS test macro, defaults from the environment", strings.Fields("--detach --no-chdir --pidfile --log-file -vvconn -vofproto_dpif -vunixctl"),
			env("OVS_RUNDIR", "/t/run", "OVS_LOGDIR", "/t/log"),
			func(c *Config) bool {
				return c.OVSDB == "unix:/t/run/db.sock" && c.Rundir == "/t/run" && c.Pidfile == "" &&
					c.LogFile == "/t/log/ovs-vswitchd.log" && len(c.Verbose) == 3 && c.Verbose[0] == "vconn"
			}},
		{"no arguments", nil, env(), func(c *Config) bool {
			return c.OVSDB == "unix:/var/run/openvswitch/db.sock" && c.Rundir == "" && c.LogFile == ""
		}},
		{"relative pidfile and unixctl are in the rundir, log file in cwd", strings.Fields("--pidfile=x.pid --unixctl=x.ctl --log-file=x.log"),
			env("OVS_RUNDIR", "/r"),
			func(c *Config) bool {
				return c.Pidfile == "/r/x.pid" && c.Unixctl == "/r/x.ctl" && c.LogFile == filepath.Join(cwd, "x.log")
			}},
		{"old --pidfile FILE form", strings.Fields("--pidfile /r/p.pid unix:/db"), env(),
			func(c *Config) bool { return c.Pidfile == "/r/p.pid" && c.OVSDB == "unix:/db" }},
		{"pidfile then database", strings.Fields("--pidfile unix:/db"), env(),
			func(c *Config) bool { return c.Pidfile == "" && c.OVSDB == "unix:/db" }},
		{"short TLS options, glued and apart", []string{"-p/k.pem", "-c", "/c.pem", "-C/ca.pem", "unix:/db"}, env(),
			func(c *Config) bool {
				return c.SSLPrivateKey == "/k.pem" && c.SSLCertificate == "/c.pem" && c.SSLCACert == "/ca.pem"
			}},
		{"bare -v and --verbose", []string{"-v", "--verbose"}, env(),
			func(c *Config) bool { return reflect.DeepEqual(c.Verbose, []string{"", ""}) }},
		{"unique prefix", []string{"--overwrite", "--disable-system", "--bridge=br0", "--por=p1"}, env(),
			func(c *Config) bool {
				return c.OverwritePidfile && c.DisableSystem && c.OVSDB == "" && len(c.Bridges) == 1 &&
					reflect.DeepEqual(c.Bridges[0].Ports, []string{"p1"})
			}},
		{"govswitchd's own, both forms", strings.Fields("--bridge br0 --port=p1 --port p2 --max-idle 1500ms --mac-aging=1m --rundir /x"), env(),
			func(c *Config) bool {
				return c.OVSDB == "" && len(c.Bridges[0].Ports) == 2 && c.MaxIdle == 1500*time.Millisecond &&
					c.MACAging == time.Minute && c.Rundir == "/x"
			}},
		{"-- ends options", []string{"--", "unix:/db"}, env(), func(c *Config) bool { return c.OVSDB == "unix:/db" }},
		{"accepted, nothing to do", strings.Fields("--no-self-confinement"), env(),
			func(c *Config) bool { return !c.DisableSystemRoute }},
		{"--disable-system-route", strings.Fields("--disable-system-route"), env(),
			func(c *Config) bool { return c.DisableSystemRoute }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, help, ver, err := parseArgs(tt.args, tt.env)
			if err != nil || help || ver {
				t.Fatalf("parse: %v (help %v version %v)", err, help, ver)
			}
			if !tt.want(&c) {
				t.Errorf("parsed %+v", c)
			}
		})
	}
}

// TestParseErrors: mistakes get getopt_long's messages, as ovs-vswitchd
// prints them (main adds "PROGRAM: ").
func TestParseErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--foo"}, "unrecognized option '--foo'"},
		{[]string{"-q"}, "invalid option -- 'q'"},
		{[]string{"unix:/a", "unix:/b"}, "at most one non-option argument accepted; use --help for usage"},
		{[]string{"--unixctl"}, "option '--unixctl' requires an argument"},
		{[]string{"-p"}, "option requires an argument -- 'p'"},
		{[]string{"--detach=yes"}, "option '--detach' doesn't allow an argument"},
		{[]string{"--p"}, "option '--p' is ambiguous; possibilities: '--peer-ca-cert' '--pidfile' '--port' '--private-key'"},
		{[]string{"-vfoo"}, `processing "foo": no destination, level, or module "foo"`},
		{[]string{"--verbose=bridge:file:loud"}, `no destination, level, or module "loud"`},
		{[]string{"-vPATTERN:xx:y"}, `unknown destination "xx"`},
		{[]string{"--max-idle", "5"}, "--max-idle 5: give a unit, such as 5s or 5ms"},
		{[]string{"--mac-aging", "300"}, "give a unit"},
		{[]string{"--user=ovs"}, "--user: not supported"},
		{[]string{"--ssl-protocols=TLSv1.2"}, "--ssl-protocols: not supported"},
		{[]string{"--syslog-method=journald"}, "want libc, unix:FILE or udp:IP:PORT"},
		{[]string{"--port", "p1"}, "--port must follow a --bridge"},
		{[]string{"--log-level", "loud"}, `log level "loud"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, _, err := parseArgs(tt.args, env())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestParseHelpVersion(t *testing.T) {
	for _, tt := range []struct {
		args      []string
		help, ver bool
	}{
		{[]string{"-h"}, true, false},
		{[]string{"--help"}, true, false},
		{[]string{"-V"}, false, true},
		{[]string{"--version"}, false, true},
		{[]string{"unix:/a", "unix:/b", "-h"}, true, false}, // help wins over a later error, as getopt loops
	} {
		_, help, ver, err := parseArgs(tt.args, env())
		if err != nil || help != tt.help || ver != tt.ver {
			t.Errorf("%v: help %v version %v err %v", tt.args, help, ver, err)
		}
	}
	for _, opt := range []string{"--detach", "--monitor", "--no-chdir", "--pidfile[=FILE]", "--overwrite-pidfile",
		"--log-file[=FILE]", "-vSPEC, --verbose=SPEC", "--unixctl=SOCKET", "--mlockall", "--disable-system",
		"-p, --private-key=FILE", "--bootstrap-ca-cert=FILE", "--syslog-target=HOST:PORT", "-h, --help", "-V, --version",
		"--max-idle DURATION"} {
		if !strings.Contains(Usage, opt) {
			t.Errorf("--help does not document %s", opt)
		}
	}
}

// TestBootstrapCACert: an existing file is the CA certificate; a missing
// one is refused, since govswitchd does not fetch it from the peer.
func TestBootstrapCACert(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, []byte("x"), 0o644)
	cfg, _, _, err := parseArgs([]string{"--bootstrap-ca-cert=" + ca, "unix:/db"}, env())
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.withDefaults(); c.Validate() != nil || c.SSLCACert != ca {
		t.Errorf("existing bootstrap CA: %v, CA %q", c.Validate(), c.SSLCACert)
	}
	cfg, _, _, _ = parseArgs([]string{"--bootstrap-ca-cert=" + filepath.Join(dir, "none.pem"), "unix:/db"}, env())
	if err := cfg.withDefaults().Validate(); err == nil || !strings.Contains(err.Error(), "does not fetch the CA certificate") {
		t.Errorf("missing bootstrap CA: %v", err)
	}
}

// TestDisableSystem: with --disable-system a bridge on the kernel
// datapath is refused with a reason, not silently run.
func TestDisableSystem(t *testing.T) {
	cfg, _, _, err := parseArgs(strings.Fields("--disable-system --bridge br0 --pidfile=- --rundir "+t.TempDir()), env())
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, nil, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Start()
	if err == nil || !strings.Contains(err.Error(), "disabled by --disable-system") {
		d.Stop()
		t.Fatalf("Start = %v, want the bridge refused", err)
	}
}
