package vswitchd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
)

// The conntrack helpers against real FTP and TFTP programs: pyftpdlib
// (Debian's python3-pyftpdlib, what OVS's own FTP tests serve with) and
// wget as the FTP client, busybox's tftp as the TFTP client. h1 (port 1)
// is inside, h2 (port 2) outside. The firewall lets in only the control
// connections and what conntrack calls related, so a data connection gets
// through only when the helper has read the control traffic and expects it.

// ctALGFlows: ARP by NORMAL; untracked IP through conntrack into table 1.
// There a new FTP control connection either way (inside to h2's server,
// outside to h1's) and a TFTP request from inside are committed with alg;
// established traffic passes both ways; related traffic is committed and
// passes; everything else, a new data connection in particular, drops.
func ctALGFlows(ftpAlg, tftpAlg string) []string {
	return []string{
		"table=0,priority=100,arp,actions=NORMAL",
		"table=0,priority=1,ip,ct_state=-trk,actions=ct(table=1)",
		"table=1,priority=20,tcp,in_port=1,tp_dst=21,ct_state=+trk+new,actions=ct(commit" + ftpAlg + "),output:2",
		"table=1,priority=20,tcp,in_port=2,tp_dst=21,ct_state=+trk+new,actions=ct(commit" + ftpAlg + "),output:1",
		"table=1,priority=20,udp,in_port=1,tp_dst=69,ct_state=+trk+new,actions=ct(commit" + tftpAlg + "),output:2",
		"table=1,priority=10,ip,in_port=1,ct_state=+trk+est,actions=output:2",
		"table=1,priority=10,ip,in_port=2,ct_state=+trk+est,actions=output:1",
		"table=1,priority=10,ip,in_port=1,ct_state=+trk+rel,actions=ct(commit),output:2",
		"table=1,priority=10,ip,in_port=2,ct_state=+trk+rel,actions=ct(commit),output:1",
	}
}

// servePyFTP runs pyftpdlib inside ns on addr:21, anonymous and read-only,
// serving dir; it returns once the server accepts connections (checked
// from inside ns, so nothing crosses the switch).
func servePyFTP(t *testing.T, ns *testbed.Netns, addr, dir string) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import pyftpdlib").Run(); err != nil {
		t.Fatalf("python3-pyftpdlib is missing (scripts/install-deps --test installs it): %v", err)
	}
	cmd := exec.Command("ip", "netns", "exec", ns.Name, "/usr/bin/python3", "-m", "pyftpdlib",
		"-i", addr, "-p", "21", "-d", dir)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		t.Logf("pyftpdlib on %s:\n%s", addr, log.String())
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := ns.Do(func() error {
			c, err := net.DialTimeout("tcp", addr+":21", time.Second)
			if err == nil {
				c.Close()
			}
			return err
		})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pyftpdlib on %s:21 never listened: %v\n%s", addr, err, log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// wgetFTP fetches ftp://server/name from ns with wget, active or passive,
// and returns what it got.
func wgetFTP(ns *testbed.Netns, server, name string, passive bool) (string, error) {
	mode := "--no-passive-ftp"
	if passive {
		mode = "--passive-ftp"
	}
	out, err := ns.Exec("wget", "-q", "-O", "-", "-T", "5", "-t", "1", mode, "ftp://"+server+"/"+name)
	return out, err
}

