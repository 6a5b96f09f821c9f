package vswitchd

import (
	"encoding/binary"
	"fmt"

	"github.com/govswitch/govswitch/ovsdb"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Egress QoS as ovs-vswitchd's linux-hfsc (netdev-linux's tc_ops_hfsc):
// a root hfsc qdisc 1: whose default class is 1:1, a class 1:fffe under
// it with the QoS's max-rate as its service curve and its upper limit,
// and a class 1:(N+1) under 1:fffe for each queue N, min-rate as its
// real-time and link-sharing curves and max-rate as its upper limit.
// Each curve is linear (m1 0, d 0, m2 the rate), rates in bytes/s as the
// kernel takes them. set_queue:N selects class 1:(N+1), as with htb.

// hfscClass is one class's rates, bytes/s.
type hfscClass struct{ minRate, maxRate uint32 }

// hfscClasses returns the root class and each queue's, with
// ovs-vswitchd's bounds (hfsc_parse_qdisc_details__,
// hfsc_parse_class_details__): the root at max-rate, or the device's
// speed (10 Gbit/s for one that reports none, as a veth); a queue's
// min-rate at least 1 byte/s and at most the root's, its max-rate (the
// root's when unset, as OVS computes it in 32 bits) between its min-rate
// and the root's.
func hfscClasses(cfg ovsdb.QoSConfig) (hfscClass, map[uint32]hfscClass) {
	root := min(cfg.MaxRate/8, 1<<32-1)
	if root == 0 {
		root = htbDefaultRate / 8
	}
	qs := map[uint32]hfscClass{}
	for id, q := range cfg.Queues {
		lo := min(max(q.MinRate/8, 1), root)
		// An unset max-rate is the root's, which ovs-vswitchd turns
		// into bit/s and back in 32 bits: 10 Gbit/s wraps to
		// 1410065408 bit/s.
		hi := uint64(uint32(root*8)) / 8
		if q.MaxRate != 0 {
			hi = q.MaxRate / 8
		}
		hi = min(max(hi, lo), root)
		qs[id] = hfscClass{minRate: uint32(lo), maxRate: uint32(hi)}
	}
	return hfscClass{minRate: uint32(root), maxRate: uint32(root)}, qs
}

// hfscQoS is cfg's hfsc on dev, as classfulQoS.
func hfscQoS(dev string, cfg ovsdb.QoSConfig) (classfulQoS, error) {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return classfulQoS{}, fmt.Errorf("device %s: %w", dev, err)
	}
	idx := l.Attrs().Index
	root, queues := hfscClasses(cfg)
	return classfulQoS{
		idx: idx,
		addQdisc: func() error {
			q := netlink.NewHfsc(netlink.QdiscAttrs{LinkIndex: idx, Parent: netlink.HANDLE_ROOT, Handle: netlink.MakeHandle(1, 0)})
			q.Defcls = 1
			if err := netlink.QdiscAdd(q); err != nil {
				return fmt.Errorf("adding hfsc qdisc 1: to %s: %w", dev, err)
			}
			return nil
		},
		setRoot: func() error {
			return hfscClassSet(idx, dev, netlink.MakeHandle(1, htbRootMinor), netlink.MakeHandle(1, 0), root)
		},
		setQueue: func(id uint32) error {
			if err := hfscClassSet(idx, dev, netlink.MakeHandle(1, uint16(id+1)), netlink.MakeHandle(1, htbRootMinor), queues[id]); err != nil {
				return fmt.Errorf("queue %d: %w", id, err)
			}
			return nil
		},
	}, nil
}

// hfscClassSet creates or changes an hfsc class, as "tc class add dev DEV
// parent PARENT classid HANDLE hfsc sc rate MIN ul rate MAX". The request
// is built here rather than with netlink.HfscClass, which takes rates in
// bit/s in 32 bits and so cannot say ovs-vswitchd's default 10 Gbit/s.
func hfscClassSet(idx int, dev string, handle, parent uint32, c hfscClass) error {
	req := nl.NewNetlinkRequest(unix.RTM_NEWTCLASS, unix.NLM_F_CREATE|unix.NLM_F_ACK)
	req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(idx), Handle: handle, Parent: parent})
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("hfsc")))
	opts := nl.NewRtAttr(nl.TCA_OPTIONS, nil)
	opts.AddRtAttr(nl.TCA_HFSC_RSC, hfscCurve(c.minRate))
	opts.AddRtAttr(nl.TCA_HFSC_FSC, hfscCurve(c.minRate))
	opts.AddRtAttr(nl.TCA_HFSC_USC, hfscCurve(c.maxRate))
	req.AddData(opts)
	if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
		return fmt.Errorf("failed to replace %s class %d:%d, parent %d:%d, min-rate %dbps, max-rate %dbps (%w)",
			dev, handle>>16, handle&0xffff, parent>>16, parent&0xffff, c.minRate, c.maxRate, err)
	}
	return nil
}

// hfscCurve is a struct tc_service_curve {m1, d, m2} of a linear curve of
// rate bytes/s, in host order as the kernel reads it.
func hfscCurve(rate uint32) []byte {
	b := make([]byte, 12)
	binary.NativeEndian.PutUint32(b[8:], rate)
	return b
}
