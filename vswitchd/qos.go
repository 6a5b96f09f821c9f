package vswitchd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/govswitch/govswitch/ovsdb"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Egress QoS on a port's device, as ovs-vswitchd's linux-htb: a root htb
// qdisc 1: whose default class is 1:1, a root class 1:fffe at the QoS's
// max-rate, and a class 1:(N+1) under it for each queue N (min-rate as its
// rate, max-rate as its ceiling, burst, priority), made over rtnetlink.
// set_queue:N selects a queue by the packet's skb priority, 1:(N+1).

const (
	htbRootMinor = 0xfffe
	// htbDefaultRate is what a QoS without max-rate gets on a device
	// that reports no speed (a veth): ovs-vswitchd's NETDEV_DEFAULT_BPS.
	htbDefaultRate  = 10_000_000_000
	htbRate2Quantum = 10
)

// devSetting is one kind of per-device configuration that govswitchd
// keeps on the kernel's devices (egress QoS, ingress policing): how to
// compare, set up and remove it, and how to name it in logs and errors.
type devSetting[C any] struct {
	what  string // "QoS linux-htb", "ingress policing"
	equal func(a, b C) bool
	set   func(dev string, c C) error
	del   func(dev string) error
	attrs func(c C) []any // what the INFO line adds about c
}

// applyDevSettings brings the devices' settings of one kind from have to
// want: those whose configuration changed, or failed before, are set up
// again; those left out lose theirs. have is updated to what holds now;
// the result has an error for each device that could not be brought there.
// The in-memory datapath's ports are no devices: every wanted setting is
// refused there.
func applyDevSettings[C any](s *ovsdbSwitch, have, want map[string]C, k devSetting[C]) map[string]error {
	errs := map[string]error{}
	if _, inMemory := s.d.provider.(*dummy.Provider); inMemory {
		for name := range want {
			errs[name] = fmt.Errorf("the in-memory datapath's ports have no devices for %s", k.what)
		}
		return errs
	}
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if _, ok := want[name]; !ok {
			if err := k.del(name); err != nil && !errors.Is(err, unix.ENODEV) {
				errs[name] = err
			}
			delete(have, name)
			s.d.log.Info(k.what+" removed", "interface", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		c := want[name]
		if old, ok := have[name]; ok && k.equal(old, c) {
			continue
		}
		if err := k.set(name, c); err != nil {
			errs[name] = err
			delete(have, name)
			continue
		}
		have[name] = c
		s.d.log.Info(k.what+" set", append([]any{"interface", name}, k.attrs(c)...)...)
	}
	return errs
}

// SetQoS applies the interfaces' egress QoS.
func (s *ovsdbSwitch) SetQoS(want map[string]ovsdb.QoSConfig) map[string]error {
	if s.qos == nil {
		s.qos = map[string]ovsdb.QoSConfig{}
	}
	q := &s.d.qos
	errs := applyDevSettings(s, s.qos, want, devSetting[ovsdb.QoSConfig]{
		what:  "QoS",
		equal: ovsdb.QoSConfig.Equal,
		set: func(dev string, c ovsdb.QoSConfig) error {
			old, had := s.qos[dev] // applyDevSettings updates it after
			return q.setUp(dev, old, had, c)
		},
		// linux-noop made nothing, and ovs-vswitchd removes nothing
		// when it goes.
		del: func(dev string) error {
			delete(q.queues, dev)
			if s.qos[dev].Type == "linux-noop" {
				return nil
			}
			return delRootQdisc(dev)
		},
		attrs: func(c ovsdb.QoSConfig) []any { return []any{"type", c.Type, "queues", len(c.Queues)} },
	})
	q.set(s.qos, errs) // for qos/show
	return errs
}

// setUp gives dev the QoS cfg in place of old (if had), as ovs-vswitchd
// does: a classful QoS of the type dev has already keeps its qdisc, gets
// its root class set anew, loses the classes of the queues the row no
// longer has and gets each of the row's set; anything else replaces the
// root qdisc (qos_classless.go for the classless types). linux-noop leaves the
// device's qdisc as it is, whatever it is. It runs on the goroutine that
// calls SetQoS.
func (q *qosState) setUp(dev string, old ovsdb.QoSConfig, had bool, cfg ovsdb.QoSConfig) error {
	table := q.queues[dev]
	delete(q.queues, dev) // until it is known again
	var c classfulQoS
	var err error
	switch cfg.Type {
	case "linux-noop":
		return nil
	case "linux-htb":
		c, err = htbQoS(dev, cfg)
	case "linux-hfsc":
		c, err = hfscQoS(dev, cfg)
	default:
		return setupClassless(dev, cfg)
	}
	if err != nil {
		return err
	}
	if !had || old.Type != cfg.Type || table == nil {
		table = &queueTable{}
		if err := delRootQdisc(dev); err != nil {
			return err
		}
		if err := c.addQdisc(); err != nil {
			return err
		}
	}
	if err := c.setRoot(); err != nil {
		return err
	}
	for _, id := range table.ids() {
		if _, kept := cfg.Queues[id]; kept && (id != 0 || !cfg.Queue0Implicit) {
			continue
		}
		if err := c.delQueue(id); err != nil {
			return err
		}
		table.remove(id)
	}
	for _, id := range queueSetupOrder(cfg) {
		if err := c.setQueue(id); err != nil {
			return err
		}
		table.add(id)
	}
	if q.queues == nil {
		q.queues = map[string]*queueTable{}
	}
	q.queues[dev] = table
	return nil
}

// classfulQoS is a linux-htb or linux-hfsc QoS on one device as
// ovs-vswitchd makes it: its root qdisc 1:, its root class 1:fffe, and
// the class of each queue N, 1:(N+1) under 1:fffe.
type classfulQoS struct {
	idx      int // the device's ifindex
	addQdisc func() error
	setRoot  func() error
	setQueue func(id uint32) error
}

// delQueue deletes queue id's class, as ovs-vswitchd's tc_delete_class.
func (c classfulQoS) delQueue(id uint32) error {
	req := nl.NewNetlinkRequest(unix.RTM_DELTCLASS, unix.NLM_F_ACK)
	req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(c.idx), Handle: netlink.MakeHandle(1, uint16(id+1))})
	if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
		return fmt.Errorf("delete class 1:%x of queue %d failed (%w)", id+1, id, err)
	}
	return nil
}

