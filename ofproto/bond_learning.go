package ofproto

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/maclearn"
)

// Gratuitous learning packets, as OVS's bond_should_send_learning_packets
// and ofproto-dpif's bundle_send_learning_packets: when an active-backup
// or balance-slb bond (without LACP negotiated) loses a member or changes
// its active member, the addresses learned on the bridge's other ports now
// leave by another member; the upstream switch still has them on the old
// link and would send their replies there. So for every MAC-table entry
// not on the bond, the bond's runner sends a RARP request from that
// address, in its VLAN, out of the member the address now goes by, and
// the upstream switch learns it there. Like OVS, a rebalancing does not
// send them (the moved flows' own frames teach the switch), nor does a
// LACP-negotiated bond (the partner knows the members are one link).

// EthTypeRARP is the ethertype of reverse ARP, which learning packets use.
const EthTypeRARP = 0x8035

// rarpLen is a learning packet's length without a VLAN tag: Ethernet
// header and the 28-byte ARP body.
const rarpLen = 14 + 28

// appendLearningPacket appends the learning packet of mac in vlan (0:
// untagged) to b: to the broadcast address from mac, a RARP request
// (opcode 3) for mac with zero protocol addresses, as OVS's compose_rarp;
// a VLAN tag carries only the VID, as OVS pushes it.
func appendLearningPacket(b []byte, mac [6]byte, vlan uint16) []byte {
	b = append(b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	b = append(b, mac[:]...)
	if vlan != 0 {
		b = binary.BigEndian.AppendUint16(b, 0x8100)
		b = binary.BigEndian.AppendUint16(b, vlan&0xfff)
	}
	b = binary.BigEndian.AppendUint16(b, EthTypeRARP)
	b = append(b,
		0x00, 0x01, // hardware type: Ethernet
		0x08, 0x00, // protocol type: IPv4
		6, 4, // address lengths
		0x00, 0x03, // opcode: reverse request
	)
	b = append(b, mac[:]...)
	b = append(b, 0, 0, 0, 0)
	b = append(b, mac[:]...)
	return append(b, 0, 0, 0, 0)
}

// mayLearn is may_send_learning_packets: the bond runs active-backup or
// balance-slb without LACP, or falls back to active-backup while LACP is
// configured and not negotiated; and it has an active member.
func (st *bondState) mayLearn() bool {
	if st.bond.Config.Single || st.active == nil || st.lacp == LACPNegotiated {
		return false
	}
	b := st.balance()
	return b == BondActiveBackup || b == BondBalanceSLB
}

// wantLearning records that st, a state just chosen, should be announced
// with learning packets, and wakes the runner to send them. The caller
// holds bd.mu.
func (bd *Bond) wantLearning(st *bondState) {
	bd.learn = st
	bd.kick()
}

// takeLearning returns the state to announce, nil for none, and clears it.
func (bd *Bond) takeLearning() *bondState {
	bd.mu.Lock()
	defer bd.mu.Unlock()
	st := bd.learn
	bd.learn = nil
	return st
}

// learningPacket is one packet sendLearning sends.
type learningPacket struct {
	mac  [6]byte
	vlan uint16
	out  *Port
}

// sendLearning sends st's learning packets on b's datapath, reusing the
// caller's buffers, and returns them. It runs on the bond's runner.
func (bd *Bond) sendLearning(b *Bridge, st *bondState, now time.Time, pkts []learningPacket, frame, acts []byte) ([]learningPacket, []byte, []byte) {
	pkts = pkts[:0]
	if b.MAC == nil || b.DP == nil || !st.mayLearn() {
		return pkts, frame, acts
	}
	ports := b.Ports.Snapshot()
	b.MAC.Entries(now, func(e maclearn.Entry) {
		if p := ports.ByOF(e.Port); p != nil && p.Bond == bd {
			return
		}
		if out := st.outputMember(e.MAC, e.VLAN); out != nil {
			pkts = append(pkts, learningPacket{e.MAC, e.VLAN, out})
		}
	})
	var nerr int
	var last error
	for _, lp := range pkts {
		frame = appendLearningPacket(frame[:0], lp.mac, lp.vlan)
		key := flow.Extract(frame, flow.Metadata{})
		acts = datapath.AppendOutput(acts[:0], lp.out.DPPort)
		if err := b.DP.Execute(frame, &key, acts); err != nil {
			nerr++
			last = err
		}
	}
	log := bd.Config.Log
	switch {
	case log == nil:
	case nerr > 0:
		log.Warn(fmt.Sprintf("bond %s: %d errors sending %d gratuitous learning packets, last error was: %v",
			bd.Config.Name, nerr, len(pkts), last))
	default:
		log.Debug(fmt.Sprintf("bond %s: sent %d gratuitous learning packets", bd.Config.Name, len(pkts)))
	}
	return pkts, frame, acts
}
