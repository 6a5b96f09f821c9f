package testbed

import (
	"bytes"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// nsInode is the inode of a network namespace file (an nsfs inode), which
// names the namespace.
func nsInode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return st.Ino
}

func TestIntegrationNetns(t *testing.T) {
	Require(t)
	var name string
	t.Run("lifetime", func(t *testing.T) {
		ns := NewNetns(t)
		name = ns.Name
		nsPath := "/run/netns/" + ns.Name
		self := nsInode(t, "/proc/thread-self/ns/net")
		target := nsInode(t, nsPath)
		if self == target {
			t.Fatalf("new namespace %s is the caller's namespace", ns.Name)
		}

		var inside uint64
		var ifaces []net.Interface
		err := ns.Do(func() error {
			inside = nsInode(t, "/proc/thread-self/ns/net")
			var err error
			ifaces, err = net.Interfaces()
			return err
		})
		if err != nil {
			t.Fatalf("Do: %v", err)
		}
		if inside != target {
			t.Errorf("inside Do the thread is in namespace %d, want %d", inside, target)
		}
		// A fresh namespace has lo, up, and nothing else up. Once a tunnel
		// module is loaded (another package's test adds GRE vports) the
		// kernel also creates its fallback devices (gre0, gretap0,
		// erspan0, ...) in every new namespace, down: those are expected.
		loUp := false
		for _, ifi := range ifaces {
			switch {
			case ifi.Name == "lo":
				loUp = ifi.Flags&net.FlagUp != 0
			case ifi.Flags&net.FlagUp != 0:
				t.Errorf("fresh namespace has %s up: %v", ifi.Name, ifaces)
			}
		}
		if !loUp {
			t.Errorf("fresh namespace interfaces %v: want lo, up", ifaces)
		}
		if after := nsInode(t, "/proc/thread-self/ns/net"); after != self {
			t.Errorf("after Do the thread is in namespace %d, want %d", after, self)
		}

		want := errors.New("fn failed")
		if err := ns.Do(func() error { return want }); err != want {
			t.Errorf("Do returned %v, want fn's error %v", err, want)
		}

		out, err := ns.Exec("ip", "-o", "link", "show", "lo")
		if err != nil {
			t.Fatalf("Exec: %v", err)
		}
		if !strings.Contains(out, "LOOPBACK,UP") {
			t.Errorf("ip link show lo in %s: %q, want it up", ns.Name, out)
		}
		if _, err := ns.Exec("false"); err == nil {
			t.Errorf("Exec(false) returned no error")
		}
	})
	if _, err := os.Stat("/run/netns/" + name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace %s still there after cleanup: %v", name, err)
	}
}

// Frame rows: one field per row, checked against IEEE 802.3 and RFC 826.
var (
	testSrcMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}
	testSrcIP  = net.IP{10, 99, 0, 2}
	testPeerIP = net.IP{10, 99, 0, 1}
)

// arpRequest asks who has testPeerIP, from testSrcMAC/testSrcIP.
func arpRequest() []byte {
	var f []byte
	f = append(f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff) // eth dst: broadcast
	f = append(f, testSrcMAC...)                      // eth src
	f = append(f, 0x08, 0x06)                         // ethertype: ARP
	f = append(f, 0x00, 0x01)                         // htype: Ethernet
	f = append(f, 0x08, 0x00)                         // ptype: IPv4
	f = append(f, 0x06, 0x04)                         // hlen 6, plen 4
	f = append(f, 0x00, 0x01)                         // op: request
	f = append(f, testSrcMAC...)                      // sha
	f = append(f, testSrcIP...)                       // spa
	f = append(f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00) // tha: unknown
	f = append(f, testPeerIP...)                      // tpa
	return f
}

// isARPReply reports whether f is an ARP reply addressed to testSrcMAC.
func isARPReply(f []byte) bool {
	return len(f) >= 42 &&
		bytes.Equal(f[0:6], testSrcMAC) &&
		f[12] == 0x08 && f[13] == 0x06 && // ARP
		f[20] == 0x00 && f[21] == 0x02 // op: reply
}

