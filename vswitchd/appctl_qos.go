package vswitchd

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/govswitch/govswitch/ovsdb"
	"github.com/vishvananda/netlink"
)

// qos/show and qos/show-types, as ovs-vswitchd 3.1's (bridge.c
// qos_unixctl_show, qos_unixctl_show_types): the QoS type and settings
// of an interface, then each queue's settings and the kernel's counters
// of its tc class, in the order of OVS's hash tables (qos_hashorder.go).

// qosState is the QoS SetQoS last applied, by interface, for qos/show
// (which runs on the unixctl goroutine, not the monitor's).
type qosState struct {
	applied atomic.Pointer[qosApplied]
	// queues is ovs-vswitchd's table of each classful QoS's queues,
	// which decides the order qos/show lists them in; only SetQoS's
	// goroutine uses it.
	queues map[string]*queueTable
}

// qosApplied is the QoS that holds on each interface, and the interfaces
// whose QoS could not be set up. ovs-vswitchd forgets what it knew of
// the qdisc of those and reads it back from the kernel.
type qosApplied struct {
	qos    map[string]ovsdb.QoSConfig
	failed map[string]bool
	queues map[string][]uint32 // in qos/show's order
}

func (q *qosState) set(m map[string]ovsdb.QoSConfig, errs map[string]error) {
	a := &qosApplied{qos: maps.Clone(m), failed: map[string]bool{}, queues: map[string][]uint32{}}
	for dev, t := range q.queues {
		a.queues[dev] = t.ids()
	}
	for name := range errs {
		a.failed[name] = true
	}
	q.applied.Store(a)
}

func (d *Daemon) registerQoSCommands() {
	d.ctl.Register("qos/show", "interface", 1, 1, func(args []string) (string, error) { return d.qosShow(args[0]) })
	d.ctl.Register("qos/show-types", "interface", 1, 1, func(args []string) (string, error) { return d.qosShowTypes(args[0]) })
}

// hasInterface reports whether a bridge has a port named iface.
func (d *Daemon) hasInterface(iface string) bool {
	for _, b := range d.Bridges() {
		for _, p := range b.Ports.Snapshot().List() {
			if p.Name == iface {
				return true
			}
		}
	}
	return false
}

// qosTypeOrder is the order in which ovs-vswitchd's netdev-linux lists
// the QoS types it can set up (its tc_ops table), into the set that
// qos/show-types prints.
var qosTypeOrder = []string{"linux-htb", "linux-hfsc", "linux-codel", "linux-fq_codel", "linux-sfq", "linux-netem", "linux-noop"}

// qosShowTypes is ovs-vswitchd's qos/show-types: the QoS types an
// interface's device takes, in the order of OVS's string set.
func (d *Daemon) qosShowTypes(iface string) (string, error) {
	if !d.hasInterface(iface) {
		return "", errors.New("no such interface")
	}
	es := make([]smapEntry, len(qosTypeOrder))
	for i, t := range qosTypeOrder {
		es[i] = smapEntry{key: t}
	}
	var sb strings.Builder
	for _, e := range smapOrder(es) {
		fmt.Fprintf(&sb, "QoS type: %s\n", e.key)
	}
	return sb.String(), nil
}

