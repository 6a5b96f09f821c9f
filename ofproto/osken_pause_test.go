package ofproto

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConnOsKenPause: os-ken (python3-os-ken) as the controller, over
// OpenFlow 1.3 (testdata/osken_pause.py), asks for packet-in2, installs a
// controller(userdata=01.02.03,pause),output:2 flow with os-ken's own
// NXActionController2 encoding, decodes our packet-in2 with os-ken's
// NXTPacketIn2 parser and sends NXT_RESUME: the frame reaches p2 only
// through the resume.
func TestConnOsKenPause(t *testing.T) {
	if _, err := exec.LookPath("osken-manager"); err != nil {
		t.Skip("osken-manager not installed (Debian python3-os-ken)")
	}
	app, err := filepath.Abs("testdata/osken_pause.py")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "osken-manager", "--ofp-listen-host", "127.0.0.1",
		"--ofp-tcp-listen-port", fmt.Sprint(port), app)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("osken-manager output:\n%s", out.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("osken-manager does not listen: %v", err)
		}
	}
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure, HasControllers: true}, ConnConfig{
		Controllers: []string{fmt.Sprintf("tcp:127.0.0.1:%d", port)}})
	// os-ken is Python: under load its first flows take a while.
	for deadline := time.Now().Add(30 * time.Second); s.b.Tables.Len() < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("os-ken installed %d flows in 30 s, want 2", s.b.Tables.Len())
		}
	}
	// The flows are in; the packet-in format, sent before them on the
	// same connection, is too.
	f := frame(1, 2)
	if err := s.devs["p1"].Send(f); err != nil {
		t.Fatal(err)
	}
	if got, err := s.devs["p2"].Recv(20 * time.Second); err != nil || !bytes.Equal(got, f) {
		t.Fatalf("p2 got % x, %v; want the frame after os-ken's resume", got, err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "PAUSE resumed"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("os-ken never said it resumed")
		}
	}
	if !strings.Contains(out.String(), "PAUSE packet-in2 userdata=010203 continuation=True reason=1") {
		t.Errorf("os-ken did not read the packet-in2 as sent:\n%s", out.String())
	}
	// And back: port 2 to port 1 is a plain flow.
	if err := s.devs["p2"].Send(frame(2, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.devs["p1"].Recv(10 * time.Second); err != nil {
		t.Fatalf("p1: %v", err)
	}
}