// delRootQdisc deletes the device's root qdisc, giving it the default
// again; a device on its default qdisc already is not an error.
func delRootQdisc(dev string) error {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("device %s: %w", dev, err)
	}
	// Handle 0: whatever root qdisc the device has (someone's noqueue,
	// say), as ovs-vswitchd deletes it.
	q := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Parent: netlink.HANDLE_ROOT},
		QdiscType: "htb"}
	if err := netlink.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("deleting the root qdisc of %s: %w", dev, err)
	}
	return nil
}

// htbClass is one class as ovs-vswitchd computes it: rates in bytes/s.
type htbClass struct {
	minRate, maxRate, burst uint64
	prio                    uint32
}

// htbClasses returns the root class and each queue's, by queue id, with
// ovs-vswitchd's bounds: a queue's rate at least the MTU (HTB sends
// nothing below it), its ceiling between its rate and the root's, and its
// burst at least a frame with headroom (MTU + 64).
func htbClasses(cfg ovsdb.QoSConfig, mtu int) (htbClass, map[uint32]htbClass) {
	root := cfg.MaxRate / 8
	if root == 0 {
		root = htbDefaultRate / 8
	}
	m := uint64(mtu)
	qs := map[uint32]htbClass{}
	for id, q := range cfg.Queues {
		c := htbClass{minRate: min(max(q.MinRate/8, m), root), prio: q.Priority}
		c.maxRate = q.MaxRate / 8
		if c.maxRate == 0 {
			c.maxRate = root
		}
		c.maxRate = min(max(c.maxRate, c.minRate), root)
		c.burst = max(q.Burst/8, m+64)
		qs[id] = c
	}
	return htbClass{minRate: root, maxRate: root}, qs
}

