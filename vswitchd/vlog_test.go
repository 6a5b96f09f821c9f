package vswitchd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/datapath/dummy"
)

// TestVlogCommands: vlog/set, vlog/list, vlog/reopen and vlog/close on a
// running daemon, with ovs-vswitchd's arguments, table and errors.
func TestVlogCommands(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "ovs-vswitchd.log")
	var console strings.Builder
	cfg := Config{Datapath: "dummy", Bridges: []BridgeSpec{{Name: "br0"}}, Rundir: dir, Pidfile: "-",
		LogFile: logPath, Verbose: []string{"console:warn"}}
	d, err := New(cfg, dummy.New(), &console)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	run := func(cmd string, args ...string) (string, error) { return d.ctl.Run(cmd, args) }
	row := func(mod, c, s, f string) string { return fmt.Sprintf("\n%-16s %5s %10s %10s\n", mod, c, s, f) }

	out, _ := run("vlog/list")
	if !strings.HasPrefix(out, "                 console    syslog    file\n") || !strings.Contains(out, row("bridge", "WARN", "INFO", "INFO")) ||
		!strings.Contains(out, row("ofproto_dpif", "WARN", "INFO", "INFO")) {
		t.Errorf("vlog/list:\n%s", out)
	}
	if _, err := run("vlog/set", "bridge:file:dbg", "syslog:off"); err != nil {
		t.Fatal(err)
	}
	if out, _ := run("vlog/list"); !strings.Contains(out, row("bridge", "WARN", "OFF", "DBG")) {
		t.Errorf("after vlog/set bridge:file:dbg syslog:off:\n%s", out)
	}
	if _, err := run("vlog/set", "nosuch"); err == nil || err.Error() != `no destination, level, or module "nosuch"` {
		t.Errorf("vlog/set nosuch: %v", err)
	}
	d.log.Debug("a debug line")
	if err := os.Rename(logPath, logPath+".1"); err != nil {
		t.Fatal(err)
	}
	if _, err := run("vlog/reopen"); err != nil {
		t.Fatal(err)
	}
	d.log.Warn("after reopen")
	if _, err := run("vlog/close"); err != nil {
		t.Fatal(err)
	}
	d.log.Warn("after close")
	if _, err := run("vlog/set", "PATTERN:console:%c|%p|%m"); err != nil {
		t.Fatal(err)
	}
	if out, _ := run("vlog/list-pattern"); !strings.Contains(out, "\nCONSOLE  none                              %c|%p|%m\n") {
		t.Errorf("vlog/list-pattern:\n%s", out)
	}
	d.log.Warn("plain")
	old, _ := os.ReadFile(logPath + ".1")
	cur, _ := os.ReadFile(logPath)
	if !strings.Contains(string(old), "|bridge|DBG|a debug line") {
		t.Errorf("rotated file:\n%s", old)
	}
	if !strings.Contains(string(cur), "|bridge|WARN|after reopen") || strings.Contains(string(cur), "after close") {
		t.Errorf("reopened file:\n%s", cur)
	}
	if !strings.Contains(console.String(), "|bridge|WARN|after close") || strings.Contains(console.String(), "a debug line") ||
		!strings.Contains(console.String(), "\nbridge|WARN|plain\n") {
		t.Errorf("console (at warn):\n%s", console.String())
	}
	d.vlog.Close()
	d2, _ := New(Config{Datapath: "dummy", Bridges: []BridgeSpec{{Name: "br1"}}, Rundir: dir, Pidfile: "-"}, dummy.New(), &console)
	if err := d2.Start(); err != nil {
		t.Fatal(err)
	}
	defer d2.Stop()
	if _, err := d2.ctl.Run("vlog/reopen", nil); err == nil || !strings.Contains(err.Error(), "not configured") {
		t.Errorf("vlog/reopen without a log file: %v", err)
	}
}
