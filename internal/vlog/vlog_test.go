package vlog

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestPatternRender(t *testing.T) {
	l := New("ovs-vswitchd")
	l.SetConsole(nil)
	at := time.Date(2026, 12, 1, 18, 0, 0, 123456789, time.UTC)
	tests := []struct {
		name, pattern, want string
	}{
		{"file default", DefaultFilePattern, "2026-12-01T18:00:00.123Z|00042|bridge|WARN|port p1 rejected"},
		{"console default", DefaultConsolePattern, "2026-12-01T18:00:00Z|00042|bridge|WARN|port p1 rejected"},
		{"syslog default", DefaultSyslogPattern, "ovs|00042|bridge|WARN|port p1 rejected"},
		{"widths", "[%-8c][%8c][%3N][%p]", "[bridge  ][  bridge][ 42][WARN]"},
		{"six fraction digits", "%D{%H:%M:%S.######}", "18:00:00.123456"},
		{"percent and unknown", "100%% %q %A %t%T", "100% %q ovs-vswitchd main"},
		{"syslog priority", "<%B>", "<28>"}, // daemon(3)<<3 | warning(4)
		{"strftime", "%D{%F %T %j %b %e}", "2026-12-01 18:00:00 335 Dec  1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parsePattern(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			e := entry{l: l, module: "bridge", level: Warn, msg: "port p1 rejected", seq: 42, now: at}
			if got := string(p.render(nil, &e)); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	for _, bad := range []string{"%", "%D{%H", "%99999c"} {
		if _, err := parsePattern(bad); err == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
}

func TestSpec(t *testing.T) {
	tests := []struct {
		name, spec string
		check      map[string]Level // "module:dest" -> level
		err        string
	}{
		{name: "console off", spec: "console:off",
			check: map[string]Level{"bridge:console": Off, "rconn:console": Off, "bridge:file": Info}},
		{name: "module file dbg", spec: "bridge:file:dbg",
			check: map[string]Level{"bridge:file": Dbg, "bridge:console": Info, "rconn:file": Info}},
		{name: "any order, blanks", spec: "err syslog",
			check: map[string]Level{"bridge:syslog": Err, "rconn:syslog": Err, "bridge:file": Info}},
		{name: "level only", spec: "warn", check: map[string]Level{"bridge:console": Warn, "rconn:file": Warn}},
		{name: "module only means dbg", spec: "rconn", check: map[string]Level{"rconn:syslog": Dbg, "bridge:syslog": Info}},
		{name: "ANY", spec: "ANY:ANY:emer", check: map[string]Level{"bridge:file": Emer}},
		{name: "case", spec: "BRIDGE:FILE:DBG", err: `no destination, level, or module "BRIDGE"`},
		{name: "empty is all dbg", spec: "", check: map[string]Level{"bridge:console": Dbg, "vlog:file": Dbg}},
		{name: "unknown word", spec: "bridge:file:foo", err: `no destination, level, or module "foo"`},
		{name: "two levels", spec: "dbg:info", err: "multiple levels"},
		{name: "two destinations", spec: "file:console", err: "multiple destinations"},
		{name: "two modules", spec: "bridge:rconn", err: "multiple modules"},
		{name: "pattern", spec: "PATTERN:file:%m", check: map[string]Level{"bridge:file": Info}},
		{name: "pattern bad destination", spec: "PATTERN:xx:y", err: `unknown destination "xx"`},
		{name: "facility", spec: "FACILITY:local0"},
		{name: "bad facility", spec: "FACILITY:zz", err: "invalid facility"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New("t")
			l.SetConsole(nil)
			l.Register("bridge", "rconn")
			err := l.Set(tt.spec)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range tt.check {
				m, d, _ := strings.Cut(k, ":")
				dest, _ := parseDestination(d)
				if got := l.Level(m, dest); got != want {
					t.Errorf("%s = %v, want %v", k, got, want)
				}
			}
		})
	}
	// A global spec also sets modules made later.
	l := New("t")
	l.SetConsole(nil)
	if err := l.Set("file:dbg"); err != nil {
		t.Fatal(err)
	}
	l.Register("late")
	if got := l.Level("late", File); got != Dbg {
		t.Errorf("module registered after file:dbg is at %v", got)
	}
}

// TestList: the table has ovs-vswitchd's columns, so scripts that cut it
// (awk '$2 == ...') read ours the same.
func TestList(t *testing.T) {
	l := New("t")
	l.SetConsole(nil)
	l.Register("bridge", "vconn_stream")
	l.Set("console:emer")
	l.Set("syslog:err")
	l.Set("bridge:file:dbg")
	want := "" +
		"                 console    syslog    file\n" +
		"                 -------    ------    ------\n" +
		"bridge            EMER        ERR        DBG\n" +
		"vconn_stream      EMER        ERR       INFO\n" +
		"vlog              EMER        ERR       INFO\n"
	if got := l.List(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

var fileLine = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\|(\d{5})\|([a-z_]+)\|(EMER|ERR|WARN|INFO|DBG)\|(.*)$`)

func TestHandlerAndDestinations(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ovs-vswitchd.log")
	var console bytes.Buffer
	l := New("ovs-vswitchd")
	l.SetConsole(&console)
	l.Set("console:warn")
	if err := l.OpenFile(path); err != nil {
		t.Fatal(err)
	}
	br := l.Logger("bridge")
	br.Info("bridge up", "bridge", "br0", "ports", 2)
	br.Warn("port rejected", "port", "p 1", "err", errors.New(`type "vxlan" not supported`))
	br.With(ModuleKey, "rconn").With("target", "tcp:1.2.3.4").Error("connection failed")
	br.Debug("not shown")
	l.Set("bridge:file:off")
	br.Warn("file is off for bridge")

	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	want := []struct{ seq, mod, lvl, msg string }{
		{"00001", "vlog", "INFO", "opened log file " + path},
		{"00002", "bridge", "INFO", "bridge up bridge=br0 ports=2"},
		{"00003", "bridge", "WARN", `port rejected port="p 1" err="type \"vxlan\" not supported"`},
		{"00004", "rconn", "ERR", "connection failed target=tcp:1.2.3.4"},
	}
	if len(lines) != len(want) {
		t.Fatalf("file has %d lines, want %d:\n%s", len(lines), len(want), data)
	}
	for i, w := range want {
		m := fileLine.FindStringSubmatch(lines[i])
		if m == nil || m[1] != w.seq || m[2] != w.mod || m[3] != w.lvl || m[4] != w.msg {
			t.Errorf("line %d = %q, want %s|%s|%s|%s", i, lines[i], w.seq, w.mod, w.lvl, w.msg)
		}
	}
	// The console took WARN and above only, in its own (second-precision) pattern.
	cl := strings.Split(strings.TrimSpace(console.String()), "\n")
	if len(cl) != 3 || !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\|00003\|bridge\|WARN\|port rejected`).MatchString(cl[0]) ||
		!strings.Contains(cl[2], "|00005|bridge|WARN|file is off for bridge") {
		t.Errorf("console:\n%s", console.String())
	}
	if !br.Enabled(nil, slog.LevelWarn) || br.Enabled(nil, slog.LevelInfo) {
		t.Errorf("Enabled does not follow bridge's levels (console warn, file off)")
	}
}

// TestReopen is logrotate's sequence: move the file away, vlog/reopen,
// and new lines land in a new file at the old name.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.log")
	l := New("t")
	l.SetConsole(nil)
	if err := l.Reopen(); !errors.Is(err, ErrNoFile) {
		t.Errorf("Reopen without a file: %v", err)
	}
	if err := l.OpenFile(path); err != nil {
		t.Fatal(err)
	}
	lg := l.Logger("bridge")
	lg.Info("before rotation")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	lg.Info("still into the old file")
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	lg.Info("after rotation")
	l.CloseFile()
	lg.Info("while closed")
	old, _ := os.ReadFile(path + ".1")
	cur, _ := os.ReadFile(path)
	if !strings.Contains(string(old), "still into the old file") || strings.Contains(string(old), "after rotation") {
		t.Errorf("old file:\n%s", old)
	}
	if !strings.Contains(string(cur), "after rotation") || strings.Contains(string(cur), "while closed") ||
		!strings.Contains(string(cur), "opened log file") {
		t.Errorf("new file:\n%s", cur)
	}
}

func TestSlogLevels(t *testing.T) {
	for _, tt := range []struct {
		in   slog.Level
		want Level
	}{
		{slog.LevelDebug, Dbg}, {slog.LevelDebug + 2, Dbg}, {slog.LevelInfo, Info}, {slog.LevelWarn, Warn},
		{slog.LevelError, Err}, {SlogLevelEmer, Emer}, {SlogLevelEmer + 8, Emer},
	} {
		if got := FromSlog(tt.in); got != tt.want {
			t.Errorf("FromSlog(%v) = %v, want %v", tt.in, got, tt.want)
		}
		if FromSlog(toSlog(tt.want)) != tt.want {
			t.Errorf("toSlog(%v) does not map back", tt.want)
		}
	}
}

// TestSyslog: lines reach a local syslog socket as BSD-syslog datagrams
// with the facility and severity in the priority, in the syslog pattern.
func TestSyslog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	l := New("ovs-vswitchd")
	l.SetConsole(nil)
	if err := l.OpenSyslog(path, ""); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Set("syslog:err")
	lg := l.Logger("bridge")
	lg.Warn("not at err")
	lg.Error("bridge br0: datapath failed")
	ln.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	n, err := ln.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	got := string(buf[:n])
	// daemon (3) << 3 | err (3) = 27
	if !regexp.MustCompile(`^<27>\w{3} [ \d]\d \d\d:\d\d:\d\d ovs-vswitchd\[\d+\]: ovs\|00001\|bridge\|ERR\|bridge br0: datapath failed$`).MatchString(got) {
		t.Errorf("syslog datagram %q", got)
	}
	if err := l.OpenSyslog("", "nohost"); err == nil {
		t.Errorf("syslog target without a port accepted")
	}
}