// htbQoS is cfg's htb on dev, as classfulQoS.
func htbQoS(dev string, cfg ovsdb.QoSConfig) (classfulQoS, error) {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return classfulQoS{}, fmt.Errorf("device %s: %w", dev, err)
	}
	idx, mtu := l.Attrs().Index, l.Attrs().MTU
	if mtu <= 0 {
		return classfulQoS{}, fmt.Errorf("cannot set up HTB on device %s that lacks MTU", dev)
	}
	root, queues := htbClasses(cfg, mtu)
	return classfulQoS{
		idx: idx,
		addQdisc: func() error {
			q := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: idx, Parent: netlink.HANDLE_ROOT, Handle: netlink.MakeHandle(1, 0)})
			q.Defcls = 1
			q.Rate2Quantum = htbRate2Quantum
			if err := netlink.QdiscAdd(q); err != nil {
				return fmt.Errorf("adding htb qdisc 1: to %s: %w", dev, err)
			}
			return nil
		},
		setRoot: func() error {
			if err := htbClassReplace(idx, mtu, netlink.MakeHandle(1, htbRootMinor), netlink.MakeHandle(1, 0), root); err != nil {
				return fmt.Errorf("%s: %w", dev, err)
			}
			return nil
		},
		setQueue: func(id uint32) error {
			if err := htbClassReplace(idx, mtu, netlink.MakeHandle(1, uint16(id+1)), netlink.MakeHandle(1, htbRootMinor), queues[id]); err != nil {
				return fmt.Errorf("%s: queue %d: %w", dev, id, err)
			}
			return nil
		},
	}, nil
}

// htbClassReplace creates or changes an htb class as ovs-vswitchd's
// htb_setup_class__ does, so that the kernel holds the same class: rate
// specs with its cell size and a 60-byte minimum packet, rate tables
// it computes, and buffers in scheduler ticks from tc_calc_buffer: the
// burst, but at least what the rate sends in a timer tick plus an MTU.
// The request is built here as netlink.HtbClass sizes its rate tables
// and buffers for an MTU of 1600, and sends 64-bit rates OVS does not.
func htbClassReplace(idx, mtu int, handle, parent uint32, c htbClass) error {
	ticksPerSec, hz := pschedClock()
	rate := func(bps uint64) nl.TcRateSpec {
		return nl.TcRateSpec{CellLog: tcCellLog(mtu), Mpu: 60, Rate: uint32(bps)}
	}
	buffer := func(bps uint64) uint32 {
		return tcBytesToTicks(ticksPerSec, uint32(bps), uint32(max(c.burst, bps/hz+uint64(mtu))))
	}
	opt := nl.TcHtbCopt{Rate: rate(c.minRate), Ceil: rate(c.maxRate), Buffer: buffer(c.minRate), Cbuffer: buffer(c.maxRate),
		Prio: c.prio}
	if c.minRate/htbRate2Quantum < uint64(mtu) {
		opt.Quantum = uint32(mtu)
	}
	req := nl.NewNetlinkRequest(unix.RTM_NEWTCLASS, unix.NLM_F_CREATE|unix.NLM_F_ACK)
	req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(idx), Handle: handle, Parent: parent})
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("htb")))
	opts := nl.NewRtAttr(nl.TCA_OPTIONS, nil)
	opts.AddRtAttr(nl.TCA_HTB_PARMS, opt.Serialize())
	opts.AddRtAttr(nl.TCA_HTB_RTAB, tcRateTable(ticksPerSec, opt.Rate))
	opts.AddRtAttr(nl.TCA_HTB_CTAB, tcRateTable(ticksPerSec, opt.Ceil))
	req.AddData(opts)
	if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
		return fmt.Errorf("failed to replace class %x:%x, parent %x:%x, min_rate=%d max_rate=%d burst=%d prio=%d (%w)",
			handle>>16, handle&0xffff, parent>>16, parent&0xffff, c.minRate, c.maxRate, c.burst, c.prio, err)
	}
	return nil
}

