package dummy

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"golang.org/x/sys/unix"
)

// maxActionDepth bounds the nesting of sample, clone and check_pkt_len, as
// the kernel's SAMPLE_ACTION_DEPTH / OVS_COPY_ACTIONS_MAX_DEPTH do.
const maxActionDepth = 16

// validateActions checks actions as the kernel does when a flow is put or
// a packet executed: malformed ones are EINVAL; well-formed ones the dummy
// cannot execute are ErrNotSupported.
func validateActions(b []byte, depth int) error {
	if depth > maxActionDepth {
		return fmt.Errorf("actions nested %d deep: %w", depth, unix.EINVAL)
	}
	it := datapath.NewActionIter(b)
	for it.Next() {
		a := it.Action()
		switch a.Type {
		case datapath.ActionOutput, datapath.ActionPushVLAN, datapath.ActionPopVLAN,
			datapath.ActionRecirc, datapath.ActionHash, datapath.ActionTrunc:
		case datapath.ActionUserspace:
			if a.Userspace.PID == 0 {
				return fmt.Errorf("userspace action without pid: %w", unix.EINVAL)
			}
		case datapath.ActionSet, datapath.ActionSetMasked:
			switch a.SetAttr {
			case datapath.KeyAttrEthernet, datapath.KeyAttrPriority, datapath.KeyAttrSkbMark:
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

// executor runs validated actions on one packet. key is the flow key the
// packet had when it entered (upcalls carry it, as in the kernel); md is
// the metadata actions change (priority, mark, hash) for recirculation.
type executor struct {
	c     *core
	key   flow.Key
	trunc uint32
}

func (x *executor) metadata() flow.Metadata {
	k := &x.key
	return flow.Metadata{
		InPort: k.InPort, Priority: k.Priority, Mark: k.Mark, RecircID: k.RecircID, DPHash: k.DPHash,
		Tunnel: k.Tunnel, CtState: k.CtState, CtZone: k.CtZone, CtMark: k.CtMark, CtLabels: k.CtLabels,
	}
}

// run executes actions on a copy of pkt; c.mu is held.
func (x *executor) run(pkt []byte, actions []byte) {
	pkt = slices.Clone(pkt)
	it := datapath.NewActionIter(actions)
	for it.Next() {
		a := it.Action()
		switch a.Type {
		case datapath.ActionOutput:
			x.output(a.Port, pkt)
			x.trunc = 0
		case datapath.ActionUserspace:
			out := pkt
			if x.trunc != 0 && uint32(len(out)) > x.trunc {
				out = out[:x.trunc]
			}
			x.trunc = 0
			x.c.upcallLocked(datapath.UpcallAction, &x.key, out, a.Userspace.Userdata, x.c.actionHandlerLocked(&x.key, a.Userspace.PID))
		case datapath.ActionPushVLAN:
			if len(pkt) >= 12 {
				tag := [4]byte{}
				binary.BigEndian.PutUint16(tag[:], a.VLAN.TPID)
				binary.BigEndian.PutUint16(tag[2:], a.VLAN.TCI&^flow.VLANPresent)
				pkt = slices.Insert(pkt, 12, tag[:]...)
			}
		case datapath.ActionPopVLAN:
			if len(pkt) >= 18 {
				if t := binary.BigEndian.Uint16(pkt[12:]); t == flow.EthTypeVLAN || t == flow.EthTypeQinQ {
					pkt = slices.Delete(pkt, 12, 16)
				}
			}
		case datapath.ActionSet, datapath.ActionSetMasked:
			var k flow.Key
			var m flow.Mask
			if a.DecodeSet(&k, &m) != nil {
				continue
			}
			switch a.SetAttr {
			case datapath.KeyAttrEthernet:
				if len(pkt) >= 12 {
					for i := range 6 {
						pkt[i] = pkt[i]&^m.EthDst[i] | k.EthDst[i]&m.EthDst[i]
						pkt[6+i] = pkt[6+i]&^m.EthSrc[i] | k.EthSrc[i]&m.EthSrc[i]
					}
				}
			case datapath.KeyAttrPriority:
				x.key.Priority = x.key.Priority&^m.Priority | k.Priority&m.Priority
			case datapath.KeyAttrSkbMark:
				x.key.Mark = x.key.Mark&^m.Mark | k.Mark&m.Mark
			}
		case datapath.ActionRecirc:
			if x.c.recircLeft > 0 {
				x.c.recircLeft--
				md := x.metadata()
				md.RecircID = a.ID
				x.c.processLocked(pkt, &md)
			}
		case datapath.ActionHash:
			k := flow.Extract(pkt, x.metadata())
			x.key.DPHash = uint32(k.Hash(uint64(a.HashBasis)))
			if x.key.DPHash == 0 {
				x.key.DPHash = 1
			}
		case datapath.ActionTrunc:
			x.trunc = a.MaxLen
		case datapath.ActionClone:
			sub := *x
			sub.run(pkt, a.Actions)
		case datapath.ActionSample:
			if a.Prob == ^uint32(0) || (a.Prob != 0 && rand.Uint32() < a.Prob) {
				sub := *x
				sub.run(pkt, a.Actions)
			}
		case datapath.ActionCheckPktLen:
			sub := *x
			if len(pkt) > int(a.PktLen) {
				sub.run(pkt, a.IfGreater)
			} else {
				sub.run(pkt, a.IfLessEq)
			}
		}
	}
}

// output sends a copy of pkt out of port no; a missing port or one without
// a device drops it, as the kernel does.
func (x *executor) output(no uint32, pkt []byte) {
	pt := x.c.ports[no]
	if pt == nil {
		return
	}
	if x.trunc != 0 && uint32(len(pkt)) > x.trunc {
		pkt = pkt[:x.trunc]
	}
	if pt.dev == nil {
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
