package testbed

import (
	"errors"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/vishvananda/netlink"
)

// Veth makes a veth pair between the caller's network namespace and ns.
// hostIf stays in the caller's namespace, up and without an address, ready
// to be attached to a datapath as a netdev vport. nsIf moves into ns, gets
// cidr as its address when cidr is not empty ("10.0.0.1/24", "fd00::1/64"),
// and is brought up. Veth returns nsIf's MAC address.
//
// IPv6 is disabled on both ends unless cidr is an IPv6 prefix, so that the
// pair carries only the traffic a test makes (no router solicitations, DAD
// or MLD reports reaching a datapath as unexpected misses).
//
// The pair is deleted in tb.Cleanup; deleting hostIf deletes both ends.
// Failures end the test with tb.Fatal.
func Veth(tb testing.TB, hostIf string, ns *Netns, nsIf string, cidr string) (peerMAC net.HardwareAddr) {
	tb.Helper()
	var addr *netlink.Addr
	if cidr != "" {
		a, err := netlink.ParseAddr(cidr)
		if err != nil {
			tb.Fatalf("veth %s: address %q: %v", nsIf, cidr, err)
		}
		addr = a
	}
	keepIPv6 := addr != nil && addr.IP.To4() == nil

	la := netlink.NewLinkAttrs()
	la.Name = hostIf
	veth := &netlink.Veth{
		LinkAttrs:     la,
		PeerName:      nsIf,
		PeerNamespace: netlink.NsFd(int(ns.handle)),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		tb.Fatalf("veth %s <-> %s/%s: %v", hostIf, ns.Name, nsIf, err)
	}
	tb.Cleanup(func() {
		link, err := netlink.LinkByName(hostIf)
		if err != nil {
			// Gone already, e.g. with a namespace deleted first.
			return
		}
		if err := netlink.LinkDel(link); err != nil {
			tb.Errorf("delete veth %s: %v", hostIf, err)
		}
	})

	host, err := netlink.LinkByName(hostIf)
	if err != nil {
		tb.Fatalf("veth %s: %v", hostIf, err)
	}
	if !keepIPv6 {
		if err := disableIPv6(hostIf); err != nil {
			tb.Fatalf("veth %s: %v", hostIf, err)
		}
		if err := ns.Do(func() error { return disableIPv6(nsIf) }); err != nil {
			tb.Fatalf("veth %s/%s: %v", ns.Name, nsIf, err)
		}
	}
	if err := netlink.LinkSetUp(host); err != nil {
		tb.Fatalf("veth %s: set up: %v", hostIf, err)
	}

	peer, err := ns.nl.LinkByName(nsIf)
	if err != nil {
		tb.Fatalf("veth %s/%s: %v", ns.Name, nsIf, err)
	}
	if addr != nil {
		if err := ns.nl.AddrAdd(peer, addr); err != nil {
			tb.Fatalf("veth %s/%s: add address %s: %v", ns.Name, nsIf, cidr, err)
		}
	}
	if err := ns.nl.LinkSetUp(peer); err != nil {
		tb.Fatalf("veth %s/%s: set up: %v", ns.Name, nsIf, err)
	}
	return peer.Attrs().HardwareAddr
}

// disableIPv6 turns IPv6 off on ifname in the calling thread's network
// namespace. A kernel without IPv6 has nothing to turn off.
func disableIPv6(ifname string) error {
	path := "/proc/sys/net/ipv6/conf/" + ifname + "/disable_ipv6"
	err := os.WriteFile(path, []byte("1"), 0)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("disable IPv6: %w", err)
	}
	return nil
}
