package ofproto

import (
	"bytes"
	"encoding/binary"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
)

// The userspace slow path, as ovs-vswitchd's: a rewrite the kernel
// datapath cannot do (its validate_set has no ARP, ICMP, ICMPv6 or ND case) is
// still committed as a datapath set action, as OVS's commit_set_arp_action
// and commit_set_icmp_action commit it, and the translation is marked
// SLOW_ACTION. The upcall handler then runs those actions on the packet in
// userspace and hands what the kernel can do to it (upcall_slow.go), and
// the flow it installs holds only userspace(pid,slow_path(action)): every
// later packet of the megaflow comes up and is handled the same way. The
// megaflow mask is the translation's, so the flow catches exactly the
// packets that would translate alike.

// instanceUUID is the UUID stem of the bridges' slow-path cookies: a
// bridge's cookie carries it with the bridge's number in the last two
// bytes. OVS puts its ofproto's random UUID there and reads it back to find
// the bridge; here it is a constant, so a restarted switch knows (and
// adopts) the slow-pathed flows its predecessor installed, and so a
// controller action's userdata that happens to share the cookie's type
// and size is not taken for one (isSlowPathCookie).
var instanceUUID = [16]byte{0x67, 0x6f, 0x76, 0x73, 0x77, 0x69, 0x74, 0x63, // "govswitc"
	0x68, 0x20, 0x73, 0x6c, 0x6f, 0x77} // "h slow"

// commitARP emits the set(arp(...)) that turns the base's ARP fields into
// the flow's, as a masked set of the fields that changed, which become
// exact in the megaflow (OVS unwildcards a field that set_field, load or
// move writes).
func (c *xctx) commitARP(acts []byte) []byte {
	f, b, wc := &c.flow, &c.base, &c.out.WC
	if f.IPv4Src == b.IPv4Src && f.IPv4Dst == b.IPv4Dst && f.NwProto == b.NwProto && f.ArpSHA == b.ArpSHA && f.ArpTHA == b.ArpTHA {
		return acts
	}
	var m flow.Mask
	ones4 := [4]byte{0xff, 0xff, 0xff, 0xff}
	if f.IPv4Src != b.IPv4Src {
		m.IPv4Src, wc.IPv4Src = ones4, ones4
	}
	if f.IPv4Dst != b.IPv4Dst {
		m.IPv4Dst, wc.IPv4Dst = ones4, ones4
	}
	if f.NwProto != b.NwProto {
		m.NwProto, wc.NwProto = 0xff, 0xff
	}
	if f.ArpSHA != b.ArpSHA {
		m.ArpSHA, wc.ArpSHA = ones6, ones6
	}
	if f.ArpTHA != b.ArpTHA {
		m.ArpTHA, wc.ArpTHA = ones6, ones6
	}
	// AppendSetMasked leaves NwProto out of the mask (for IP it is the
	// protocol, which no set may change); for ARP it is the opcode.
	acts = appendSetARP(acts, f, &m)
	b.IPv4Src, b.IPv4Dst, b.NwProto, b.ArpSHA, b.ArpTHA = f.IPv4Src, f.IPv4Dst, f.NwProto, f.ArpSHA, f.ArpTHA
	c.out.Slow |= datapath.SlowAction
	return acts
}

// appendSetARP appends the set of the ARP fields m selects: a plain set
// when it selects all of them, as OVS's commit() chooses. The opcode is
// OVS's get_arp_key's: an exact 8-bit opcode mask (the flow keeps the
// low byte) is the exact 16-bit one, and so is the value 255.
func appendSetARP(acts []byte, f *flow.Key, m *flow.Mask) []byte {
	var v, mk [24]byte
	arpOp := func(b uint8) uint16 {
		if b == 0xff {
			return 0xffff
		}
		return uint16(b)
	}
	binary.BigEndian.PutUint16(v[8:], arpOp(f.NwProto&m.NwProto))
	binary.BigEndian.PutUint16(mk[8:], arpOp(m.NwProto))
	for i := 0; i < 4; i++ {
		v[i], mk[i] = f.IPv4Src[i]&m.IPv4Src[i], m.IPv4Src[i]
		v[4+i], mk[4+i] = f.IPv4Dst[i]&m.IPv4Dst[i], m.IPv4Dst[i]
	}
	for i := 0; i < 6; i++ {
		v[10+i], mk[10+i] = f.ArpSHA[i]&m.ArpSHA[i], m.ArpSHA[i]
		v[16+i], mk[16+i] = f.ArpTHA[i]&m.ArpTHA[i], m.ArpTHA[i]
	}
	exact := true
	for _, c := range mk[:22] {
		exact = exact && c == 0xff
	}
	if exact {
		return datapath.AppendSetAttr(acts, datapath.KeyAttrARP, v[:])
	}
	return datapath.AppendSetMaskedAttr(acts, datapath.KeyAttrARP, v[:], mk[:])
}

