package ofproto

import (
	"crypto/rand"
	"encoding/binary"
	"log/slog"
	"sync/atomic"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
	"github.com/govswitch/govswitch/ofproto/ipfix"
)

// IPFIX, as ovs-vswitchd's: bridge sampling puts a datapath sample action
// (probability UINT32_MAX/sampling; the userspace action alone at a rate
// of 1) at the start of every translation (input sampling) and before
// every output (output sampling), each sending the packet up with an
// IPFIX user action cookie; the sample action of the tables (flow
// sampling, xlate_flowsample.go) does the same with a flow-sample cookie
// that names a collector set. The cookies are ovs-vswitchd's 48-byte
// user_action_cookie, so ovs-dpctl dump-flows shows them as it does
// ovs-vswitchd's (userspace(pid=..,ipfix(output_port=..))). With an
// exporter's tunnel sampling, a sample of a packet leaving by a tunnel
// port also names that port (tunnel_out_port), so that the kernel sends
// the packet's egress tunnel key up with it; records of packets entering
// by a tunnel port take the tunnel from the packet's key. The megaflow
// mask and the forwarding actions are the unsampled translation's; a
// bridge without IPFIX pays one atomic load per translation and output.

// OVS's user_action_cookie, in host byte order: type (16 bits, then 2
// bytes of padding), the OpenFlow input port (ofp_port_t, 32 bits), the
// ofproto's UUID, then the type's union at offset 24.
const (
	ovsCookieLen         = 48
	cookieTypeFlowSample = 3
	cookieTypeIPFIX      = 4
	odppNone             = ^uint32(0) // ODPP_NONE: an ingress sample
)

// Flow sample directions (NX_ACTION_SAMPLE_*).
const (
	SampleDefault = 0
	SampleIngress = 1
	SampleEgress  = 2
)

// SampleCookie is a decoded IPFIX or flow-sample cookie.
type SampleCookie struct {
	Type   uint16 // cookieTypeIPFIX or cookieTypeFlowSample
	InPort uint32 // OpenFlow input port, OVS's 16-bit numbering (OFPP_LOCAL is 0xfffe)
	UUID   [16]byte
	// Output is the datapath port of an egress sample, ^0 for ingress.
	Output uint32
	// Flow samples only.
	Probability                 uint16
	CollectorSet, Domain, Point uint32
	Direction                   uint32
}

// ParseSampleCookie decodes the userdata of an IPFIX or flow-sample
// userspace action; ok is false for anything else.
func ParseSampleCookie(b []byte) (c SampleCookie, ok bool) {
	if len(b) != ovsCookieLen {
		return c, false
	}
	ne := binary.NativeEndian
	c.Type, c.InPort = ne.Uint16(b), ne.Uint32(b[4:])
	copy(c.UUID[:], b[8:24])
	switch c.Type {
	case cookieTypeIPFIX:
		c.Output = ne.Uint32(b[24:])
	case cookieTypeFlowSample:
		c.Probability = ne.Uint16(b[24:])
		c.CollectorSet, c.Domain, c.Point = ne.Uint32(b[28:]), ne.Uint32(b[32:]), ne.Uint32(b[36:])
		c.Output, c.Direction = ne.Uint32(b[40:]), ne.Uint32(b[44:])
	default:
		return c, false
	}
	return c, true
}

// AppendSampleCookie appends c as ovs-vswitchd lays it out.
func AppendSampleCookie(b []byte, c *SampleCookie) []byte {
	var w [ovsCookieLen]byte
	ne := binary.NativeEndian
	ne.PutUint16(w[0:], c.Type)
	ne.PutUint32(w[4:], c.InPort)
	copy(w[8:24], c.UUID[:])
	switch c.Type {
	case cookieTypeIPFIX:
		ne.PutUint32(w[24:], c.Output)
	case cookieTypeFlowSample:
		ne.PutUint16(w[24:], c.Probability)
		ne.PutUint32(w[28:], c.CollectorSet)
		ne.PutUint32(w[32:], c.Domain)
		ne.PutUint32(w[36:], c.Point)
		ne.PutUint32(w[40:], c.Output)
		ne.PutUint32(w[44:], c.Direction)
	}
	return append(b, w[:]...)
}

