package ofproto

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/govswitch/govswitch/conntrack"
	"github.com/govswitch/govswitch/flow"
	"golang.org/x/sys/unix"
)

// Conntrack timeout policies per zone (the database's Datapath.ct_zones
// and CT_Timeout_Policy rows; `ovs-vsctl add-zone-tp`), on the kernel
// datapath as ovs-vswitchd runs them: each distinct policy gets an id,
// the kernel holds it as six cttimeout objects, one per protocol, named
// ovs_tp_ID_tcp4, _udp4, _icmp4, _tcp6, _udp6 and _icmpv6, and a
// ct(commit) in a zone with a policy names the one for the packet's
// protocol (OVS_CT_ATTR_TIMEOUT), with nw_proto in the megaflow.

// tpProtos are the kernel policies of one policy, in ovs-vswitchd's order.
var tpProtos = [6]struct {
	l3     uint16
	l4     uint8
	suffix string
}{
	{unix.AF_INET, unix.IPPROTO_TCP, "tcp4"},
	{unix.AF_INET, unix.IPPROTO_UDP, "udp4"},
	{unix.AF_INET, unix.IPPROTO_ICMP, "icmp4"},
	{unix.AF_INET6, unix.IPPROTO_TCP, "tcp6"},
	{unix.AF_INET6, unix.IPPROTO_UDP, "udp6"},
	{unix.AF_INET6, unix.IPPROTO_ICMPV6, "icmpv6"},
}

// tpKernelAttr maps a CT_Timeout_Policy timeouts key to the kernel's
// attribute for the protocol it is of. udp_first and icmp_reply are the
// userspace datapath's only: the kernel has no such timeouts.
var tpKernelAttr = map[string]struct {
	l4   uint8 // IPPROTO_ICMP stands for ICMPv6 too
	attr uint16
}{
	"tcp_syn_sent":    {unix.IPPROTO_TCP, conntrack.TimeoutTCPSynSent},
	"tcp_syn_recv":    {unix.IPPROTO_TCP, conntrack.TimeoutTCPSynRecv},
	"tcp_established": {unix.IPPROTO_TCP, conntrack.TimeoutTCPEstablished},
	"tcp_fin_wait":    {unix.IPPROTO_TCP, conntrack.TimeoutTCPFinWait},
	"tcp_close_wait":  {unix.IPPROTO_TCP, conntrack.TimeoutTCPCloseWait},
	"tcp_last_ack":    {unix.IPPROTO_TCP, conntrack.TimeoutTCPLastAck},
	"tcp_time_wait":   {unix.IPPROTO_TCP, conntrack.TimeoutTCPTimeWait},
	"tcp_close":       {unix.IPPROTO_TCP, conntrack.TimeoutTCPClose},
	"tcp_syn_sent2":   {unix.IPPROTO_TCP, conntrack.TimeoutTCPSynSent2},
	"tcp_retransmit":  {unix.IPPROTO_TCP, conntrack.TimeoutTCPRetrans},
	"tcp_unack":       {unix.IPPROTO_TCP, conntrack.TimeoutTCPUnack},
	"udp_single":      {unix.IPPROTO_UDP, conntrack.TimeoutUDPUnreplied},
	"udp_multiple":    {unix.IPPROTO_UDP, conntrack.TimeoutUDPReplied},
	"icmp_first":      {unix.IPPROTO_ICMP, conntrack.TimeoutICMP},
	"udp_first":       {},
	"icmp_reply":      {},
}

// tpName is the kernel name of policy id's protocol i.
func tpName(id uint32, i int) string {
	return "ovs_tp_" + strconv.FormatUint(uint64(id), 10) + "_" + tpProtos[i].suffix
}

// kernelPolicies are policy id's six kernel objects for timeouts.
func kernelPolicies(id uint32, timeouts map[string]uint32) ([6]conntrack.TimeoutPolicy, error) {
	var out [6]conntrack.TimeoutPolicy
	for i, p := range tpProtos {
		out[i] = conntrack.TimeoutPolicy{Name: tpName(id, i), L3: p.l3, L4: p.l4, Timeouts: map[uint16]uint32{}}
	}
	for k, v := range timeouts {
		ka, ok := tpKernelAttr[k]
		if !ok {
			return out, fmt.Errorf("unknown timeout %s", k)
		}
		if ka.attr == 0 {
			continue
		}
		for i, p := range tpProtos {
			if p.l4 == ka.l4 || ka.l4 == unix.IPPROTO_ICMP && p.l4 == unix.IPPROTO_ICMPV6 {
				out[i].Timeouts[ka.attr] = v
			}
		}
	}
	return out, nil
}

// zoneTP is a zone's policy as translation reads it: the kernel names,
// NUL-less, by tpProtos index.
type zoneTP struct{ names [6][]byte }

// CTZoneTimeouts are the zones' timeout policies. The kernel keeps its
// policies per network namespace, not per datapath, so these outlive a
// datapath: a Backer reads them through its CTZones.
type CTZoneTimeouts struct {
	mu sync.Mutex
	// cur is read on every ct(commit) translation.
	cur atomic.Pointer[map[uint16]*zoneTP]
	// byKey finds a policy's id by its canonical timeouts; keys is the
	// reverse.
	byKey map[string]uint32
	keys  map[uint32]string
	// dead are kernel policies to delete that were still in use.
	dead []string
	// setKernel and delKernel, for tests, stand in for the kernel's
	// cttimeout (conntrack.SetTimeoutPolicy, DeleteTimeoutPolicy).
	setKernel func(*conntrack.TimeoutPolicy) error
	delKernel func(string) error
}