// commitND emits the set(nd(...)) of changed neighbour discovery fields
// (nd_target, nd_sll, nd_tll), as OVS's commit_set_nd_action: the kernel
// cannot write them (SLOW_ACTION); a masked set of the fields that
// changed, a plain one when all three did. They become exact in the
// megaflow.
func (c *xctx) commitND(acts []byte) []byte {
	f, b, wc := &c.flow, &c.base, &c.out.WC
	if f.NDTarget == b.NDTarget && f.NDSLL == b.NDSLL && f.NDTLL == b.NDTLL {
		return acts
	}
	var m flow.Mask
	if f.NDTarget != b.NDTarget {
		m.NDTarget, wc.NDTarget = ones16, ones16
	}
	if f.NDSLL != b.NDSLL {
		m.NDSLL, wc.NDSLL = ones6, ones6
	}
	if f.NDTLL != b.NDTLL {
		m.NDTLL, wc.NDTLL = ones6, ones6
	}
	wc.EthType, wc.NwProto, wc.NwFrag = 0xffff, 0xff, 0xff
	if m.NDTarget == ones16 && m.NDSLL == ones6 && m.NDTLL == ones6 {
		acts = datapath.AppendSet(acts, datapath.KeyAttrND, f)
	} else {
		acts = datapath.AppendSetMasked(acts, datapath.KeyAttrND, f, &m)
	}
	b.NDTarget, b.NDSLL, b.NDTLL = f.NDTarget, f.NDSLL, f.NDTLL
	c.out.Slow |= datapath.SlowAction
	return acts
}

// commitICMP emits the set(icmp(...)) or set(icmpv6(...)) of a changed
// ICMP type or code, a plain set as OVS's commit_set_icmp_action emits it;
// both fields become exact in the megaflow.
func (c *xctx) commitICMP(acts []byte) []byte {
	f, b, wc := &c.flow, &c.base, &c.out.WC
	if f.TpSrc == b.TpSrc && f.TpDst == b.TpDst || f.NwFrag&flow.FragLater != 0 {
		return acts
	}
	var attr datapath.KeyAttr
	switch {
	case f.EthType == flow.EthTypeIPv4 && f.NwProto == flow.IPProtoICMP:
		attr = datapath.KeyAttrICMP
	case f.EthType == flow.EthTypeIPv6 && f.NwProto == flow.IPProtoICMPv6:
		attr = datapath.KeyAttrICMPv6
	default:
		return acts
	}
	wc.EthType, wc.NwProto, wc.NwFrag = 0xffff, 0xff, 0xff
	wc.TpSrc, wc.TpDst = 0x00ff, 0x00ff
	acts = datapath.AppendSet(acts, attr, f)
	b.TpSrc, b.TpDst = f.TpSrc, f.TpDst
	c.out.Slow |= datapath.SlowAction
	return acts
}

// composeSlowPath builds the slow-pathed flow's one action, as OVS's
// compose_slow_path: userspace to the upcall socket with the slow-path
// cookie. Without an upcall socket (pid 0) there is none, and the flow is
// not installed (InstallActions).
func (c *xctx) composeSlowPath() {
	o := c.out
	pid := c.x.ControllerPID.Load()
	if pid == 0 {
		return
	}
	if bk := c.x.backer; bk != nil && bk.DP.Features().PerCPUDispatch {
		// As ovs-vswitchd's DPIF_NETLINK_PER_CPU_PID: the kernel picks
		// the handler by CPU and ignores the pid, which dumps show.
		pid = perCPUPID
	}
	in := uint32(0xffff) // OFPP_NONE
	if c.inPort != nil && c.inPort.OFPort <= 0xffff {
		in = c.inPort.OFPort
	}
	u := instanceUUID
	binary.BigEndian.PutUint16(u[14:], c.x.ID)
	var cookie [datapath.SlowPathCookieLen]byte
	datapath.PutSlowPathCookie(cookie[:], o.Slow, in, &u)
	o.slowActs = datapath.AppendUserspace(o.slowActs[:0], pid, cookie[:])
}

// perCPUPID is the pid ovs-vswitchd puts in the userspace actions of a
// datapath with per-CPU upcall dispatch.
const perCPUPID = 0xffffffff

// InstallActions returns the actions of the datapath flow to install for
// this translation: Actions, or for a slow-pathed one its userspace
// action; ok is false when a slow-pathed flow cannot be installed (no
// upcall socket).
func (o *Out) InstallActions() (acts []byte, ok bool) {
	if o.Slow == 0 {
		return o.Actions, true
	}
	return o.slowActs, len(o.slowActs) > 0
}

// isSlowPathCookie reports whether userdata is a slow-path cookie this
// process wrote: its type and size, and the UUID stem. A controller
// action's userdata of the cookie's size can share its first two bytes
// (UserdataController2, reason 0); it cannot share the UUID.
func isSlowPathCookie(userdata []byte) bool {
	if _, ok := datapath.ParseSlowPathCookie(userdata); !ok {
		return false
	}
	return bytes.Equal(datapath.SlowPathCookieUUID(userdata)[:14], instanceUUID[:14])
}