// IPFIXExporter is one exporter's settings for SetIPFIX.
type IPFIXExporter struct {
	ipfix.Config
	// Sampling (bridge exporter only) samples 1 packet in Sampling.
	Sampling                uint32
	ObsDomainID, ObsPointID uint32
	InputSampling           bool
	OutputSampling          bool
}

// IPFIXConfig is a bridge's IPFIX: the bridge exporter (nil for none)
// and the collector sets by id.
type IPFIXConfig struct {
	Bridge *IPFIXExporter
	Sets   map[uint32]ipfix.Config
}

// ipfixState is a bridge's running IPFIX.
type ipfixState struct {
	uuid [16]byte // the cookies' ofproto UUID: which bridge a sample is for
	// The bridge exporter (nil without) and its settings.
	bridge        *ipfix.Exporter
	prob          uint32
	delta         uint64
	domain, point uint32
	input, output bool
	sets          map[uint32]*ipfix.Exporter
	// ifaces maps a datapath port of the bridge to its interface, as the
	// records name it; rebuilt when a sample meets a port it lacks.
	ifaces atomic.Pointer[map[uint32]ipfix.Iface]
}

// SetIPFIX starts IPFIX on the bridge with cfg, replacing what ran
// before (whose caches are flushed, as ovs-vswitchd's); nil stops it.
// Datapath flows are translated again at once.
func (b *Bridge) SetIPFIX(cfg *IPFIXConfig) error {
	var st *ipfixState
	if cfg != nil && (cfg.Bridge != nil || len(cfg.Sets) > 0) {
		st = &ipfixState{sets: map[uint32]*ipfix.Exporter{}}
		rand.Read(st.uuid[:])
		st.uuid[6] = st.uuid[6]&0x0f | 0x40 // a version 4 UUID, as OVS's uuid_generate
		st.uuid[8] = st.uuid[8]&0x3f | 0x80
		empty := map[uint32]ipfix.Iface{}
		st.ifaces.Store(&empty)
		if be := cfg.Bridge; be != nil {
			exp, err := ipfix.NewExporter(be.Config)
			if err != nil {
				return err
			}
			st.bridge = exp
			st.prob = max(1, ^uint32(0)/max(be.Sampling, 1))
			st.delta = uint64(^uint32(0) / st.prob)
			st.domain, st.point = be.ObsDomainID, be.ObsPointID
			st.input, st.output = be.InputSampling, be.OutputSampling
		}
		for id, c := range cfg.Sets {
			exp, err := ipfix.NewExporter(c)
			if err != nil {
				st.close()
				return err
			}
			st.sets[id] = exp
		}
	}
	if old := b.X.ipfix.Swap(st); old != nil {
		old.close()
	}
	b.Tables.Invalidate()
	return nil
}

func (st *ipfixState) close() {
	if st.bridge != nil {
		st.bridge.Close()
	}
	for _, e := range st.sets {
		e.Close()
	}
}

// IPFIXStats returns the bridge exporter's counters; ok is false when the
// bridge runs none.
func (b *Bridge) IPFIXStats() (s ipfix.Stats, ok bool) {
	st := b.X.ipfix.Load()
	if st == nil || st.bridge == nil {
		return s, false
	}
	return st.bridge.Stats(), true
}

// IPFIXSetStats returns the collector sets' counters by id.
func (b *Bridge) IPFIXSetStats() map[uint32]ipfix.Stats {
	st := b.X.ipfix.Load()
	if st == nil {
		return nil
	}
	m := map[uint32]ipfix.Stats{}
	for id, e := range st.sets {
		m[id] = e.Stats()
	}
	return m
}

func (b *Bridge) stopIPFIX() {
	if old := b.X.ipfix.Swap(nil); old != nil {
		old.close()
	}
}

