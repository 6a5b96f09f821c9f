package unixctl

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain doubles as a helper process that holds a pidfile lock, since
// POSIX locks are only visible from another process.
func TestMain(m *testing.M) {
	if path := os.Getenv("UNIXCTL_HOLD_PIDFILE"); path != "" {
		p, err := CreatePidfile(path)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
		p.Remove()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func newTestServer(t *testing.T) *Server {
	t.Helper()
	s := NewServer("govswitchd (govswitch) test")
	s.Register("echo", "ARG...", 1, 3, func(a []string) (string, error) { return strings.Join(a, "|") + "\n", nil })
	s.Register("fail", "", 0, 0, func([]string) (string, error) { return "", errors.New("it failed") })
	s.Register("empty", "", 0, 0, func([]string) (string, error) { return "", nil })
	path := filepath.Join(t.TempDir(), "test.ctl")
	if err := s.Listen(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestProtocol(t *testing.T) {
	s := newTestServer(t)
	c, err := net.Dial("unix", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	tests := []struct {
		name, req, want string
	}{
		{"success", `{"id":0,"method":"echo","params":["a","b"]}`, `{"id":0,"result":"a|b\n","error":null}`},
		{"string id echoed", `{"id":"x7","method":"empty","params":[]}`, `{"id":"x7","result":"","error":null}`},
		{"handler error", `{"id":2,"method":"fail","params":[]}`, `{"id":2,"result":null,"error":"it failed\n"}`},
		{"unknown", `{"id":3,"method":"nope","params":[]}`,
			`{"id":3,"result":null,"error":"\"nope\" is not a valid command (use \"list-commands\" to see a list of valid commands)\n"}`},
		{"too few", `{"id":4,"method":"echo","params":[]}`, `{"id":4,"result":null,"error":"\"echo\" command requires at least 1 arguments\n"}`},
		{"too many", `{"id":5,"method":"echo","params":["1","2","3","4"]}`, `{"id":5,"result":null,"error":"\"echo\" command takes at most 3 arguments\n"}`},
		{"non-string", `{"id":6,"method":"echo","params":[1]}`, `{"id":6,"result":null,"error":"\"echo\" command has non-string argument\n"}`},
		{"version", `{"id":7,"method":"version","params":[]}`, `{"id":7,"result":"govswitchd (govswitch) test\n","error":null}`},
		{"set-options text", `{"id":8,"method":"set-options","params":["--format","text"]}`, `{"id":8,"result":"","error":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := fmt.Fprintln(c, tt.req); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(line); got != tt.want {
				t.Errorf("reply\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestPipelinedAndNoNewlines(t *testing.T) {
	s := newTestServer(t)
	c, err := net.Dial("unix", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Three requests concatenated with no separators, as JSON-RPC streams allow.
	fmt.Fprint(c, `{"id":1,"method":"echo","params":["x"]}{"id":2,"method":"echo","params":["y"]}{"id":3,"method":"empty","params":[]}`)
	dec := json.NewDecoder(c)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i, want := range []string{"x\n", "y\n", ""} {
		var rep map[string]any
		if err := dec.Decode(&rep); err != nil {
			t.Fatal(err)
		}
		if rep["result"] != want || rep["id"] != float64(i+1) || len(rep) != 3 {
			t.Errorf("reply %d: %v", i, rep)
		}
	}
}

func TestBadClientsAreDropped(t *testing.T) {
	s := newTestServer(t)
	for _, tt := range []struct{ name, send string }{
		{"garbage", "this is not json"},
		{"oversize", `{"id":1,"method":"echo","params":["` + strings.Repeat("a", MaxRequest+10) + `"]}`},
		{"notification", `{"method":"echo","params":["a"]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("unix", s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			go fmt.Fprint(c, tt.send)
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 100)
			if n, err := c.Read(buf); err == nil {
				t.Errorf("server answered %q instead of closing", buf[:n])
			} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Errorf("server neither answered nor closed")
			}
		})
	}
	// The server still serves others.
	if out, err := s.Run("echo", []string{"ok"}); err != nil || out != "ok\n" {
		t.Errorf("after bad clients: %q %v", out, err)
	}
	c, err := net.Dial("unix", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, `{"id":1,"method":"empty","params":[]}`)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Errorf("a good client after bad ones: %v", err)
	}
}

func TestSocketIsOwnerOnly(t *testing.T) {
	s := newTestServer(t)
	fi, err := os.Stat(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("socket mode %v: group/other can connect", fi.Mode().Perm())
	}
}

func TestListCommands(t *testing.T) {
	s := newTestServer(t)
	out, err := s.Run("list-commands", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "The available commands are:\n" +
		"  echo                    ARG...\n" +
		"  empty                   \n" +
		"  fail                    \n" +
		"  list-commands           \n" +
		"  set-options             [--format text|json]\n" +
		"  version                 \n"
	if out != want {
		t.Errorf("list-commands\n got %q\nwant %q", out, want)
	}
}

// holdPidfile starts a child process that locks path, returning it.
func holdPidfile(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "UNIXCTL_HOLD_PIDFILE="+path)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("child: %q", line)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	return cmd
}

func TestPidfileAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.pid")
	child := holdPidfile(t, path)
	pid, err := ReadPidfile(path)
	if err != nil || pid != child.Process.Pid {
		t.Fatalf("ReadPidfile = %d, %v; child is %d", pid, err, child.Process.Pid)
	}
	_, err = CreatePidfile(path)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(child.Process.Pid)) {
		t.Errorf("second daemon: err = %v, want one naming pid %d", err, child.Process.Pid)
	}
	// An unlocked pidfile (a crashed daemon's) is stale, and can be taken over.
	stale := filepath.Join(t.TempDir(), "stale.pid")
	os.WriteFile(stale, []byte("999999\n"), 0o644)
	if _, err := ReadPidfile(stale); err == nil {
		t.Errorf("stale pidfile read as live")
	}
	p, err := CreatePidfile(stale)
	if err != nil {
		t.Fatalf("taking over a stale pidfile: %v", err)
	}
	if b, _ := os.ReadFile(stale); string(b) != fmt.Sprintf("%d\n", os.Getpid()) {
		t.Errorf("pidfile contents %q", b)
	}
	p.Remove()
}

// TestOvsAppctl drives the real ovs-appctl (Debian openvswitch-common)
// against our server through its default target discovery: OVS_RUNDIR, the
// locked ovs-vswitchd.pid, and ovs-vswitchd.<pid>.ctl.
func TestOvsAppctl(t *testing.T) {
	appctl, err := exec.LookPath("ovs-appctl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ovs-appctl not installed; CI must install openvswitch-common")
		}
		t.Skip("ovs-appctl not installed (apt-get install openvswitch-common)")
	}
	rundir := t.TempDir()
	pf, err := CreatePidfile(filepath.Join(rundir, "ovs-vswitchd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Remove()
	s := NewServer("govswitchd (govswitch) test")
	s.Register("fdb/show", "bridge", 1, 1, func(a []string) (string, error) {
		return " port  VLAN  MAC                Age\n", nil
	})
	s.Register("fail", "", 0, 0, func([]string) (string, error) { return "", errors.New("no such bridge") })
	if err := s.Listen(SocketPath(rundir, "ovs-vswitchd", os.Getpid())); err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(appctl, args...)
		cmd.Env = append(os.Environ(), "OVS_RUNDIR="+rundir)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	tests := []struct {
		name       string
		args       []string
		wantOut    string
		wantErrSub string
		wantCode   int
	}{
		{"version", []string{"version"}, "govswitchd (govswitch) test\n", "", 0},
		{"args", []string{"fdb/show", "br0"}, " port  VLAN  MAC                Age\n", "", 0},
		{"unknown command", []string{"no/such"}, "", `"no/such" is not a valid command`, 2},
		{"arity", []string{"fdb/show"}, "", `"fdb/show" command requires at least 1 arguments`, 2},
		{"handler error", []string{"fail"}, "", "no such bridge", 2},
		{"list-commands", []string{"list-commands"}, "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if tt.wantOut != "" && out != tt.wantOut {
				t.Errorf("stdout %q, want %q", out, tt.wantOut)
			}
			if tt.wantErrSub != "" && !strings.Contains(errOut, tt.wantErrSub) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tt.wantErrSub)
			}
			if tt.name == "list-commands" && !strings.Contains(out, "  fdb/show                bridge") {
				t.Errorf("list-commands output %q", out)
			}
		})
	}
	// -t with the socket path bypasses the pidfile.
	if out, _, code := run("-t", s.Addr(), "version"); code != 0 || out != "govswitchd (govswitch) test\n" {
		t.Errorf("-t path: %q exit %d", out, code)
	}
}

// TestCloseAnswersRequestInFlight: a command that makes the daemon close
// its server (exit) still gets its reply, and idle connections are
// closed at once.
func TestCloseAnswersRequestInFlight(t *testing.T) {
	s := NewServer("test")
	closing := make(chan struct{})
	closed := make(chan struct{})
	s.Register("exit", "", 0, 0, func([]string) (string, error) {
		close(closing)
		// Close must not finish before this reply is written.
		select {
		case <-closed:
			return "", errors.New("Close returned while a request was running")
		case <-time.After(200 * time.Millisecond):
		}
		return "bye\n", nil
	})
	path := filepath.Join(t.TempDir(), "test.ctl")
	if err := s.Listen(path); err != nil {
		t.Fatal(err)
	}
	idle, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(`{"id":1,"method":"exit","params":[]}`)); err != nil {
		t.Fatal(err)
	}
	go func() {
		<-closing
		s.Close()
		close(closed)
	}()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if want := `{"id":1,"result":"bye\n","error":null}` + "\n"; line != want || err != nil {
		t.Fatalf("reply %q, %v; want %q", line, err, want)
	}
	<-closed
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err == nil {
		t.Error("idle connection still open after Close")
	}
}
