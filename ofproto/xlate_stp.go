package ofproto

import (
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
	"github.com/govswitch/govswitch/ofproto/rstp"
	"github.com/govswitch/govswitch/ofproto/stp"
)

// Translation on a bridge that runs a spanning tree (stp_bridge.go) or a
// rapid one (rstp_bridge.go), as ofproto-dpif-xlate's: BPDUs go to
// userspace, and ports that are not forwarding neither receive nor send.
// A bridge runs one of the two at most, so each check below asks both.

// stpCookie is the userdata of the userspace action that brings BPDUs up:
// the slow-path cookie with reason SLOW_STP, no input port and a zero
// UUID, so that ovs-dpctl dump-flows prints the flow as
// "userspace(pid=N,slow_path(stp))", as it prints ovs-vswitchd's.
var stpCookie = func() (c [datapath.SlowPathCookieLen]byte) {
	datapath.PutSlowPathCookie(c[:], datapath.SlowSTP, 0xffff, &[16]byte{})
	return c
}()

// isSTPCookie reports whether userdata is a slow-path cookie for STP alone.
func isSTPCookie(ud []byte) bool {
	r, ok := datapath.ParseSlowPathCookie(ud)
	return ok && r == datapath.SlowSTP
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
func stpReceives(pt *Port) bool {
	return (pt.STP == 0 || pt.STP.Forwards() || pt.STP.Learns()) &&
		(pt.RSTP == rstp.Disabled || pt.RSTP.Forwards() || pt.RSTP.Learns())
}

// stpForwards reports whether what arrives on the port may go anywhere.
func stpForwards(pt *Port) bool {
	return (pt.STP == 0 || pt.STP.Forwards()) && (pt.RSTP == rstp.Disabled || pt.RSTP.Forwards())
}

// stpOutput reports whether the packet may be output to pt: a BPDU
// unless pt blocks (an RSTP port passes them in every state), anything
// else only when pt forwards.
func (c *xctx) stpOutput(pt *Port) bool {
	if pt.STP == 0 && pt.RSTP == rstp.Disabled {
		return true
	}
	if c.base.EthDst == stp.MulticastAddr && c.base.EthType == flow.EthTypeNone {
		return (pt.STP == 0 || pt.STP.PassesBPDU()) && (pt.RSTP == rstp.Disabled || pt.RSTP.ManagesBPDU())
	}
	return (pt.STP == 0 || pt.STP.Forwards()) && (pt.RSTP == rstp.Disabled || pt.RSTP.Forwards())
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
	} else if rb := b.X.rstp.Load(); rb != nil {
		rb.receive(up.Key.InPort, up.Packet)
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
// tree (listening and disabled are 0; RSTP's discarding is listening),
// nothing in later versions, which have no such bits.
func stpPortState(p *Port, v uint8) uint32 {
	if v != openflow.Version10 {
		return 0
	}
	switch p.RSTP {
	case rstp.Learning:
		return ofpps10STPLearn
	case rstp.Forwarding:
		return ofpps10STPForward
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