// ipfixSample appends a sample action with probability prob around a
// userspace action carrying cookie ck (the userspace action alone at
// probability UINT32_MAX), as ovs-vswitchd's compose_sample_action.
// tunOut, when not odppNone, is the tunnel's datapath port the userspace
// action names (OVS_USERSPACE_ATTR_EGRESS_TUN_PORT), so that the upcall
// carries the packet's egress tunnel key.
func (c *xctx) ipfixSample(prob uint32, ck *SampleCookie, tunOut uint32) {
	pid := c.x.ControllerPID.Load()
	if pid == 0 || prob == 0 {
		return
	}
	var ud [ovsCookieLen]byte
	AppendSampleCookie(ud[:0], ck)
	acts := c.out.Actions
	wrap := prob != ^uint32(0)
	var sampleAt, actsAt int
	if wrap {
		acts, sampleAt = netlinkio.BeginNested(acts, uint16(datapath.ActionSample))
		acts = netlinkio.AppendU32(acts, sampleAttrProbability, prob)
		acts, actsAt = netlinkio.BeginNested(acts, sampleAttrActions)
	}
	acts = datapath.AppendUserspaceAction(acts, &datapath.Userspace{PID: pid, Userdata: ud[:],
		TunnelOutPort: tunOut, HasTunnelOutPort: tunOut != odppNone})
	if wrap {
		acts = netlinkio.EndNested(acts, actsAt)
		acts = netlinkio.EndNested(acts, sampleAt)
	}
	c.out.Actions = acts
}

// ipfixBridgeSample is compose_ipfix_action: a bridge sample of the
// packet entering (output odppNone) or leaving by datapath port output.
func (c *xctx) ipfixBridgeSample(st *ipfixState, output uint32) {
	if st.bridge == nil || output == odppNone && !st.input || output != odppNone && !st.output {
		return
	}
	tunOut := odppNone
	if output != odppNone && st.bridge.Config().TunnelSampling && c.ipfixTunnelPort(output) {
		tunOut = output
	}
	ck := SampleCookie{Type: cookieTypeIPFIX, InPort: ovsPort(c.flow.InPort), UUID: st.uuid, Output: output}
	c.ipfixSample(st.prob, &ck, tunOut)
}

// ipfixTunnelPort reports whether datapath port dp is a tunnel port of a
// type IPFIX has tunnel elements for (dpif_ipfix_is_tunnel_port).
func (c *xctx) ipfixTunnelPort(dp uint32) bool {
	return tunnelTypeOf(c.ports.TunnelByDP(dp)) != ipfix.TunnelUnknown
}

// ovsPort is OpenFlow port p in OVS's 16-bit numbering (OpenFlow 1.1's
// reserved ports 0xffffff00 and up are 0xff00 and up).
func ovsPort(p uint32) uint32 {
	if p >= 0xffffff00 {
		return p - 0xffff0000
	}
	return p
}

// ipfixInput runs at the start of a translation of a received packet.
func (c *xctx) ipfixInput() {
	if st := c.x.ipfix.Load(); st != nil {
		c.ipfixBridgeSample(st, odppNone)
	}
}

// ipfixOutput runs before an output to datapath port dp.
func (c *xctx) ipfixOutput(dp uint32) {
	if st := c.x.ipfix.Load(); st != nil {
		c.ipfixBridgeSample(st, dp)
	}
}

// sampleUpcall takes an action upcall whose userdata is an IPFIX or
// flow-sample cookie; it returns false for other userdata.
func (u *Udpif) sampleUpcall(up *datapath.Upcall) bool {
	ck, ok := ParseSampleCookie(up.Userdata)
	if !ok {
		return false
	}
	var bridges []*Bridge
	switch t := u.x.(type) {
	case *Backer:
		bridges = t.set.Load().bridges
	case *Xlator:
		bridges = []*Bridge{t.bridge}
	}
	for _, b := range bridges {
		if b == nil {
			continue
		}
		if st := b.X.ipfix.Load(); st != nil && st.uuid == ck.UUID {
			st.sample(b, up, &ck)
			return true
		}
	}
	return true // a sample for a bridge gone or reconfigured since
}