func (z *CTZoneTimeouts) kernelSet(tp *conntrack.TimeoutPolicy) error {
	if z.setKernel != nil {
		return z.setKernel(tp)
	}
	return conntrack.SetTimeoutPolicy(tp)
}

func (z *CTZoneTimeouts) kernelDel(name string) error {
	if z.delKernel != nil {
		return z.delKernel(name)
	}
	return conntrack.DeleteTimeoutPolicy(name)
}

// Set makes zones' timeout policies (zone → CT_Timeout_Policy timeouts)
// current: new policies go into the kernel, bk's translations (bk may be
// nil) are redone so that datapath flows committing in those zones name
// them, and policies no zone uses any more are deleted from the kernel. A
// zone whose policy the kernel refuses is left without one, and the error
// says why.
func (z *CTZoneTimeouts) Set(zones map[uint16]map[string]uint32, bk *Backer) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.byKey == nil {
		z.byKey, z.keys = map[string]uint32{}, map[uint32]string{}
	}
	var errs []error
	next := make(map[uint16]*zoneTP, len(zones))
	used := map[uint32]bool{}
	for _, zone := range slices.Sorted(maps.Keys(zones)) {
		timeouts := zones[zone]
		key := canonicalTimeouts(timeouts)
		id, ok := z.byKey[key]
		if !ok {
			id = z.freeID()
			kps, err := kernelPolicies(id, timeouts)
			if err == nil {
				for i := range kps {
					if err = z.kernelSet(&kps[i]); err != nil {
						err = fmt.Errorf("failed to add timeout policy %s (%w)", kps[i].Name, err)
						break
					}
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("zone %d: %w", zone, err))
				continue
			}
			z.byKey[key], z.keys[id] = id, key
		}
		used[id] = true
		tp := &zoneTP{}
		for i := range tp.names {
			tp.names[i] = []byte(tpName(id, i))
		}
		next[zone] = tp
	}
	z.cur.Store(&next)
	if bk != nil {
		for _, b := range bk.Bridges() {
			b.Tables.Invalidate()
		}
		bk.bump()
	}
	for id, key := range z.keys {
		if used[id] {
			continue
		}
		delete(z.keys, id)
		delete(z.byKey, key)
		for i := range tpProtos {
			z.dead = append(z.dead, tpName(id, i))
		}
	}
	z.reap()
	return errors.Join(errs...)
}

// reap deletes the dead kernel policies it can; one a connection still
// uses (EBUSY) waits for the next call.
func (z *CTZoneTimeouts) reap() {
	keep := z.dead[:0]
	for _, name := range z.dead {
		if err := z.kernelDel(name); err != nil && !errors.Is(err, unix.ENOENT) {
			keep = append(keep, name)
		}
	}
	z.dead = keep
}

// Cleanup deletes every kernel policy Set made (on exit --cleanup).
func (z *CTZoneTimeouts) Cleanup() error {
	z.mu.Lock()
	defer z.mu.Unlock()
	for id := range z.keys {
		for i := range tpProtos {
			z.dead = append(z.dead, tpName(id, i))
		}
	}
	z.keys, z.byKey = nil, nil
	empty := map[uint16]*zoneTP{}
	z.cur.Store(&empty)
	z.reap()
	if len(z.dead) > 0 {
		return fmt.Errorf("timeout policies still in use: %s", strings.Join(z.dead, ", "))
	}
	return nil
}

// freeID is the smallest policy id not in use, from 1: ovs-vswitchd
// keeps 0 for the default policy.
func (z *CTZoneTimeouts) freeID() uint32 {
	for id := uint32(1); ; id++ {
		if _, ok := z.keys[id]; !ok {
			return id
		}
	}
}

func canonicalTimeouts(t map[string]uint32) string {
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(t)) {
		fmt.Fprintf(&sb, "%s=%d,", k, t[k])
	}
	return sb.String()
}

// ctTimeout returns the kernel policy name for a commit in zone of a
// packet like k, or nil when the zone has no policy or the protocol none
// (ovs-vswitchd's: TCP, UDP, ICMP and ICMPv6).
func (bk *Backer) ctTimeout(zone uint16, k *flow.Key) []byte {
	if bk == nil || bk.CTZones == nil {
		return nil
	}
	m := bk.CTZones.cur.Load()
	if m == nil {
		return nil
	}
	tp := (*m)[zone]
	if tp == nil {
		return nil
	}
	base := 0
	if k.EthType == flow.EthTypeIPv6 {
		base = 3
	}
	switch k.NwProto {
	case unix.IPPROTO_TCP:
		return tp.names[base]
	case unix.IPPROTO_UDP:
		return tp.names[base+1]
	case unix.IPPROTO_ICMP:
		if base == 0 {
			return tp.names[2]
		}
	case unix.IPPROTO_ICMPV6:
		if base == 3 {
			return tp.names[5]
		}
	}
	return nil
}