// qosShow prints what ovs-vswitchd keeps of the QoS it set up (the
// values it computed from the row, which are those it sent the kernel),
// in the order its hash tables give: the settings, then each queue's
// settings and the kernel's counters of its tc class. A linux-noop QoS
// leaves ovs-vswitchd with the device's default qdisc, so none shows.
func (d *Daemon) qosShow(iface string) (string, error) {
	if !d.hasInterface(iface) {
		return "", errors.New("no such interface")
	}
	var cfg ovsdb.QoSConfig
	var queueIDs []uint32
	ok, failed := false, false
	if a := d.qos.applied.Load(); a != nil {
		cfg, ok = a.qos[iface]
		failed = a.failed[iface]
		queueIDs = a.queues[iface]
	}
	mtu := 0
	l, err := netlink.LinkByName(iface)
	if err == nil {
		mtu = l.Attrs().MTU
	}
	if failed && l != nil {
		// What ovs-vswitchd reads back after a failed set-up: the
		// device's root qdisc (its default, set-up deletes the old one
		// first) is a kind it does not know, linux-other, unless it is
		// a built-in one the kernel does not report.
		if qs, err := netlink.QdiscList(l); err == nil {
			for _, q := range qs {
				if q.Attrs().Parent == netlink.HANDLE_ROOT {
					return fmt.Sprintf("QoS: %s linux-other\n", iface), nil
				}
			}
		}
	}
	if !ok || cfg.Type == "linux-noop" {
		return fmt.Sprintf("QoS not configured on %s\n", iface), nil
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "QoS: %s %s\n", iface, cfg.Type)
	printSmap := func(indent string, es []smapEntry) {
		for _, e := range smapOrder(es) {
			fmt.Fprintf(&sb, "%s%s: %s\n", indent, e.key, e.value)
		}
	}
	dec := func(v uint64) string { return strconv.FormatUint(v, 10) }
	details := map[uint32][]smapEntry{}
	switch cfg.Type {
	case "linux-htb":
		root, queues := htbClasses(cfg, mtu)
		printSmap("", []smapEntry{{"max-rate", dec(8 * root.maxRate)}})
		for id, q := range queues {
			es := []smapEntry{{"min-rate", dec(8 * q.minRate)}}
			if q.minRate != q.maxRate {
				es = append(es, smapEntry{"max-rate", dec(8 * q.maxRate)})
			}
			es = append(es, smapEntry{"burst", dec(8 * q.burst)})
			if q.prio != 0 {
				es = append(es, smapEntry{"priority", dec(uint64(q.prio))})
			}
			details[id] = es
		}
	case "linux-hfsc":
		root, queues := hfscClasses(cfg)
		printSmap("", []smapEntry{{"max-rate", dec(8 * uint64(root.maxRate))}})
		for id, q := range queues {
			es := []smapEntry{{"min-rate", dec(8 * uint64(q.minRate))}}
			if q.minRate != q.maxRate {
				es = append(es, smapEntry{"max-rate", dec(8 * uint64(q.maxRate))})
			}
			details[id] = es
		}
	default: // classless: no queues
		var es []smapEntry
		for _, c := range classlessSettings(cfg, mtu) {
			es = append(es, smapEntry{c.key, dec(uint64(c.value))})
		}
		printSmap("", es)
		return sb.String(), nil
	}
	stats := map[uint32]*netlink.ClassStatistics{}
	if l != nil {
		if cls, err := netlink.ClassList(l, netlink.HANDLE_NONE); err == nil {
			for _, c := range cls {
				if a := c.Attrs(); a.Handle>>16 == 1 {
					stats[a.Handle&0xffff] = a.Statistics
				}
			}
		}
	}
	for _, id := range queueIDs {
		if id == 0 {
			sb.WriteString("\nDefault:\n")
		} else {
			fmt.Fprintf(&sb, "\nQueue %d:\n", id)
		}
		printSmap("  ", details[id])
		st := stats[id+1] // class 1:(id+1)
		if st == nil || st.Basic == nil || st.Queue == nil {
			fmt.Fprintf(&sb, "  Failed to get statistics for queue %d: No such file or directory", id)
			continue
		}
		fmt.Fprintf(&sb, "  tx_packets: %d\n  tx_bytes: %d\n  tx_errors: %d\n", st.Basic.Packets, st.Basic.Bytes, st.Queue.Drops)
	}
	return sb.String(), nil
}

// queueSetupOrder is the order in which ovs-vswitchd sets up cfg's
// queues: the row's by id, then queue 0 if the row has none.
func queueSetupOrder(cfg ovsdb.QoSConfig) []uint32 {
	var ids []uint32
	for _, id := range slices.Sorted(maps.Keys(cfg.Queues)) {
		if id != 0 || !cfg.Queue0Implicit {
			ids = append(ids, id)
		}
	}
	if cfg.Queue0Implicit {
		ids = append(ids, 0)
	}
	return ids
}
