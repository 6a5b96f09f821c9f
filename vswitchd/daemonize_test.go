package vswitchd

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
	"github.com/govswitch/govswitch/unixctl"
	"golang.org/x/sys/unix"
)

// asOVSVswitchd returns a command that runs this test binary under the
// name ovs-vswitchd (TestMain then runs Main), found on PATH as ovs-ctl
// finds it, with OVS_RUNDIR and OVS_LOGDIR in dir.
func asOVSVswitchd(t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	bin := filepath.Join(dir, "sbin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "ovs-vswitchd")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	cmd := exec.Command("ovs-vswitchd", args...)
	cmd.Path = filepath.Join(bin, "ovs-vswitchd")
	cmd.Env = append(os.Environ(), "OVS_RUNDIR="+dir, "OVS_LOGDIR="+dir, "PATH="+bin+":"+os.Getenv("PATH"))
	cmd.Dir = dir
	return cmd
}

var vlogFileLine = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\|\d{5}\|[a-z_]+\|(EMER|ERR|WARN|INFO|DBG)\|`)

// readVlogFile reads a daemon's log file, failing the test if it cannot
// be read and flagging each line not in vlog's file format.
func readVlogFile(t *testing.T, path string) []byte {
	t.Helper()
	log, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		if !vlogFileLine.MatchString(l) {
			t.Errorf("log line not in vlog format: %q", l)
		}
	}
	return log
}

// TestDetach: --detach returns only once the daemon serves: the pidfile
// names a live, locked process, the control socket answers, the log file
// is in vlog format; the daemon runs in its own session, in /, under the
// name ovs-vswitchd (what ovs-ctl checks in /proc/PID/comm); SIGTERM
// stops it and removes the pidfile.
func TestDetach(t *testing.T) {
	dir := t.TempDir()
	cmd := asOVSVswitchd(t, dir, "--datapath", "dummy", "--bridge", "br0", "--detach", "--pidfile",
		"--log-file", "-vconsole:off", "-vsyslog:off", "--mlockall")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("--detach: %v\n%s", err, out)
	}
	t.Logf("--detach returned after %v", time.Since(start).Round(time.Millisecond))
	pidfile := filepath.Join(dir, "ovs-vswitchd.pid")
	pid, err := unixctl.ReadPidfile(pidfile)
	if err != nil {
		t.Fatalf("right after --detach returned: %v", err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if pid == cmd.Process.Pid {
		t.Errorf("the pidfile names the starting process")
	}
	if _, err := os.Stat(unixctl.SocketPath(dir, "ovs-vswitchd", pid)); err != nil {
		t.Errorf("control socket: %v", err)
	}
	if _, err := exec.LookPath("ovs-appctl"); err == nil {
		a := exec.Command("ovs-appctl", "version")
		a.Env = cmd.Env
		if out, err := a.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), Version) {
			t.Errorf("ovs-appctl version: %v: %s", err, out)
		}
	}
	comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if got := strings.TrimSpace(string(comm)); got != "ovs-vswitchd" {
		t.Errorf("/proc/PID/comm = %q, want ovs-vswitchd", got)
	}
	if cwd, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd"); cwd != "/" {
		t.Errorf("daemon's cwd = %q, want / (no --no-chdir)", cwd)
	}
	if sid, _ := unix.Getsid(pid); sid != pid {
		t.Errorf("daemon's session = %d, want its own (%d)", sid, pid)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "pidfile removed", func() bool { _, err := os.Stat(pidfile); return os.IsNotExist(err) })
	waitUntil(t, 10*time.Second, "the daemon to exit", func() bool { return gone(pid) })
	log := readVlogFile(t, filepath.Join(dir, "ovs-vswitchd.log"))
	if !strings.Contains(string(log), "|vlog|INFO|opened log file "+filepath.Join(dir, "ovs-vswitchd.log")) ||
		!strings.Contains(string(log), "|bridge|INFO|govswitchd stopped") {
		t.Errorf("log:\n%s", log)
	}
}

// TestDetachFailure: a daemon that cannot start makes --detach fail with
// its error on stderr, and exit status 1, not a parent that returned 0.
func TestDetachFailure(t *testing.T) {
	dir := t.TempDir()
	cmd := asOVSVswitchd(t, dir, "--datapath", "dummy", "--bridge", "br0", "--detach",
		"--unixctl="+filepath.Join(dir, "no/such/dir/ctl"), "-vconsole:off", "-vsyslog:off")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("err = %v, want exit status 1; output:\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "ovs-vswitchd: unixctl listen") {
		t.Errorf("output %q: want the daemon's error, named for ovs-vswitchd", out)
	}
}

// TestMonitorRestart: under --monitor a daemon that crashes is started
// again (a new pid in the pidfile, serving), and one stopped with SIGTERM
// takes the monitor with it.
func TestMonitorRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the monitor's 10 s restart spacing")
	}
	dir := t.TempDir()
	cmd := asOVSVswitchd(t, dir, "--datapath", "dummy", "--bridge", "br0", "--detach", "--monitor", "--no-chdir",
		"--pidfile", "--log-file", "-vconsole:off", "-vsyslog:off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("--detach --monitor: %v\n%s", err, out)
	}
	pidfile := filepath.Join(dir, "ovs-vswitchd.pid")
	pid, err := unixctl.ReadPidfile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	f := strings.Fields(string(stat))
	mon, _ := strconv.Atoi(f[3])
	t.Cleanup(func() { syscall.Kill(mon, syscall.SIGKILL); syscall.Kill(pid, syscall.SIGKILL) })
	if cwd, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd"); cwd != dir {
		t.Errorf("daemon's cwd = %q, want %s (--no-chdir)", cwd, dir)
	}
	syscall.Kill(pid, syscall.SIGSEGV)
	var pid2 int
	waitUntil(t, 20*time.Second, "a restarted daemon", func() bool {
		pid2, err = unixctl.ReadPidfile(pidfile)
		return err == nil && pid2 != pid
	})
	syscall.Kill(pid2, syscall.SIGTERM)
	waitUntil(t, 10*time.Second, "the monitor to exit", func() bool { return gone(mon) })
	log, _ := os.ReadFile(filepath.Join(dir, "ovs-vswitchd.log"))
	if !regexp.MustCompile(`\|daemon_unix\|ERR\|pid `+strconv.Itoa(pid)+` died, .*, restarting`).Match(log) ||
		!regexp.MustCompile(`\|daemon_unix\|INFO\|pid `+strconv.Itoa(pid2)+` died, exit status 0, exiting`).Match(log) {
		t.Errorf("log:\n%s", log)
	}
}

func waitUntil(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOverwritePidfile: a second daemon on a locked pidfile refuses to
// start, naming the holder, unless --overwrite-pidfile.
func TestOverwritePidfile(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--datapath", "dummy", "--bridge", "br0", "--detach", "--pidfile", "-vconsole:off", "-vsyslog:off"}
	if out, err := asOVSVswitchd(t, dir, args...).CombinedOutput(); err != nil {
		t.Fatalf("first daemon: %v\n%s", err, out)
	}
	pidfile := filepath.Join(dir, "ovs-vswitchd.pid")
	first, err := unixctl.ReadPidfile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(first, syscall.SIGKILL) })
	out, err := asOVSVswitchd(t, dir, args...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "locked by pid "+strconv.Itoa(first)) {
		t.Errorf("second daemon on a locked pidfile: %v\n%s", err, out)
	}
	if out, err := asOVSVswitchd(t, dir, append(args, "--overwrite-pidfile")...).CombinedOutput(); err != nil {
		t.Fatalf("--overwrite-pidfile: %v\n%s", err, out)
	}
	second, err := unixctl.ReadPidfile(pidfile)
	if err != nil || second == first {
		t.Fatalf("after --overwrite-pidfile the pidfile names %d (%v), first daemon was %d", second, err, first)
	}
	syscall.Kill(second, syscall.SIGTERM)
}

// gone reports whether pid has exited (a zombie counts: whoever reaps
// orphans here may be slow).
func gone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || strings.HasPrefix(s[i+1:], " Z")
}

// ovsStartFilters are the lines OVS's test macro _OVS_VSWITCHD_START
// (tests/ofproto-macros.at, 3.1) deletes from ovs-vswitchd --detach's
// stderr before requiring it to be empty; the ones govswitchd can print.
var ovsStartFilters = []string{"vlog|INFO|opened log file", "reconnect|INFO|"}

// TestOVSTestSuiteStart: govswitchd started the way OVS's own test suite
// starts ovs-vswitchd passes that suite's checks: the command succeeds
// with nothing on stderr but what the macro filters out, ovs-vsctl
// add-br works, the log holds no WARN, ERR or EMER line (check_logs), and
// ovs-appctl exit ends the daemon.
func TestOVSTestSuiteStart(t *testing.T) {
	srv := ovsdbtest.Start(t)
	dir := srv.Dir                                                      // the database socket is at $OVS_RUNDIR/db.sock, the default
	cmd := asOVSVswitchd(t, dir, "--datapath", "dummy", "-vsyslog:off", // extra arguments, as the macro's $1
		"--detach", "--no-chdir", "--pidfile", "--log-file",
		"-vvconn", "-vofproto_dpif", "-vunixctl")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("start: %v\n%s", err, stderr.String())
	}
	pid, err := unixctl.ReadPidfile(filepath.Join(dir, "ovs-vswitchd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
lines:
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		for _, f := range ovsStartFilters {
			if strings.Contains(l, f) {
				continue lines
			}
		}
		if l != "" {
			t.Errorf("stderr line the test macro would fail on: %q", l)
		}
	}
	if out, err := srv.Vsctl(20*time.Second, "add-br", "br0", "--", "set", "Bridge", "br0", "fail-mode=secure"); err != nil {
		t.Fatalf("ovs-vsctl add-br: %v\n%s", err, out)
	}
	a := exec.Command("ovs-appctl", "--timeout=10", "-t", "ovs-vswitchd", "exit")
	a.Env = cmd.Env
	if out, err := a.CombinedOutput(); err != nil {
		t.Fatalf("ovs-appctl exit: %v\n%s", err, out)
	}
	waitUntil(t, 10*time.Second, "the daemon to exit", func() bool { return gone(pid) })
	log, err := os.ReadFile(filepath.Join(dir, "ovs-vswitchd.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "|WARN|") || strings.Contains(l, "|ERR|") || strings.Contains(l, "|EMER|") {
			t.Errorf("check_logs would fail on %q", l)
		}
	}
	if !strings.Contains(string(log), "|bridge|INFO|bridge br0: added") || !strings.Contains(string(log), "|bridge|INFO|govswitchd stopped") {
		t.Errorf("log:\n%s", log)
	}
}