// TestIntegrationConntrackFTPReal: an FTP download with wget from
// pyftpdlib through the firewall, in active mode (the server connects back
// to the inside client) and in passive mode (an outside client connects to
// a second port of an inside server). Without alg=ftp both data
// connections are new connections the firewall drops; with it the kernel's
// FTP helper expects them, they arrive +rel, and the file comes through.
func TestIntegrationConntrackFTPReal(t *testing.T) {
	b := newBed(t)
	appctl := b.startCt(t)
	dir := t.TempDir()
	want := strings.Repeat("govswitch ftp through conntrack\n", 2000) // 64 KB: several segments
	if err := os.WriteFile(filepath.Join(dir, "file.txt"), []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	servePyFTP(t, b.h2, "10.0.0.2", dir)
	servePyFTP(t, b.h1, "10.0.0.1", dir)

	b.addFlows(t, ctALGFlows("", ""))
	appctl("dpctl/flush-conntrack")
	if out, err := wgetFTP(b.h1, "10.0.0.2", "file.txt", false); err == nil {
		t.Errorf("active FTP got through without the helper (%d bytes)", len(out))
	}
	if out, err := wgetFTP(b.h2, "10.0.0.1", "file.txt", true); err == nil {
		t.Errorf("passive FTP got through without the helper (%d bytes)", len(out))
	}

	b.ofctl(t, "del-flows")
	b.addFlows(t, ctALGFlows(",alg=ftp", ""))
	appctl("dpctl/flush-conntrack")
	for _, passive := range []bool{false, true} {
		client, server, mode := b.h1, "10.0.0.2", "active"
		if passive {
			client, server, mode = b.h2, "10.0.0.1", "passive"
		}
		out, err := wgetFTP(client, server, "file.txt", passive)
		if err != nil {
			t.Errorf("%s FTP through alg=ftp: %v", mode, err)
		} else if out != want {
			t.Errorf("%s FTP through alg=ftp: got %d bytes, want %d", mode, len(out), len(want))
		}
	}
	ct := appctl("dpctl/dump-conntrack")
	t.Logf("dpctl/dump-conntrack:\n%s", ct)
	if n := strings.Count(ct, "helper=ftp"); n < 2 {
		t.Errorf("%d connections with helper=ftp in dump-conntrack, want the two control connections", n)
	}
}

// serveTFTP is a one-file TFTP server (RFC 1350, read requests only) on
// addr:69 inside ns. As a TFTP server must, it answers each request from a
// new port, which is why conntrack needs a helper to relate the reply to
// the request.
func serveTFTP(t *testing.T, ns *testbed.Netns, addr string, file []byte) {
	t.Helper()
	var pc net.PacketConn
	if err := ns.Do(func() (err error) { pc, err = net.ListenPacket("udp", addr+":69"); return }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n < 4 || binary.BigEndian.Uint16(buf) != 1 { // RRQ
				continue
			}
			var c net.PacketConn
			if err := ns.Do(func() (err error) { c, err = net.ListenPacket("udp", addr+":0"); return }); err != nil {
				continue
			}
			go func() {
				defer c.Close()
				ack := make([]byte, 516)
				for block, off := uint16(1), 0; ; block++ {
					end := min(off+512, len(file))
					pkt := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 3), block)
					pkt = append(pkt, file[off:end]...)
					acked := false
					for try := 0; try < 5 && !acked; try++ {
						c.WriteTo(pkt, from)
						c.SetReadDeadline(time.Now().Add(time.Second))
						for {
							m, _, err := c.ReadFrom(ack)
							if err != nil {
								break
							}
							if m >= 4 && binary.BigEndian.Uint16(ack) == 4 && binary.BigEndian.Uint16(ack[2:]) == block {
								acked = true
								break
							}
						}
					}
					if !acked || end-off < 512 {
						return
					}
					off = end
				}
			}()
		}
	}()
}

// TestIntegrationConntrackTFTP: busybox's tftp client downloads a file
// from inside; the server's answers come from a port other than 69, so
// without alg=tftp they are a new flow from outside and drop, and with it
// the kernel's TFTP helper expects them and they pass as +rel.
func TestIntegrationConntrackTFTP(t *testing.T) {
	b := newBed(t)
	appctl := b.startCt(t)
	if _, err := exec.LookPath("busybox"); err != nil {
		t.Fatalf("busybox is missing (scripts/install-deps --test installs busybox-static): %v", err)
	}
	want := []byte(strings.Repeat("govswitch tftp\n", 200)) // 3000 bytes: six blocks
	serveTFTP(t, b.h2, "10.0.0.2", want)
	get := func() ([]byte, error) {
		out := filepath.Join(t.TempDir(), "got")
		if msg, err := b.h1.Exec("timeout", "10", "busybox", "tftp", "-g", "-r", "file", "-l", out, "10.0.0.2"); err != nil {
			return nil, fmt.Errorf("%w: %s", err, msg)
		}
		got, err := os.ReadFile(out)
		if err == nil && !bytes.Equal(got, want) {
			err = errors.New("file differs")
		}
		return got, err
	}

	b.addFlows(t, ctALGFlows("", ""))
	appctl("dpctl/flush-conntrack")
	if _, err := get(); err == nil {
		t.Errorf("TFTP got through without the helper")
	}
	b.ofctl(t, "del-flows")
	b.addFlows(t, ctALGFlows("", ",alg=tftp"))
	appctl("dpctl/flush-conntrack")
	if got, err := get(); err != nil {
		t.Errorf("TFTP through alg=tftp: %v (%d of %d bytes)", err, len(got), len(want))
	}
	ct := appctl("dpctl/dump-conntrack")
	t.Logf("dpctl/dump-conntrack:\n%s", ct)
	if !strings.Contains(ct, "helper=tftp") {
		t.Errorf("no connection with helper=tftp in dump-conntrack")
	}
}
