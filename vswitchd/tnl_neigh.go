package vswitchd

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The tnl/neigh/* (and their old names tnl/arp/*) commands: the
// neighbour cache ovs-vswitchd keeps for the underlay of the tunnels it
// encapsulates in userspace. With the kernel datapath ovs-vswitchd
// snoops nothing into it (it snoops ARP and neighbour advertisements only
// where it terminates tunnels itself, with the userspace datapath), so
// there it holds what tnl/neigh/set put in, and nothing reads it; the
// kernel resolves the next hop of each encapsulated packet in its own
// neighbour table. govswitchd does the same: its cache holds the entries
// tnl/neigh/set adds, ages and shows them as ovs-vswitchd does, and the
// kernel's neighbour table (`ip neigh`) is what its tunnels use. Showing
// the kernel's entries here would make tnl/neigh/flush a lie, or make it
// flush the host's neighbours.

const (
	neighDefaultAging = 15 * time.Minute
	neighMaxAgingSecs = 3600
	neighUsage        = "(entries from tnl/neigh/set; the kernel resolves the underlay)"
)

// neighKey is one entry's identity: the bridge (as ovs-vswitchd keeps it,
// at most 15 bytes) and the address (IPv4 unmapped).
type neighKey struct {
	bridge string
	ip     netip.Addr
}

// neighCache is the tunnel neighbour cache. The zero value is empty, with
// the default aging.
type neighCache struct {
	mu      sync.Mutex
	aging   time.Duration // 0 is neighDefaultAging
	entries map[neighKey]neighEntry
	now     func() time.Time // nil is time.Now
}

type neighEntry struct {
	mac     net.HardwareAddr
	expires time.Time
}

func (c *neighCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (c *neighCache) agingLocked() time.Duration {
	if c.aging == 0 {
		return neighDefaultAging
	}
	return c.aging
}

// expireLocked drops the entries whose time is up, as ovs-vswitchd's
// main loop does.
func (c *neighCache) expireLocked(now time.Time) {
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
}

// set adds or refreshes the entry of bridge and ip.
func (c *neighCache) set(bridge string, ip netip.Addr, mac net.HardwareAddr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(bridge) > 15 {
		bridge = bridge[:15] // IFNAMSIZ, as ovs-vswitchd stores it
	}
	if c.entries == nil {
		c.entries = map[neighKey]neighEntry{}
	}
	c.entries[neighKey{bridge, ip.Unmap()}] = neighEntry{mac: mac, expires: c.clock().Add(c.agingLocked())}
}

// show is the table as ovs-vswitchd prints it: a header, then per entry
// the address padded to INET6_ADDRSTRLEN (46) columns, the MAC, three
// spaces and the bridge; sorted by bridge, then address.
func (c *neighCache) show() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock()
	c.expireLocked(now)
	keys := make([]neighKey, 0, len(c.entries))
	for k := range c.entries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].bridge != keys[j].bridge {
			return keys[i].bridge < keys[j].bridge
		}
		return keys[i].ip.Less(keys[j].ip)
	})
	var sb strings.Builder
	sb.WriteString("IP                                            MAC                 Bridge\n")
	sb.WriteString("==========================================================================\n")
	for _, k := range keys {
		fmt.Fprintf(&sb, "%-46s%s   %s\n", k.ip, c.entries[k].mac, k.bridge)
	}
	return sb.String()
}

// flush empties the cache.
func (c *neighCache) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = nil
}

// setAging sets the aging time; entries that would live longer under it
// expire by it, as in ovs-vswitchd.
func (c *neighCache) setAging(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.aging = d
	limit := c.clock().Add(d)
	for k, e := range c.entries {
		if limit.Before(e.expires) {
			e.expires = limit
			c.entries[k] = e
		}
	}
}

// tnlNeighShow is tnl/neigh/show.
func (d *Daemon) tnlNeighShow([]string) (string, error) { return d.neigh.show(), nil }

// tnlNeighFlush is tnl/neigh/flush.
func (d *Daemon) tnlNeighFlush([]string) (string, error) {
	d.neigh.flush()
	return "OK\n", nil
}

// tnlNeighSet is tnl/neigh/set BRIDGE IP MAC. As in ovs-vswitchd the
// bridge need not exist.
func (d *Daemon) tnlNeighSet(args []string) (string, error) {
	ip, err := netip.ParseAddr(args[1])
	if err != nil || ip.Zone() != "" {
		return "", errors.New("bad IP address")
	}
	mac, err := parseEthAddr(args[2])
	if err != nil {
		return "", errors.New("bad MAC address")
	}
	d.neigh.set(args[0], ip, mac)
	return "OK\n", nil
}

// tnlNeighAging is tnl/neigh/aging [SECS]: the aging time in seconds, or
// set it (1 to 3600).
func (d *Daemon) tnlNeighAging(args []string) (string, error) {
	if len(args) == 0 {
		d.neigh.mu.Lock()
		defer d.neigh.mu.Unlock()
		return strconv.Itoa(int(d.neigh.agingLocked()/time.Second)) + "\n", nil
	}
	n, err := strconv.ParseUint(args[0], 10, 32)
	if err != nil || n == 0 || n > neighMaxAgingSecs {
		return "", errors.New("bad aging value")
	}
	d.neigh.setAging(time.Duration(n) * time.Second)
	return "OK\n", nil
}

// parseEthAddr parses a MAC as ovs-vswitchd's eth_addr_from_string does:
// six colon-separated hexadecimal bytes.
func parseEthAddr(s string) (net.HardwareAddr, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 6 {
		return nil, fmt.Errorf("bad MAC %q", s)
	}
	mac := make(net.HardwareAddr, 6)
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 16, 8)
		if err != nil || p == "" || len(p) > 2 {
			return nil, fmt.Errorf("bad MAC %q", s)
		}
		mac[i] = byte(n)
	}
	return mac, nil
}
