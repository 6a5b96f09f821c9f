// Package bench is the flow-setup benchmark: a TCP connection-rate and
// connection-latency load generator compatible with the old ovs-benchmark
// (Open vSwitch 1.2–2.5), and the listener it runs against.
//
// Every TCP connection attempt through a switch is at least two new flows
// (SYN one way, SYN-ACK or RST back), so connections per second measure
// flow setups per second; with "both" port cycling every attempt is a new
// 5-tuple in both directions.
//
// The generator uses raw non-blocking sockets and poll(2) on a locked OS
// thread: in the User-Mode Linux bed, where a syscall costs ~50 µs, Go's
// ordinary netpoller path was measured up to 5× slower than C, and this
// path equal to it.
package bench

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// DefaultPort is ovs-benchmark's default port.
const DefaultPort = 6630

// MaxSockets is the most concurrent sockets -s accepts.
const MaxSockets = 65535

// PortRange is an inclusive range of ports; {0, 0} means "no port given".
type PortRange struct{ Min, Max uint16 }

// Endpoint is an address argument: IP[:PORT|:MIN-MAX].
type Endpoint struct {
	IP    net.IP // nil when absent (only for -l)
	Ports PortRange
}

func (e Endpoint) String() string {
	s := ""
	if e.IP != nil {
		s = e.IP.String()
		if e.IP.To4() == nil {
			s = "[" + s + "]"
		}
	}
	switch {
	case e.Ports.Min == 0 && e.Ports.Max == 0:
	case e.Ports.Min == e.Ports.Max:
		s += ":" + strconv.Itoa(int(e.Ports.Min))
	default:
		s += fmt.Sprintf(":%d-%d", e.Ports.Min, e.Ports.Max)
	}
	return s
}

// ParseEndpoint parses IP[:PORT|:MIN-MAX] (an IPv6 address in brackets).
// The host may be a name, looked up with the resolver. With needIP, the
// host is required and must not be the unspecified address; defaultPort
// fills in a missing port when non-zero.
func ParseEndpoint(s string, needIP bool, defaultPort uint16) (Endpoint, error) {
	var e Endpoint
	host, ports := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return e, fmt.Errorf("%q: missing ]", s)
		}
		host, ports = s[1:end], strings.TrimPrefix(s[end+1:], ":")
		if rest := s[end+1:]; rest != "" && !strings.HasPrefix(rest, ":") {
			return e, fmt.Errorf("%q: junk after ]", s)
		}
	} else if i := strings.LastIndex(s, ":"); i >= 0 {
		host, ports = s[:i], s[i+1:]
	}
	if host != "" {
		ip := net.ParseIP(host)
		if ip == nil {
			ips, err := net.LookupIP(host)
			if err != nil || len(ips) == 0 {
				return e, fmt.Errorf("%q: cannot resolve host %q", s, host)
			}
			ip = ips[0]
		}
		if v4 := ip.To4(); v4 != nil {
			ip = v4
		}
		e.IP = ip
	}
	if needIP && (e.IP == nil || e.IP.IsUnspecified()) {
		return e, fmt.Errorf("%q: an IP address is required and may not be %s", s, "0.0.0.0")
	}
	if ports != "" {
		pr, err := parsePorts(ports)
		if err != nil {
			return e, fmt.Errorf("%q: %w", s, err)
		}
		e.Ports = pr
	} else if defaultPort != 0 {
		e.Ports = PortRange{defaultPort, defaultPort}
	}
	return e, nil
}

func parsePorts(s string) (PortRange, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	min, err := parsePort(lo)
	if err != nil {
		return PortRange{}, err
	}
	max := min
	if isRange {
		if max, err = parsePort(hi); err != nil {
			return PortRange{}, err
		}
		if min > max {
			return PortRange{}, fmt.Errorf("port range %d-%d: minimum above maximum", min, max)
		}
	}
	return PortRange{min, max}, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("bad port %q (want 1..65535)", s)
	}
	return uint16(n), nil
}

// Order is how the generator moves through its port ranges.
type Order int

const (
	// OrderOVS is ovs-benchmark's order: the local port advances every
	// attempt and the remote port advances when the local one wraps. With
	// no local ports, the remote port advances every attempt.
	OrderOVS Order = iota
	// OrderBoth advances the local and the remote port every attempt, each
	// wrapping in its own range, so consecutive attempts differ in both.
	OrderBoth
)

// ParseOrder parses "ovs" or "both".
func ParseOrder(s string) (Order, error) {
	switch s {
	case "ovs":
		return OrderOVS, nil
	case "both":
		return OrderBoth, nil
	}
	return 0, errors.New("port order must be ovs or both")
}

// portCycle yields the (local, remote) port of each attempt.
type portCycle struct {
	local, remote PortRange
	lp, rp        uint16
	order         Order
}

func newPortCycle(local, remote PortRange, order Order) *portCycle {
	return &portCycle{local: local, remote: remote, lp: local.Min, rp: remote.Min, order: order}
}

func step(p uint16, r PortRange) (uint16, bool) {
	if p >= r.Max {
		return r.Min, true
	}
	return p + 1, false
}

// next advances to the following attempt's ports.
func (c *portCycle) next() {
	var wrapped bool
	c.lp, wrapped = step(c.lp, c.local)
	if wrapped || c.order == OrderBoth {
		c.rp, _ = step(c.rp, c.remote)
	}
}
