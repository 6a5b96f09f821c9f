package ofproto

import (
	"log/slog"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/stp"
)

// What a bridge's spanning tree (stp_bridge.go) and rapid spanning tree
// (rstp_bridge.go) share: the goroutine that ticks the protocol, BPDUs
// sent and received through the datapath, and port states published on
// the Port.

// runTree calls tick every stpTick, with the time, until stop closes;
// then it closes done.
func runTree(stop <-chan struct{}, done chan<- struct{}, tick func(now time.Time)) {
	defer close(done)
	t := time.NewTicker(stpTick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			tick(now)
		}
	}
}

// sendBPDU transmits bpdu on the port called name: an 802.3 frame from
// the port's own address, built in *frame (reused), executed on the
// datapath as output to the port. A port without its own vport sends
// nothing; one without an address is warned about on log (nil: none),
// with noMAC as the message, as each protocol words it.
func (b *Bridge) sendBPDU(name string, bpdu []byte, frame *[]byte, log *slog.Logger, noMAC, failed string) {
	pt := b.Ports.Snapshot().byName(name)
	if pt == nil || !pt.ownsVport() {
		return
	}
	if pt.HWAddr == ([6]byte{}) {
		if log != nil {
			log.Warn(noMAC, "bridge", b.Name, "port", name)
		}
		return
	}
	*frame = stp.AppendFrame((*frame)[:0], pt.HWAddr, bpdu)
	key := flow.Extract(*frame, flow.Metadata{})
	var acts []byte
	acts = datapath.AppendOutput(acts, pt.DPPort)
	if err := b.DP.Execute(*frame, &key, acts); err != nil && log != nil {
		log.Warn(failed, "bridge", b.Name, "port", name, "err", err)
	}
}

// bpduIn is the port a BPDU frame arrived on (datapath port dpPort) and
// the BPDU it carries; ok is false for an unknown port or a frame that
// is no BPDU.
func (b *Bridge) bpduIn(dpPort uint32, frame []byte) (pt *Port, bpdu []byte, ok bool) {
	if pt = b.Ports.Snapshot().ByDP(dpPort); pt == nil {
		return nil, nil, false
	}
	bpdu, ok = stp.FramePayload(frame)
	return pt, bpdu, ok
}

// setTreeState applies set to a copy of the port called name and, if set
// reports a change, publishes the copy and tells the controllers (the
// OpenFlow 1.0 port state carries the tree's state, as ovs-vswitchd's
// port status does). It reports whether it changed the port. set is
// called with b.mu held.
func (b *Bridge) setTreeState(name string, set func(*Port) bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	pt := b.Ports.Snapshot().byName(name)
	if pt == nil {
		return false
	}
	np := *pt
	if !set(&np) {
		return false
	}
	if b.Ports.Add(np) == nil && b.OnPortEvent != nil {
		b.OnPortEvent(PortEvent{Reason: 2, Port: np})
	}
	return true
}
