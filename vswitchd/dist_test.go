package vswitchd

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestSystemdUnit keeps dist/govswitchd.service honest: its ExecStart
// must be a command line govswitchd accepts, database-driven, with the
// pidfile and rundir ovs-appctl looks for.
func TestSystemdUnit(t *testing.T) {
	f, err := os.Open("../dist/govswitchd.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var exec string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "ExecStart="); ok {
			exec = v
		}
	}
	fields := strings.Fields(exec)
	if len(fields) < 2 || !strings.HasSuffix(fields[0], "/govswitchd") {
		t.Fatalf("ExecStart %q does not run govswitchd", exec)
	}
	cfg, help, version, err := ParseArgs(fields[1:])
	if err != nil || help || version {
		t.Fatalf("govswitchd rejects the unit's arguments %q: %v", fields[1:], err)
	}
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the unit's configuration is invalid: %v", err)
	}
	if cfg.OVSDB != "unix:/var/run/openvswitch/db.sock" || cfg.Rundir != DefaultRundir ||
		cfg.Pidfile != DefaultRundir+"/ovs-vswitchd.pid" {
		t.Errorf("the unit should run from ovsdb-server with ovs-vswitchd's rundir and pidfile: %+v", cfg)
	}
}
