// Package ovsdbtest runs a real ovsdb-server with the Open_vSwitch schema
// for tests, and drives it with ovs-vsctl.
package ovsdbtest

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Schema is where Debian's openvswitch-common installs the schema.
const Schema = "/usr/share/openvswitch/vswitch.ovsschema"

// Server is an ovsdb-server child process serving a fresh database on a
// unix socket in a test's temporary directory.
type Server struct {
	// Remote is the socket as a libovsdb / ovs-vsctl remote, "unix:PATH".
	Remote string
	Dir    string
	t      testing.TB
	cmd    *exec.Cmd
	mu     sync.Mutex
	log    bytes.Buffer
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// Start creates a database, starts ovsdb-server on it, initialises the
// root row (ovs-vsctl init) and stops the server in t's cleanup. It skips
// the test when ovsdb-server or the schema is not installed.
func Start(t testing.TB) *Server {
	t.Helper()
	for _, bin := range []string{"ovsdb-server", "ovsdb-tool", "ovs-vsctl"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed (Debian package openvswitch-switch)", bin)
		}
	}
	if _, err := os.Stat(Schema); err != nil {
		t.Skipf("schema: %v", err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "conf.db")
	sock := filepath.Join(dir, "db.sock")
	if out, err := exec.Command("ovsdb-tool", "create", db, Schema).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool create: %v\n%s", err, out)
	}
	s := &Server{Remote: "unix:" + sock, Dir: dir, t: t}
	s.start()
	t.Cleanup(s.kill)
	if out, err := s.Vsctl(10*time.Second, "--no-wait", "init"); err != nil {
		t.Fatalf("ovs-vsctl init: %v\n%s", err, out)
	}
	return s
}

// start runs ovsdb-server on the database in s.Dir and waits for its
// socket.
func (s *Server) start() {
	s.t.Helper()
	sock := strings.TrimPrefix(s.Remote, "unix:")
	os.Remove(sock)
	s.cmd = exec.Command("ovsdb-server", filepath.Join(s.Dir, "conf.db"), "--remote=punix:"+sock,
		"--unixctl="+filepath.Join(s.Dir, "ovsdb-server.ctl"), "--no-chdir", "-vconsole:off", "-vfile:info",
		"--log-file="+filepath.Join(s.Dir, "ovsdb-server.log"))
	s.cmd.Stderr = lockedWriter{&s.mu, &s.log}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("ovsdb-server: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The socket file appears at bind, before listen: wait for a
		// connection to be accepted, not for the file.
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("ovsdb-server does not listen on %s: %s", sock, s.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) kill() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

// Restart kills ovsdb-server and starts it again on the same database
// and socket, as a package upgrade or a crash would.
func (s *Server) Restart() {
	s.t.Helper()
	s.kill()
	s.start()
}

// Log returns what ovsdb-server wrote to stderr and its log file.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := os.ReadFile(filepath.Join(s.Dir, "ovsdb-server.log"))
	return s.log.String() + string(b)
}

// Vsctl runs ovs-vsctl against the server with a timeout (ovs-vsctl's own
// --timeout, and a kill after a little more), and returns its combined
// output. A command that waits for the switch and times out fails with
// ovs-vsctl's own error.
func (s *Server) Vsctl(timeout time.Duration, args ...string) (string, error) {
	secs := int(timeout / time.Second)
	if secs < 1 {
		secs = 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+2*time.Second)
	defer cancel()
	full := append([]string{"--db=" + s.Remote, "--timeout=" + strconv.Itoa(secs)}, args...)
	out, err := exec.CommandContext(ctx, "ovs-vsctl", full...).CombinedOutput()
	return strings.TrimRight(string(out), "\n"), err
}
