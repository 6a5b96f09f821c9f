package ofproto

import (
	"encoding/binary"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
	"github.com/govswitch/govswitch/ofproto/stp"
)

// Translation on a bridge that runs a spanning tree (stp_bridge.go), as
// ofproto-dpif-xlate's: BPDUs go to userspace, and ports that are not
// forwarding neither receive nor send.

// stpCookie is the userdata of the userspace action that brings BPDUs up:
// ovs-vswitchd's user_action_cookie (48 bytes, host byte order) of type
// slow path with reason SLOW_STP, so that ovs-dpctl dump-flows prints the
// flow as "userspace(pid=N,slow_path(stp))", as it prints ovs-vswitchd's.
//
//	[0:2]   type 2 (USER_ACTION_COOKIE_SLOW_PATH)
//	[2:4]   OpenFlow in_port: 0xffff (none)
//	[4:20]  ofproto UUID (zero)
//	[20:24] padding: the union after the UUID is 8-aligned
//	[24:28] unused
//	[28:32] reason: 1<<3 (SLOW_STP)
//	[32:48] zero
var stpCookie = func() (c [48]byte) {
	binary.LittleEndian.PutUint16(c[0:], 2)
	binary.LittleEndian.PutUint16(c[2:], 0xffff)
	binary.LittleEndian.PutUint32(c[28:], slowSTP)
	return c
}()

const slowSTP = 1 << 3

// isSTPCookie reports whether userdata is stpCookie.
func isSTPCookie(ud []byte) bool {
	return len(ud) == len(stpCookie) && binary.LittleEndian.Uint16(ud) == 2 && binary.LittleEndian.Uint32(ud[28:]) == slowSTP
}

// stpSpecial handles a packet received on a bridge with a spanning tree
// before the tables, as process_special: a BPDU (to the bridge group
// address, with an 802.2 LLC header) becomes a userspace action for the
// tree and nothing else. The destination address is in the megaflow of
// every translation on such a bridge. It reports whether it took the
// packet.
func (c *xctx) stpSpecial() bool {
	c.out.WC.EthDst = ones6
	if c.flow.EthDst != stp.MulticastAddr || c.flow.EthType != flow.EthTypeNone {
		return false
	}
	if pid := c.x.ControllerPID.Load(); pid != 0 {
		c.out.Actions = datapath.AppendUserspace(c.out.Actions, pid, stpCookie[:])
	}
	return true
}

// stpReceives reports whether what arrives on the port may enter the
// tables (may_receive): not on a port that neither forwards nor learns.
func stpReceives(pt *Port) bool { return pt.STP == 0 || pt.STP.Forwards() || pt.STP.Learns() }

// stpForwards reports whether what arrives on the port may go anywhere.
func stpForwards(pt *Port) bool { return pt.STP == 0 || pt.STP.Forwards() }

// stpOutput reports whether the packet may be output to pt: a BPDU
// unless pt blocks, anything else only when pt forwards.
func (c *xctx) stpOutput(pt *Port) bool {
	if pt.STP == 0 {
		return true
	}
	if c.base.EthDst == stp.MulticastAddr && c.base.EthType == flow.EthTypeNone {
		return pt.STP.PassesBPDU()
	}
	return pt.STP.Forwards()
}

// stpUpcall feeds a BPDU that came up by stpCookie to the tree of the
// bridge owning its input port.
func (u *Udpif) stpUpcall(up *datapath.Upcall) {
	var b *Bridge
	switch t := u.x.(type) {
	case *Backer:
		b = t.Owner(up.Key.InPort)
	case *Xlator:
		b = t.bridge
	}
	if b == nil {
		return
	}
	if sb := b.X.stp.Load(); sb != nil {
		sb.receive(up.Key.InPort, up.Packet)
	}
}

// OpenFlow 1.0's STP port state bits (OFPPS_STP_*, in bits 8-9).
const (
	ofpps10STPLearn   = 1 << 8
	ofpps10STPForward = 2 << 8
	ofpps10STPBlock   = 3 << 8
)

// stpPortState is the STP part of p's OpenFlow port state in version v,
// as ovs-vswitchd sets it: OpenFlow 1.0's OFPPS_STP_* for a port in a
// tree (listening and disabled are 0), nothing in later versions, which
// have no such bits.
func stpPortState(p *Port, v uint8) uint32 {
	if v != openflow.Version10 {
		return 0
	}
	switch p.STP {
	case stp.Learning:
		return ofpps10STPLearn
	case stp.Forwarding:
		return ofpps10STPForward
	case stp.Blocking:
		return ofpps10STPBlock
	}
	return 0
}