// sample exports a sampled packet, as dpif_ipfix_bridge_sample and
// dpif_ipfix_flow_sample.
func (st *ipfixState) sample(b *Bridge, up *datapath.Upcall, ck *SampleCookie) {
	k := &up.Key
	s := ipfix.Sample{Key: k, Len: len(up.Packet), In: st.iface(b, k.InPort)}
	var exp *ipfix.Exporter
	switch ck.Type {
	case cookieTypeIPFIX:
		if exp = st.bridge; exp == nil {
			return
		}
		if (k.EthType == flow.EthTypeIPv4 || k.EthType == flow.EthTypeIPv6) && k.NwProto == flow.IPProtoUDP &&
			(k.TpDst == 3784 || k.TpDst == 3785) {
			return // BFD, which OVS itself consumes: the bridge exporter skips it
		}
		s.Delta, s.ObsDomain, s.ObsPoint = st.delta, st.domain, st.point
		s.Direction = ipfix.Ingress
		if ck.Output != odppNone {
			s.Direction = ipfix.Egress
		}
	case cookieTypeFlowSample:
		if exp = st.sets[ck.CollectorSet]; exp == nil || ck.Probability == 0 {
			return
		}
		s.Delta, s.ObsDomain, s.ObsPoint = uint64(0xffff/ck.Probability), ck.Domain, ck.Point
		switch {
		case ck.Direction == SampleIngress, ck.Direction != SampleEgress && ck.Output == odppNone:
			s.Direction = ipfix.Ingress
		default:
			s.Direction = ipfix.Egress
		}
	}
	if s.Direction == ipfix.Egress {
		s.Out = st.iface(b, ck.Output)
	}
	// Tunnel traffic, as ovs-vswitchd tells it: a sample of a packet
	// entering (no output port) with an IPv4 outer header, from the
	// packet's tunnel metadata; one leaving by an output port whose
	// upcall carries the datapath's egress tunnel key (the userspace
	// action asked for it, egressTunnelPort). Either counts only on a
	// tunnel port of a type the exporter knows.
	if exp.Config().TunnelSampling {
		switch {
		case ck.Output == odppNone && k.Tunnel.IPv4Dst != [4]byte{}:
			s.Tunnel, s.TunnelType = &k.Tunnel, ipfixTunnelType(b, k.InPort)
		case ck.Output != odppNone && up.HasEgressTunnel:
			s.Tunnel, s.TunnelType = &up.EgressTunnelKey, ipfixTunnelType(b, ck.Output)
		}
	}
	exp.Sample(&s)
}

// ipfixTunnelType is the IPFIX tunnel type of the bridge's port on
// datapath port dp: ipfix.TunnelUnknown for a port that is not a tunnel
// (or not the bridge's).
func ipfixTunnelType(b *Bridge, dp uint32) uint8 {
	return tunnelTypeOf(b.Ports.Snapshot().TunnelByDP(dp))
}

func tunnelTypeOf(p *Port) uint8 {
	if p == nil {
		return ipfix.TunnelUnknown
	}
	return ipfix.TunnelTypeOf(p.tunnel.cfg.Type)
}

// iface returns the interface of datapath port dp as IPFIX names it: its
// device's ifindex and name (the type and description ovs-vswitchd
// reads from the netdev's status, which Linux devices leave empty); for
// a shared tunnel vport, one of the bridge's tunnel ports on it by name;
// zero for a port not on the bridge.
func (st *ipfixState) iface(b *Bridge, dp uint32) ipfix.Iface {
	m := *st.ifaces.Load()
	if i, ok := m[dp]; ok {
		return i
	}
	vports, err := b.DP.Vports()
	if err != nil {
		slog.Debug("IPFIX: reading vports", "err", err)
	}
	ports := b.Ports.Snapshot()
	n := make(map[uint32]ipfix.Iface, len(vports)+1)
	for i := range vports {
		if p := ports.ByDP(vports[i].PortNo); p != nil && !p.IsPatch() {
			n[vports[i].PortNo] = ipfix.Iface{Index: vports[i].IfIndex, Name: vports[i].Name}
		} else if p := ports.TunnelByDP(vports[i].PortNo); p != nil {
			// As ovs-vswitchd names a tunnel port: the shared vport's
			// device's ifindex, the Interface's name.
			n[vports[i].PortNo] = ipfix.Iface{Index: vports[i].IfIndex, Name: p.Name}
		}
	}
	if _, ok := n[dp]; !ok {
		n[dp] = ipfix.Iface{} // not the bridge's: zeros, and no new lookup
	}
	st.ifaces.Store(&n)
	return n[dp]
}