// tcCellLog is the shift that fits a frame of the MTU (with an Ethernet
// and a VLAN header; 1500 if none) into a 256-entry rate table.
func tcCellLog(mtu int) uint8 {
	if mtu <= 0 {
		mtu = 1500
	}
	n := mtu + 14 + 4
	var l uint8
	for ; n >= 256; n >>= 1 {
		l++
	}
	return l
}

// tcBytesToTicks is the scheduler ticks size bytes take at rate bytes/s
// (0 at rate 0), in ovs-vswitchd's integer arithmetic.
func tcBytesToTicks(ticksPerSec float64, rate, size uint32) uint32 {
	if rate == 0 {
		return 0
	}
	return uint32(uint64(ticksPerSec) * uint64(size) / uint64(rate))
}

// tcRateTable is the 256-entry table of the ticks each size of packet
// takes at the spec's rate, in host order.
func tcRateTable(ticksPerSec float64, r nl.TcRateSpec) []byte {
	b := make([]byte, 0, 1024)
	for i := range 256 {
		size := max(uint32(i+1)<<r.CellLog, uint32(r.Mpu))
		b = binary.NativeEndian.AppendUint32(b, tcBytesToTicks(ticksPerSec, r.Rate, size))
	}
	return b
}

// Ingress policing, as ovs-vswitchd's netdev_linux_set_policing: an
// ingress qdisc with a matchall filter (priority 1, handle 1) whose
// police action drops what exceeds the rate.

const policePrio = 1 // ovs-vswitchd's TC_RESERVED_PRIORITY_POLICE

// SetPolicing applies the interfaces' ingress policing.
func (s *ovsdbSwitch) SetPolicing(want map[string]ovsdb.Policing) map[string]error {
	if s.policing == nil {
		s.policing = map[string]ovsdb.Policing{}
	}
	return applyDevSettings(s, s.policing, want, devSetting[ovsdb.Policing]{
		what:  "ingress policing",
		equal: func(a, b ovsdb.Policing) bool { return a == b },
		set:   setPolicing,
		del:   delIngress,
		attrs: func(p ovsdb.Policing) []any { return []any{"kbps", p.RateKbps, "burst_kb", policeBurst(p)} },
	})
}

func policeBurst(p ovsdb.Policing) uint32 {
	if p.BurstKb == 0 {
		return 8000 // ovs-vswitchd's default
	}
	return p.BurstKb
}

// delIngress removes the device's ingress qdisc and its filters; none is
// not an error.
func delIngress(dev string) error {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("device %s: %w", dev, err)
	}
	q := &netlink.Ingress{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Parent: netlink.HANDLE_INGRESS,
		Handle: netlink.MakeHandle(0xffff, 0)}}
	if err := netlink.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("removing policing of %s: %w", dev, err)
	}
	return nil
}

func setPolicing(dev string, p ovsdb.Policing) error {
	if err := delIngress(dev); err != nil {
		return err
	}
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("device %s: %w", dev, err)
	}
	idx := l.Attrs().Index
	q := &netlink.Ingress{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: idx, Parent: netlink.HANDLE_INGRESS,
		Handle: netlink.MakeHandle(0xffff, 0)}}
	if err := netlink.QdiscAdd(q); err != nil {
		return fmt.Errorf("adding policing qdisc to %s: %w", dev, err)
	}
	pol := netlink.NewPoliceAction()
	pol.Rate = uint32(min(uint64(p.RateKbps)*1000/8, 1<<32-1))
	pol.Burst = uint32(min(uint64(policeBurst(p)), (1<<32-1)/1024) * 1024 / 8)
	pol.Mtu = 65535
	pol.ExceedAction = netlink.TC_POLICE_SHOT
	f := &netlink.MatchAll{FilterAttrs: netlink.FilterAttrs{LinkIndex: idx, Parent: netlink.MakeHandle(0xffff, 0),
		Priority: policePrio, Handle: 1, Protocol: unix.ETH_P_ALL}, Actions: []netlink.Action{pol}}
	if err := netlink.FilterAdd(f); err != nil {
		delIngress(dev)
		return fmt.Errorf("adding a matchall policer to %s: %w", dev, err)
	}
	return nil
}
