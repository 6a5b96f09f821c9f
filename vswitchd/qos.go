package vswitchd

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/govswitch/govswitch/ovsdb"
	"github.com/vishvananda/netlink"
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

// SetQoS applies the interfaces' QoS: those whose configuration changed,
// or failed before, are set up again; those left out lose theirs.
func (s *ovsdbSwitch) SetQoS(want map[string]ovsdb.QoSConfig) map[string]error {
	errs := map[string]error{}
	if _, inMemory := s.d.provider.(*dummy.Provider); inMemory {
		for name := range want {
			errs[name] = errors.New("the in-memory datapath's ports have no queueing disciplines")
		}
		return errs
	}
	if s.qos == nil {
		s.qos = map[string]ovsdb.QoSConfig{}
	}
	for _, name := range slices.Sorted(maps.Keys(s.qos)) {
		if _, ok := want[name]; !ok {
			if err := delRootQdisc(name); err != nil && !errors.Is(err, unix.ENODEV) {
				errs[name] = err
			}
			delete(s.qos, name)
			s.d.log.Info("QoS removed", "interface", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		cfg := want[name]
		if old, ok := s.qos[name]; ok && old.Equal(cfg) {
			continue
		}
		if err := setupHTB(name, cfg); err != nil {
			errs[name] = err
			delete(s.qos, name)
			continue
		}
		s.qos[name] = cfg
		s.d.log.Info("QoS linux-htb set", "interface", name, "queues", len(cfg.Queues))
	}
	return errs
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

func setupHTB(dev string, cfg ovsdb.QoSConfig) error {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("device %s: %w", dev, err)
	}
	idx, mtu := l.Attrs().Index, l.Attrs().MTU
	if mtu <= 0 {
		return fmt.Errorf("cannot set up HTB on device %s that lacks MTU", dev)
	}
	if err := delRootQdisc(dev); err != nil {
		return err
	}
	q := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: idx, Parent: netlink.HANDLE_ROOT, Handle: netlink.MakeHandle(1, 0)})
	q.Defcls = 1
	q.Rate2Quantum = htbRate2Quantum
	if err := netlink.QdiscAdd(q); err != nil {
		return fmt.Errorf("adding htb qdisc 1: to %s: %w", dev, err)
	}
	root, queues := htbClasses(cfg, mtu)
	if err := htbClassReplace(idx, mtu, netlink.MakeHandle(1, htbRootMinor), netlink.MakeHandle(1, 0), root); err != nil {
		return fmt.Errorf("%s: %w", dev, err)
	}
	for _, id := range slices.Sorted(maps.Keys(queues)) {
		if err := htbClassReplace(idx, mtu, netlink.MakeHandle(1, uint16(id+1)), netlink.MakeHandle(1, htbRootMinor), queues[id]); err != nil {
			return fmt.Errorf("%s: queue %d: %w", dev, id, err)
		}
	}
	return nil
}

func htbClassReplace(idx, mtu int, handle, parent uint32, c htbClass) error {
	attrs := netlink.HtbClassAttrs{Rate: c.minRate * 8, Ceil: c.maxRate * 8, Prio: c.prio}
	if c.burst > 0 {
		attrs.Buffer, attrs.Cbuffer = uint32(c.burst), uint32(c.burst)
	}
	if c.minRate/htbRate2Quantum < uint64(mtu) {
		attrs.Quantum = uint32(mtu)
	}
	cl := netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: idx, Handle: handle, Parent: parent}, attrs)
	if err := netlink.ClassReplace(cl); err != nil {
		return fmt.Errorf("failed to replace class %x:%x, parent %x:%x, min_rate=%d max_rate=%d burst=%d prio=%d (%w)",
			handle>>16, handle&0xffff, parent>>16, parent&0xffff, c.minRate, c.maxRate, c.burst, c.prio, err)
	}
	return nil
}

// Ingress policing, as ovs-vswitchd's netdev_linux_set_policing: an
// ingress qdisc with a matchall filter (priority 1, handle 1) whose
// police action drops what exceeds the rate.

const policePrio = 1 // ovs-vswitchd's TC_RESERVED_PRIORITY_POLICE

// SetPolicing applies the interfaces' ingress policing, as SetQoS.
func (s *ovsdbSwitch) SetPolicing(want map[string]ovsdb.Policing) map[string]error {
	errs := map[string]error{}
	if _, inMemory := s.d.provider.(*dummy.Provider); inMemory {
		for name := range want {
			errs[name] = errors.New("the in-memory datapath's ports have no ingress policing")
		}
		return errs
	}
	if s.policing == nil {
		s.policing = map[string]ovsdb.Policing{}
	}
	for _, name := range slices.Sorted(maps.Keys(s.policing)) {
		if _, ok := want[name]; !ok {
			if err := delIngress(name); err != nil && !errors.Is(err, unix.ENODEV) {
				errs[name] = err
			}
			delete(s.policing, name)
			s.d.log.Info("ingress policing removed", "interface", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		p := want[name]
		if old, ok := s.policing[name]; ok && old == p {
			continue
		}
		if err := setPolicing(name, p); err != nil {
			errs[name] = err
			delete(s.policing, name)
			continue
		}
		s.policing[name] = p
		s.d.log.Info("ingress policing set", "interface", name, "kbps", p.RateKbps, "burst_kb", policeBurst(p))
	}
	return errs
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
