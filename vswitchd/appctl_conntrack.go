package vswitchd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/govswitch/govswitch/conntrack"
	"golang.org/x/sys/unix"
)

// The dpctl conntrack commands read and flush the kernel's connection
// tracking table (the one the datapath's ct() action commits to) through
// ctnetlink. The table belongs to the network namespace, not to a
// datapath: a DP argument is checked and otherwise changes nothing.

// ctArgs takes the leading options (those in opts), an optional DP, and
// zone=N from args.
func (d *Daemon) ctArgs(cmd string, args []string, opts map[string]*bool) (zone *uint16, err error) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		p, ok := opts[args[0]]
		if !ok {
			return nil, fmt.Errorf("%s: unknown option %s", cmd, args[0])
		}
		*p = true
		args = args[1:]
	}
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "zone="); ok {
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: want zone=0..65535", cmd, a)
			}
			z := uint16(n)
			zone = &z
			continue
		}
		if p, ok := opts[a]; ok { // ct-stats-show's old "verbose" word
			*p = true
			continue
		}
		name := a
		if _, dp, ok := strings.Cut(a, "@"); ok {
			name = dp
		}
		if d.Bridge(name) == nil {
			return nil, fmt.Errorf("%s: no datapath %s", cmd, a)
		}
	}
	return zone, nil
}

func ctDump(zone *uint16) ([]conntrack.Entry, error) {
	all, err := conntrack.Dump()
	if err != nil {
		return nil, fmt.Errorf("starting conntrack dump (%v)", err)
	}
	if zone == nil {
		return all, nil
	}
	var out []conntrack.Entry
	for _, e := range all {
		if e.Zone == *zone {
			out = append(out, e)
		}
	}
	return out, nil
}

// dpctlDumpConntrack is dpctl/dump-conntrack [-m] [-s] [DP] [zone=N].
func (d *Daemon) dpctlDumpConntrack(args []string) (string, error) {
	var verbose, stats bool
	zone, err := d.ctArgs("dpctl/dump-conntrack", args, map[string]*bool{"-m": &verbose, "--more": &verbose,
		"-s": &stats, "--statistics": &stats})
	if err != nil {
		return "", err
	}
	entries, err := ctDump(zone)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for i := range entries {
		sb.WriteString(entries[i].Format(verbose, stats) + "\n")
	}
	return sb.String(), nil
}

// dpctlCtStatsShow is dpctl/ct-stats-show [-m] [DP] [zone=N]: the
// connections by protocol, and with -m the TCP ones by state.
func (d *Daemon) dpctlCtStatsShow(args []string) (string, error) {
	var verbose bool
	zone, err := d.ctArgs("dpctl/ct-stats-show", args, map[string]*bool{"-m": &verbose, "--more": &verbose, "verbose": &verbose})
	if err != nil {
		return "", err
	}
	entries, err := ctDump(zone)
	if err != nil {
		return "", err
	}
	return ctStats(entries, verbose), nil
}

// ctStats formats ct-stats-show's counts as ovs-vswitchd does.
func ctStats(entries []conntrack.Entry, verbose bool) string {
	byProto := map[string]int{}
	states := map[string]int{}
	for _, e := range entries {
		name := "Other"
		switch e.Orig.Proto {
		case unix.IPPROTO_TCP:
			name = "TCP"
			states[conntrack.TCPStateName(e.TCPState)]++
		case unix.IPPROTO_UDP:
			name = "UDP"
		case unix.IPPROTO_UDPLITE:
			name = "UDPLITE"
		case unix.IPPROTO_SCTP:
			name = "SCTP"
		case unix.IPPROTO_ICMP:
			name = "ICMP"
		case unix.IPPROTO_DCCP:
			name = "DCCP"
		case unix.IPPROTO_IGMP:
			name = "IGMP"
		case unix.IPPROTO_ICMPV6:
			name = "ICMPV6" // counted by ovs-vswitchd but not printed
		}
		byProto[name]++
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Connections Stats:\n    Total: %d\n", len(entries))
	for _, p := range []string{"TCP", "UDP", "UDPLITE", "SCTP", "ICMP", "DCCP", "IGMP", "Other"} {
		if byProto[p] == 0 {
			continue
		}
		fmt.Fprintf(&sb, "  %s: %d\n", p, byProto[p])
		if p == "TCP" && verbose {
			sb.WriteString("    Conn per TCP states:\n")
			for _, st := range []string{"CLOSED", "LISTEN", "SYN_SENT", "SYN_RECV", "ESTABLISHED", "CLOSE_WAIT",
				"FIN_WAIT_1", "CLOSING", "LAST_ACK", "FIN_WAIT_2", "TIME_WAIT"} {
				if n := states[st]; n > 0 {
					fmt.Fprintf(&sb, "\t  [%s]=%d\n", st, n)
				}
			}
		}
	}
	return sb.String()
}