// testFrame is a frame of the IEEE local experimental ethertype 0x88b5,
// which no stack answers, so it can only arrive because a test sent it.
func testFrame(src net.HardwareAddr, tag byte) []byte {
	var f []byte
	f = append(f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff) // eth dst: broadcast
	f = append(f, src...)                             // eth src
	f = append(f, 0x88, 0xb5)                         // ethertype: local experimental 1
	f = append(f, 'g', 'v', 's', tag)                 // payload
	f = append(f, make([]byte, 60-len(f))...)         // pad to the 60-byte minimum
	return f
}

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func TestIntegrationVethRaw(t *testing.T) {
	Require(t)
	const hostIf, nsIf = "gvstb0", "eth0"
	fdsBefore := openFDs(t)
	t.Run("pair", func(t *testing.T) {
		ns := NewNetns(t)
		peerMAC := Veth(t, hostIf, ns, nsIf, "10.99.0.1/24")

		out, err := ns.Exec("ip", "-o", "addr", "show", "dev", nsIf)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "10.99.0.1/24") {
			t.Errorf("%s in %s has addresses %q, want 10.99.0.1/24", nsIf, ns.Name, out)
		}
		host, err := netlink.LinkByName(hostIf)
		if err != nil {
			t.Fatalf("host end: %v", err)
		}
		if host.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("host end %s is down", hostIf)
		}
		if addrs, err := netlink.AddrList(host, netlink.FAMILY_ALL); err != nil || len(addrs) != 0 {
			t.Errorf("host end %s addresses %v (err %v), want none", hostIf, addrs, err)
		}

		if v, err := os.ReadFile("/proc/sys/net/ipv6/conf/" + hostIf + "/disable_ipv6"); err != nil || string(v) != "1\n" {
			t.Errorf("IPv6 on %s: disable_ipv6 %q (err %v), want 1", hostIf, v, err)
		}
		if out, err := ns.Exec("sysctl", "-n", "net.ipv6.conf."+nsIf+".disable_ipv6"); err != nil || out != "1\n" {
			t.Errorf("IPv6 on %s/%s: disable_ipv6 %q (err %v), want 1", ns.Name, nsIf, out, err)
		}

		root := OpenRaw(t, nil, hostIf)
		inNS := OpenRaw(t, ns, nsIf)

		t.Run("arp reply from namespace stack", func(t *testing.T) {
			if err := root.Send(arpRequest()); err != nil {
				t.Fatal(err)
			}
			reply, err := root.Recv(5*time.Second, isARPReply)
			if err != nil {
				t.Fatal(err)
			}
			if sha := net.HardwareAddr(reply[22:28]); !bytes.Equal(sha, peerMAC) {
				t.Errorf("ARP reply sender %v, want the peer MAC Veth returned %v", sha, peerMAC)
			}
			if spa := net.IP(reply[28:32]); !spa.Equal(testPeerIP) {
				t.Errorf("ARP reply sender IP %v, want %v", spa, testPeerIP)
			}
		})

		directions := []struct {
			name     string
			from, to *RawConn
			src      net.HardwareAddr
			tag      byte
		}{
			{name: "root to namespace", from: root, to: inNS, src: testSrcMAC, tag: 1},
			{name: "namespace to root", from: inNS, to: root, src: peerMAC, tag: 2},
		}
		for _, d := range directions {
			t.Run(d.name, func(t *testing.T) {
				want := testFrame(d.src, d.tag)
				if err := d.from.Send(want); err != nil {
					t.Fatal(err)
				}
				got, err := d.to.Recv(5*time.Second, func(f []byte) bool {
					return len(f) >= 18 && f[12] == 0x88 && f[13] == 0xb5 && f[17] == d.tag
				})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("received\n% x\nwant\n% x", got, want)
				}
			})
		}

		t.Run("own frames not received", func(t *testing.T) {
			if err := root.Send(testFrame(testSrcMAC, 3)); err != nil {
				t.Fatal(err)
			}
			_, err := root.Recv(200*time.Millisecond, func(f []byte) bool {
				return len(f) >= 18 && f[12] == 0x88 && f[13] == 0xb5 && f[17] == 3
			})
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("Recv on the sender got %v, want a timeout wrapping os.ErrDeadlineExceeded", err)
			}
		})
	})
	if _, err := netlink.LinkByName(hostIf); err == nil {
		t.Errorf("veth %s still there after cleanup", hostIf)
	}
	if after := openFDs(t); after != fdsBefore {
		t.Errorf("%d file descriptors open after cleanup, %d before: the helpers leak", after, fdsBefore)
	}
}

// BenchmarkIntegrationVethFrame measures one frame sent from the root end
// of a veth pair and captured in the namespace: the floor under any
// datapath round trip measured with these helpers in the bed.
func BenchmarkIntegrationVethFrame(b *testing.B) {
	Require(b)
	ns := NewNetns(b)
	Veth(b, "gvstb1", ns, "eth0", "")
	root := OpenRaw(b, nil, "gvstb1")
	inNS := OpenRaw(b, ns, "eth0")
	frame := testFrame(testSrcMAC, 4)
	match := func(f []byte) bool { return len(f) == len(frame) && f[17] == 4 }
	b.ReportAllocs()
	for b.Loop() {
		if err := root.Send(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := inNS.Recv(time.Second, match); err != nil {
			b.Fatal(err)
		}
	}
}
