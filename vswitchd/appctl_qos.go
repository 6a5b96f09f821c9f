package vswitchd

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/govswitch/govswitch/ovsdb"
	"github.com/vishvananda/netlink"
)

// qos/show, as ovs-vswitchd 3.1's (bridge.c qos_unixctl_show): the QoS
// type and settings of an interface, then each queue's settings and the
// kernel's counters of its tc class.

// qosState is the QoS SetQoS last applied, by interface, for qos/show
// (which runs on the unixctl goroutine, not the monitor's).
type qosState struct {
	applied atomic.Pointer[map[string]ovsdb.QoSConfig]
}

func (q *qosState) set(m map[string]ovsdb.QoSConfig) {
	c := maps.Clone(m)
	q.applied.Store(&c)
}

func (d *Daemon) registerQoSCommands() {
	d.ctl.Register("qos/show", "interface", 1, 1, func(args []string) (string, error) { return d.qosShow(args[0]) })
}

func (d *Daemon) qosShow(iface string) (string, error) {
	found := false
	for _, b := range d.Bridges() {
		for _, p := range b.Ports.Snapshot().List() {
			found = found || p.Name == iface
		}
	}
	if !found {
		return "", errors.New("no such interface")
	}
	var cfg ovsdb.QoSConfig
	ok := false
	if m := d.qos.applied.Load(); m != nil {
		cfg, ok = (*m)[iface]
	}
	if !ok {
		return fmt.Sprintf("QoS not configured on %s\n", iface), nil
	}
	if cfg.Type != "linux-hfsc" {
		// ovs-vswitchd reads htb's burst back from the kernel in ticks,
		// and prints its settings in its hash order: not reproduced yet.
		return "", fmt.Errorf("%s: qos/show of %s is not implemented by govswitchd", iface, cfg.Type)
	}
	stats := map[uint32]*netlink.ClassStatistics{}
	if l, err := netlink.LinkByName(iface); err == nil {
		if cls, err := netlink.ClassList(l, netlink.HANDLE_NONE); err == nil {
			for _, c := range cls {
				if a := c.Attrs(); a.Handle>>16 == 1 {
					stats[a.Handle&0xffff] = a.Statistics
				}
			}
		}
	}
	root, queues := hfscClasses(cfg)
	var sb strings.Builder
	fmt.Fprintf(&sb, "QoS: %s %s\nmax-rate: %d\n", iface, cfg.Type, 8*uint64(root.maxRate))
	for _, id := range slices.Sorted(maps.Keys(queues)) {
		q := queues[id]
		if id == 0 {
			sb.WriteString("\nDefault:\n")
		} else {
			fmt.Fprintf(&sb, "\nQueue %d:\n", id)
		}
		fmt.Fprintf(&sb, "  min-rate: %d\n", 8*uint64(q.minRate))
		if q.minRate != q.maxRate {
			fmt.Fprintf(&sb, "  max-rate: %d\n", 8*uint64(q.maxRate))
		}
		st := stats[id+1] // class 1:(id+1)
		if st == nil || st.Basic == nil || st.Queue == nil {
			fmt.Fprintf(&sb, "  Failed to get statistics for queue %d: No such file or directory", id)
			continue
		}
		fmt.Fprintf(&sb, "  tx_packets: %d\n  tx_bytes: %d\n  tx_errors: %d\n", st.Basic.Packets, st.Basic.Bytes, st.Queue.Drops)
	}
	return sb.String(), nil
}
