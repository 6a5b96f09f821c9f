package ofproto

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
)

// Executing a slow-pathed translation, as ovs-vswitchd's
// dpif_execute_with_help: the actions up to the last one the kernel cannot
// carry out (a set of ARP or ICMP fields, or a clone, sample or
// check_pkt_len holding one) run on the packet in userspace, each output
// among them becoming an execute of its own with the packet as it is at
// that point; the rest of the actions go to the kernel in one execute with
// the rewritten packet. The kernel re-parses the packet it is given, so
// the actions it runs see the rewrites.

// slowRunner runs slow-pathed actions. It keeps its buffers between runs
// and allocates nothing in steady state; one per goroutine.
type slowRunner struct {
	ex  datapath.Executor
	md  flow.Key // the running packet's metadata
	act []byte   // one output's actions, for emit
	// emit receives each execute the run produces. pkt and actions are
	// valid only during the call.
	emit func(pkt []byte, md *flow.Key, actions []byte)
}

func newSlowRunner(emit func(pkt []byte, md *flow.Key, actions []byte)) *slowRunner {
	r := &slowRunner{emit: emit, act: make([]byte, 0, 64)}
	r.ex.Output = func(port uint32, pkt []byte) {
		r.act = datapath.AppendOutput(r.tunnelSet(), port)
		r.emit(pkt, &r.md, r.act)
	}
	r.ex.Userspace = func(u datapath.Userspace, _ flow.Key, pkt []byte) {
		r.act = datapath.AppendUserspace(r.tunnelSet(), u.PID, u.Userdata)
		r.emit(pkt, &r.md, r.act)
	}
	return r
}

// tunnelSet starts an output's actions: the kernel drops the tunnel an
// execute's key names, so a packet with a tunnel destination in its
// metadata (a set(tunnel) ran, or it came in on a tunnel) carries it in a
// set action, as ovs-vswitchd's execute helper does.
func (r *slowRunner) tunnelSet() []byte {
	if !datapath.TunnelDstSet(&r.md.Tunnel) {
		return r.act[:0]
	}
	return datapath.AppendSet(r.act[:0], datapath.KeyAttrTunnel, &r.md)
}

// run executes actions on packet, whose metadata is key's. An action
// before the last slow one that userspace cannot run (ct, meter, recirc,
// ...) fails the run: nothing of the packet is sent after it.
func (r *slowRunner) run(packet []byte, key *flow.Key, actions []byte, off uint32) error {
	split := slowSplit(actions, off)
	r.md = *key
	pkt := packet
	if split > 0 {
		var err error
		if pkt, err = r.ex.RunOn(packet, &r.md, actions[:split]); err != nil {
			return fmt.Errorf("slow path: %w", err)
		}
	}
	if split < len(actions) {
		r.emit(pkt, &r.md, actions[split:])
	}
	return nil
}

// slowSplit returns the offset in actions just past the last top-level
// action that needs userspace, 0 if none does. off are the features
// turned off (backer_features.go).
func slowSplit(actions []byte, off uint32) int {
	end := 0
	for at := 0; at+4 <= len(actions); {
		n := int(binary.NativeEndian.Uint16(actions[at:]))
		if n < 4 || at+n > len(actions) {
			break // malformed: the datapath's checks report it
		}
		next := min((at+n+3)&^3, len(actions))
		it := datapath.NewActionIter(actions[at : at+n])
		if it.Next() && needsUserspace(it.Action(), off) {
			end = next
		}
		at = next
	}
	return end
}

// needsUserspace reports whether a, or an action nested in it, is one
// the kernel cannot carry out, or may not with the features off. With
// truncation off every output runs here too: a truncation applies to the
// output after it.
func needsUserspace(a *datapath.Action, off uint32) bool {
	switch a.Type {
	case datapath.ActionSet, datapath.ActionSetMasked:
		return datapath.IsSlowSet(a)
	case datapath.ActionTrunc, datapath.ActionOutput, datapath.ActionUserspace:
		return off&FeatureTrunc != 0
	case datapath.ActionAddMPLS, datapath.ActionPushEth, datapath.ActionPopEth, datapath.ActionPopMPLS:
		return off&FeatureAddMPLS != 0
	case datapath.ActionClone, datapath.ActionSample, datapath.ActionDecTTL:
		return slowSplit(a.Actions, off) > 0
	case datapath.ActionCheckPktLen:
		return slowSplit(a.IfGreater, off) > 0 || slowSplit(a.IfLessEq, off) > 0
	}
	return false
}

// slowOps is a handler's part in executing slow-pathed packets: their
// executes join the handler's batch, so the packets they carry are copied
// into an arena that lives until the batch has been sent.
type slowOps struct {
	hd     *handler
	r      *slowRunner
	arena  []byte // packet bytes and actions of this batch's slow executes
	failed uint64
}

func (hd *handler) initSlow() {
	s := &hd.slow
	s.hd = hd
	s.arena = make([]byte, 0, 16<<10)
	s.r = newSlowRunner(s.emit)
}

// emit appends an execute of a copy of pkt and actions to the batch.
// Slices of the arena stay valid when it grows (they keep the old array).
func (s *slowOps) emit(pkt []byte, md *flow.Key, actions []byte) {
	at := len(s.arena)
	s.arena = append(s.arena, pkt...)
	p := s.arena[at:len(s.arena):len(s.arena)]
	at = len(s.arena)
	s.arena = append(s.arena, actions...)
	a := s.arena[at:len(s.arena):len(s.arena)]
	s.hd.ops = append(s.hd.ops, datapath.Op{Kind: datapath.OpExecute, Packet: p, Flow: datapath.Flow{Key: *md, Actions: a}})
	s.hd.opUkey = append(s.hd.opUkey, nil)
}

// execute adds the executes of a slow-pathed translation of up to the
// batch.
func (s *slowOps) execute(up *datapath.Upcall, out *Out) {
	if err := s.r.run(up.Packet, &up.Key, out.Actions, out.slowOff); err != nil {
		s.hd.u.c.execFailed.Add(1)
		s.hd.u.noteError("execute", err)
	}
}

// executeWithHelp executes a packet-out's or a resume's translation on
// dp, in userspace where the kernel cannot (control path: it allocates).
func executeWithHelp(dp datapath.Datapath, packet []byte, key *flow.Key, out *Out) error {
	if out.Slow == 0 {
		return dp.Execute(packet, key, out.Actions)
	}
	var first error
	r := newSlowRunner(func(pkt []byte, md *flow.Key, actions []byte) {
		if err := dp.Execute(pkt, md, actions); err != nil && first == nil {
			first = err
		}
	})
	if err := r.run(packet, key, out.Actions, out.slowOff); err != nil {
		return err
	}
	return first
}

// slowUpcall handles a packet a slow-pathed flow sent up: translated as a
// miss and executed with help, as OVS's SLOW_PATH_UPCALL, with nothing
// installed (the flow that sent it is there) and no rule credited (the
// revalidator credits the flow's own counters).
func (hd *handler) slowUpcall(up *datapath.Upcall, out *Out, now time.Time) {
	hd.u.x.TranslatePacket(&up.Key, up.Packet, now, true, out)
	if out.Slow != 0 {
		hd.slow.execute(up, out)
		return
	}
	// The tables changed under the flow: the revalidator replaces it;
	// this packet takes the new translation.
	if len(out.Actions) > 0 {
		hd.ops = append(hd.ops, datapath.Op{Kind: datapath.OpExecute, Packet: up.Packet,
			Flow: datapath.Flow{Key: up.Key, Actions: out.Actions}})
		hd.opUkey = append(hd.opUkey, nil)
	}
}
