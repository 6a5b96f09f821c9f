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

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The ovs/route/* commands: the routing table tunnels would use, as
// ovs-vswitchd keeps it. It is the kernel's unicast and local routes,
// read over rtnetlink when asked ("Cached"), plus the routes added with
// ovs/route/add ("User"). The kernel routes govswitchd's encapsulated
// packets itself (the datapath's tunnel vports send through the host's
// routing), so nothing but these commands consults the table.

// route is one entry of the table.
type route struct {
	prefix netip.Prefix // masked
	dev    string
	gw     netip.Addr // invalid when there is none
	src    netip.Addr
	mark   uint32
	local  bool // a local (RTN_LOCAL) route
	user   bool // added with ovs/route/add
}

// priority orders overlapping routes as ovs-vswitchd does: the longest
// prefix first (IPv4 counted as IPv4-mapped IPv6, 96 bits longer), user
// routes over the kernel's for the same prefix, local routes over both.
func (r *route) priority() int {
	p := r.prefix.Bits()
	if r.prefix.Addr().Is4() {
		p += 96
	}
	switch {
	case r.local:
		return p + 64
	case r.user:
		return p + 32
	}
	return p
}

func (r *route) String() string {
	var sb strings.Builder
	if r.user {
		sb.WriteString("User: ")
	} else {
		sb.WriteString("Cached: ")
	}
	sb.WriteString(r.prefix.String())
	if r.mark != 0 {
		fmt.Fprintf(&sb, " MARK %d", r.mark)
	}
	sb.WriteString(" dev " + r.dev)
	if r.gw.IsValid() && !r.gw.IsUnspecified() {
		sb.WriteString(" GW " + r.gw.String())
	}
	sb.WriteString(" SRC " + r.src.String())
	if r.local {
		sb.WriteString(" local")
	}
	return sb.String()
}

// userRoutes are the routes added with ovs/route/add. The zero value is
// an empty table.
type userRoutes struct {
	mu     sync.Mutex
	routes []route
}

// errNoSource is returned for a route whose device has no address in the
// route's (or its gateway's) network: a tunnel could not send by it.
var errNoSource = errors.New("no source address on the device")

// sourceAddr picks the address of device dev that shares the longest
// prefix with dst, as ovs-vswitchd picks a route's source.
func sourceAddr(dev string, dst netip.Addr) (netip.Addr, error) {
	ifc, err := net.InterfaceByName(dev)
	if err != nil {
		return netip.Addr{}, err
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return netip.Addr{}, err
	}
	best, bestLen := netip.Addr{}, -1
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		ones, _ := ipn.Mask.Size()
		if ip.Is4() != dst.Is4() {
			continue
		}
		if p, err := ip.Prefix(ones); err == nil && p.Contains(dst) && ones > bestLen {
			best, bestLen = ip, ones
		}
	}
	if bestLen < 0 {
		return netip.Addr{}, errNoSource
	}
	return best, nil
}

// systemRoutes reads the kernel's routes of every table over rtnetlink
// and keeps those ovs-vswitchd keeps: unicast and local routes with an
// output device, whose device has a source address for them.
func systemRoutes() ([]route, error) {
	rs, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("reading the kernel's routes: %w", err)
	}
	var out []route
	for _, r := range rs {
		if r.Scope == netlink.SCOPE_NOWHERE || (r.Type != unix.RTN_UNICAST && r.Type != unix.RTN_LOCAL) || r.LinkIndex == 0 {
			continue
		}
		ifc, err := net.InterfaceByIndex(r.LinkIndex)
		if err != nil {
			continue
		}
		var pfx netip.Prefix
		if r.Dst != nil {
			ip, _ := netip.AddrFromSlice(r.Dst.IP)
			ones, _ := r.Dst.Mask.Size()
			pfx = netip.PrefixFrom(ip.Unmap(), ones)
		} else if r.Family == unix.AF_INET6 {
			pfx = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
		} else {
			pfx = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
		}
		pfx = pfx.Masked()
		e := route{prefix: pfx, dev: ifc.Name, local: r.Type == unix.RTN_LOCAL}
		if gw, ok := netip.AddrFromSlice(r.Gw); ok {
			e.gw = gw.Unmap()
		}
		if e.src, err = sourceAddr(e.dev, pfx.Addr()); err != nil && e.gw.IsValid() {
			e.src, err = sourceAddr(e.dev, e.gw)
		}
		if err != nil {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// table returns the whole table: the kernel's routes (unless system is
// false: --disable-system-route) and the user's, one per prefix, mark and
// priority (a later route replaces an earlier one, as in ovs-vswitchd),
// highest priority first.
func (u *userRoutes) table(system bool) ([]route, error) {
	var sys []route
	if system {
		var err error
		if sys, err = systemRoutes(); err != nil {
			return nil, err
		}
	}
	u.mu.Lock()
	all := append(sys, u.routes...)
	u.mu.Unlock()
	type id struct {
		p    netip.Prefix
		mark uint32
		prio int
	}
	seen := map[id]int{}
	var out []route
	for _, r := range all {
		k := id{r.prefix, r.mark, r.priority()}
		if i, ok := seen[k]; ok {
			out[i] = r
			continue
		}
		seen[k] = len(out)
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].priority() > out[j].priority() })
	return out, nil
}

// parseRoutePrefix reads ADDR/LEN or a bare ADDR (a host route).
func parseRoutePrefix(s string) (netip.Prefix, bool) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, false
		}
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, false
	}
	return p.Masked(), true
}

// parseMark reads pkt_mark=N (decimal, 0x hex or 0 octal, as %i).
func parseMark(s string) (uint32, bool) {
	v, ok := strings.CutPrefix(s, "pkt_mark=")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 0, 32)
	return uint32(n), err == nil
}

// routeAdd is ovs/route/add ip_addr/prefix_len out_br_name [gw]
// [pkt_mark=mark].
func (d *Daemon) routeAdd(args []string) (string, error) {
	pfx, ok := parseRoutePrefix(args[0])
	if !ok {
		return "", errors.New("Invalid parameters")
	}
	r := route{prefix: pfx, dev: args[1], user: true}
	rest := args[2:]
	if len(rest) > 0 {
		if m, ok := parseMark(rest[0]); ok {
			r.mark = m
		} else if gw, err := netip.ParseAddr(rest[0]); err == nil && gw.Is4() == pfx.Addr().Is4() {
			r.gw = gw
		} else if pfx.Addr().Is4() {
			return "", errors.New("Invalid pkt_mark or gateway")
		} else {
			return "", errors.New("Invalid pkt_mark or IPv6 gateway")
		}
	}
	if len(rest) > 1 {
		m, ok := parseMark(rest[1])
		if !ok {
			return "", errors.New("Invalid pkt_mark")
		}
		r.mark = m
	}
	var err error
	if r.src, err = sourceAddr(r.dev, pfx.Addr()); err != nil && r.gw.IsValid() {
		r.src, err = sourceAddr(r.dev, r.gw)
	}
	if err != nil {
		// ovs-vswitchd's words; the reason is ours.
		return "", fmt.Errorf("Error while inserting route. (%s: %v)", r.dev, err)
	}
	u := &d.routes
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := range u.routes {
		if u.routes[i].prefix == r.prefix && u.routes[i].mark == r.mark {
			u.routes[i] = r
			return "OK\n", nil
		}
	}
	u.routes = append(u.routes, r)
	return "OK\n", nil
}

// routeDel is ovs/route/del ip_addr/prefix_len [pkt_mark=mark]: it
// removes a route added with ovs/route/add.
func (d *Daemon) routeDel(args []string) (string, error) {
	pfx, ok := parseRoutePrefix(args[0])
	if !ok {
		return "", errors.New("Invalid parameters")
	}
	var mark uint32
	if len(args) > 1 {
		if mark, ok = parseMark(args[1]); !ok {
			return "", errors.New("Invalid pkt_mark")
		}
	}
	u := &d.routes
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := range u.routes {
		if u.routes[i].prefix == pfx && u.routes[i].mark == mark {
			u.routes = append(u.routes[:i], u.routes[i+1:]...)
			return "OK\n", nil
		}
	}
	return "", errors.New("Not found")
}

// routeShow is ovs/route/show.
func (d *Daemon) routeShow([]string) (string, error) {
	rs, err := d.routes.table(!d.cfg.DisableSystemRoute)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	sb.WriteString("Route Table:\n")
	for i := range rs {
		sb.WriteString(rs[i].String() + "\n")
	}
	return sb.String(), nil
}

// routeLookup is ovs/route/lookup ip_addr [pkt_mark=mark].
func (d *Daemon) routeLookup(args []string) (string, error) {
	dst, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimSuffix(args[0], "/32"), "/128"))
	if err != nil || strings.Contains(strings.TrimSuffix(strings.TrimSuffix(args[0], "/32"), "/128"), "/") {
		return "", errors.New("Invalid parameters")
	}
	var mark uint32
	if len(args) > 1 {
		var ok bool
		if mark, ok = parseMark(args[1]); !ok {
			return "", errors.New("Invalid pkt_mark")
		}
	}
	rs, err := d.routes.table(!d.cfg.DisableSystemRoute)
	if err != nil {
		return "", err
	}
	for _, r := range rs { // highest priority first
		if r.mark == mark && r.prefix.Contains(dst) {
			gw := "::"
			if r.gw.IsValid() {
				gw = r.gw.String()
			}
			return fmt.Sprintf("src %s\ngateway %s\ndev %s\n", r.src, gw, r.dev), nil
		}
	}
	return "", errors.New("Not found")
}
