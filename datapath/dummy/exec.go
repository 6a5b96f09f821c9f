package dummy

import (
	"fmt"
	"slices"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"golang.org/x/sys/unix"
)

// Actions run through datapath.Executor, the codec package's packet
// rewriter; this file binds its callbacks to the datapath (ports, handlers,
// recirculation) and checks actions up front, as the kernel does when a
// flow is put or a packet executed.

// maxActionDepth bounds the nesting of sample, clone and check_pkt_len.
const maxActionDepth = 8

// maxRecirc bounds how many times one packet is recirculated, as the
// kernel's OVS_RECURSION_LIMIT does.
const maxRecirc = 4

// validateActions checks actions as the kernel does when a flow is put or a
// packet executed: malformed ones are EINVAL; well-formed ones the executor
// cannot run (ct, hash, meter, NSH, push/pop_eth, dec_ttl, add_mpls, sets
// of the tunnel or conntrack state) are datapath.ErrNotSupported.
func validateActions(b []byte, depth int) error {
	if depth > maxActionDepth {
		return fmt.Errorf("actions nested %d deep: %w", depth, unix.EINVAL)
	}
	it := datapath.NewActionIter(b)
	for it.Next() {
		a := it.Action()
		switch a.Type {
		case datapath.ActionOutput, datapath.ActionPushVLAN, datapath.ActionPopVLAN, datapath.ActionRecirc,
			datapath.ActionPushMPLS, datapath.ActionPopMPLS, datapath.ActionCTClear:
		case datapath.ActionTrunc:
			if a.MaxLen < 14 {
				return fmt.Errorf("trunc(%d): %w", a.MaxLen, unix.EINVAL)
			}
		case datapath.ActionUserspace:
			if a.Userspace.PID == 0 {
				return fmt.Errorf("userspace action without pid: %w", unix.EINVAL)
			}
		case datapath.ActionSet, datapath.ActionSetMasked:
			switch a.SetAttr {
			case datapath.KeyAttrPriority, datapath.KeyAttrSkbMark, datapath.KeyAttrCtMark, datapath.KeyAttrCtLabels,
				datapath.KeyAttrEthernet, datapath.KeyAttrIPv4, datapath.KeyAttrIPv6,
				datapath.KeyAttrTCP, datapath.KeyAttrUDP, datapath.KeyAttrSCTP, datapath.KeyAttrMPLS:
			default:
				return fmt.Errorf("set of key attribute %d: %w", a.SetAttr, datapath.ErrNotSupported)
			}
		case datapath.ActionSample, datapath.ActionClone:
			if err := validateActions(a.Actions, depth+1); err != nil {
				return err
			}
		case datapath.ActionCheckPktLen:
			if err := validateActions(a.IfGreater, depth+1); err != nil {
				return err
			}
			if err := validateActions(a.IfLessEq, depth+1); err != nil {
				return err
			}
		default:
			if a.Type == 0 || a.Type > datapath.ActionDecTTL {
				return fmt.Errorf("action type %d: %w", a.Type, unix.EINVAL)
			}
			return fmt.Errorf("action type %d: %w", a.Type, datapath.ErrNotSupported)
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("%w: %w", unix.EINVAL, err)
	}
	return nil
}

// recirc is a packet waiting to be looked up again.
type recirc struct {
	md  flow.Metadata
	pkt []byte
}

// bindExecutor points the core's executor at its ports and handlers.
func (c *core) bindExecutor() {
	c.ex.Output = c.outputLocked
	c.ex.Userspace = func(u datapath.Userspace, _ flow.Key, pkt []byte) {
		// The kernel sends the key the packet had when it entered, not
		// the one its actions made.
		c.upcallLocked(datapath.UpcallAction, &c.cur, pkt, u.Userdata, c.actionHandlerLocked(&c.cur, u.PID))
	}
	// The executor calls Recirc from inside a run: queue the packet and
	// look it up once the run is over, as the kernel defers it.
	c.ex.Recirc = func(md flow.Key, pkt []byte) {
		c.recircQ = append(c.recircQ, recirc{md: metadataOf(&md), pkt: slices.Clone(pkt)})
	}
}

func metadataOf(k *flow.Key) flow.Metadata {
	return flow.Metadata{
		InPort: k.InPort, Priority: k.Priority, Mark: k.Mark, RecircID: k.RecircID, DPHash: k.DPHash,
		Tunnel: k.Tunnel, CtState: k.CtState, CtZone: k.CtZone, CtMark: k.CtMark, CtLabels: k.CtLabels,
		CtOrig: k.CtOrig,
	}
}

// runLocked runs actions on a packet whose flow key is key, then the
// recirculations they asked for. c.mu is held.
func (c *core) runLocked(key *flow.Key, pkt, actions []byte) error {
	c.recircQ = c.recircQ[:0]
	err := c.runOneLocked(key, pkt, actions)
	for i := 0; i < len(c.recircQ) && i < maxRecirc; i++ {
		r := c.recircQ[i]
		c.runFlowLocked(r.pkt, &r.md)
	}
	c.recircQ = c.recircQ[:0]
	return err
}

func (c *core) runOneLocked(key *flow.Key, pkt, actions []byte) error {
	c.cur = *key
	md := *key
	return c.ex.Execute(pkt, &md, actions)
}

// outputLocked sends a copy of pkt out of port no; a missing port, or one
// without a device, drops it as the kernel does.
func (c *core) outputLocked(no uint32, pkt []byte) {
	pt := c.ports[no]
	if pt == nil {
		return
	}
	if pt.dev == nil {
		pt.v.Stats.TxDropped++
		return
	}
	// A device whose queue is full drops the packet: check before
	// copying it, so that a device nobody reads costs no garbage.
	if len(pt.dev.rx) == cap(pt.dev.rx) {
		pt.v.Stats.TxDropped++
		return
	}
	select {
	case pt.dev.rx <- slices.Clone(pkt):
		pt.v.Stats.TxPackets++
		pt.v.Stats.TxBytes += uint64(len(pkt))
	default:
		pt.v.Stats.TxDropped++
	}
}
