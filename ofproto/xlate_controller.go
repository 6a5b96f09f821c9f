package ofproto

import (
	"encoding/binary"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Translation of the Nicira controller actions (NXAST_CONTROLLER,
// NXAST_CONTROLLER2: controller(reason=..,max_len=..,id=..,userdata=..,
// pause)) and of note (NXAST_NOTE, which does nothing).
//
// A controller action becomes a userspace action whose userdata carries
// everything the packet-in needs, since the kernel gives the upcall back
// with only the packet and its key: the header of UserdataController
// (reason, table, max_len, cookie) with type UserdataController2, the
// controller id and pause flag, then the pipeline metadata at the action
// (registers, metadata, tunnel id, pkt_mark, in_port: raw OXM, as
// NXPINT_METADATA carries it), the action's userdata and, for pause, the
// continuation. Layout after the 16-byte header:
//
//	[3]      flags: ctrlFlagPause, ctrlFlagConntracked (packetin_ct.go)
//	[6:8]    controller id (big-endian)
//	[16:18]  metadata length
//	[18:20]  userdata length
//	[20:24]  continuation length
//	[24:26]  the bridge's number on its datapath (Xlator.ID), which
//	         UserdataController keeps at [6:8]
//	[28:]    metadata, userdata, continuation (NXCPT_* properties with
//	         OpenFlow 1.3 actions, without the bridge and odp_port, which
//	         the packet-in adds)
//
// Pause freezes the translation, as OVS's: nothing after the controller
// action runs in the datapath. The actions left at every nesting level
// (the rest of the action list, the rest of each resubmit's caller, the
// rule's remaining instructions) and the action set go into the
// continuation; NXT_RESUME (continuation.go) translates them.
//
// This path allocates nothing once the Out's buffers have grown; it is not
// on the way of packets whose flows have no such action.
const (
	UserdataController2 = 2
	ctrlFlagPause       = 1
	ctrlHeaderLen       = 28
)

// ctrlState is a translation's pause state.
// The userdata is built in out.ctrl.buf: the header, metadata and
// userdata at the pause, the continuation once the translation has
// unwound.
type ctrlState struct {
	pausing bool
	// recirc says the pause freezes the translation for a
	// recirculation rather than for a controller (xlate_mpls.go).
	recirc bool
	// meter is a pausing controller action's meter_id, for the
	// packet-in's meter (appendPacketIn).
	meter uint32
	// hash, with recirc, is the datapath hash to take before the
	// recirculation: a dp_hash select group's (xlate_group.go).
	hash *groupHash
}

// ctrlOut is the part of an Out the controller actions use; its buffers
// keep their capacity from translation to translation.
type ctrlOut struct {
	frozen  []openflow.Action
	unrolls []openflow.Unroll
	buf     []byte
	md      openflow.Match // scratch for the metadata (it would escape from the stack)
}

func (o *ctrlOut) reset() {
	o.frozen = o.frozen[:0]
	o.unrolls = o.unrolls[:0]
	o.buf = o.buf[:0]
}

// vendorAction translates the Nicira actions that stay ActVendor in the
// codec. checkSupported refuses the others at flow_mod time.
func (c *xctx) vendorAction(a *openflow.Action) {
	if openflow.IsNote(a) {
		return
	}
	if !openflow.IsController(a) {
		c.unsupported(a)
		return
	}
	ca, err := openflow.ParseController(a)
	if err != nil {
		c.unsupported(a)
		return
	}
	c.controller2(&ca)
}

// unsupported ends the translation in a drop (see doAction's default).
func (c *xctx) unsupported(a *openflow.Action) {
	c.out.Actions = c.out.Actions[:0]
	c.out.Dropped = "unsupported action " + a.Type.String()
	c.exit = true
}

// controller2 carries out a controller action with its Nicira options.
func (c *xctx) controller2(ca *openflow.ControllerAction) { c.controller2At(ca, c.table, c.cookie) }

// controller2At is controller2 reporting table and cookie.
func (c *xctx) controller2At(ca *openflow.ControllerAction, table uint8, cookie uint64) {
	pid := c.x.ControllerPID.Load()
	if pid == 0 {
		if ca.Pause {
			// Nobody to resume it: the packet stops here, as a pause
			// with no controller to take the packet-in does in OVS.
			c.exit = true
		}
		return
	}
	c.commit()
	// The metadata below reports the tunnel id and pkt_mark, datapath
	// fields: the megaflow must match them.
	c.out.WC.Tunnel.ID, c.out.WC.Mark = ^uint64(0), ^uint32(0)
	reason := ca.Reason
	if ca.Pause {
		// The packet-in of a frozen translation names table 0, as
		// ovs-vswitchd's does; the continuation keeps the real one.
		table = 0
	}
	o := &c.out.ctrl
	b := o.buf[:0]
	b = append(b, UserdataController2, reason, table, c.ctrlFlags())
	b = binary.BigEndian.AppendUint16(b, ca.MaxLen)
	b = binary.BigEndian.AppendUint16(b, ca.ID)
	b = binary.BigEndian.AppendUint64(b, cookie)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0) // lengths, filled in below
	b = binary.BigEndian.AppendUint16(b, c.x.ID)
	b = append(b, 0, 0)
	mdStart := len(b)
	o.md = openflow.Match{}
	pinMetadata(&o.md, &c.flow, c.inPortOF())
	pinTunMetadata(&o.md, &c.flow, &c.out.WC) // tun_metadata.go
	b, _ = openflow.AppendOXMTLVs(b, &o.md)   // every field here has an OXM form
	binary.BigEndian.PutUint16(b[16:], uint16(len(b)-mdStart))
	b = append(b, ca.Userdata...)
	binary.BigEndian.PutUint16(b[18:], uint16(len(ca.Userdata)))
	o.buf = b
	if !ca.Pause {
		c.appendPacketIn(pid, o.buf, ca.MeterID)
		c.out.Controller = true
		return
	}
	o.buf[3] |= ctrlFlagPause
	c.ctrl = ctrlState{pausing: true, meter: ca.MeterID}
	c.exit = true
}

// inPortOF is the packet's OpenFlow input port as the pipeline began it:
// a resubmit's in_port is not the packet's.
func (c *xctx) inPortOF() uint32 {
	if c.inPort != nil {
		return c.inPort.OFPort
	}
	return c.flow.InPort
}

// freezeRest adds the actions left at one level to the continuation; the
// innermost level comes first, which is the order they run in.
// Before an action that depends on the rule it came from, the table and
// cookie of this level are recorded (unless the last record says the same),
// as ovs-vswitchd's freeze_unroll_actions does.
func (c *xctx) freezeRest(rest []openflow.Action) {
	o := &c.out.ctrl
	for i := range rest {
		if needsUnroll(rest[i : i+1]) {
			n := len(o.unrolls)
			if n == 0 || o.unrolls[n-1].TableID != c.table || o.unrolls[n-1].Cookie != c.cookie {
				o.unrolls = append(o.unrolls, openflow.Unroll{At: len(o.frozen), TableID: c.table, Cookie: c.cookie})
			}
		}
		o.frozen = append(o.frozen, rest[i])
	}
}

// freezeInstructions adds what is left of a rule's instructions after its
// apply-actions: clear- and write-actions change the action set at once
// (nothing left in the apply-actions reads it), write-metadata becomes
// loads of metadata after the remaining actions, goto_table a resubmit to
// that table, the last thing the frozen actions do.
func (c *xctx) freezeInstructions(in *openflow.Instructions) {
	if in.Clear {
		c.nActionSet = 0
	}
	for i := range in.Write {
		c.writeAction(in.Write[i])
	}
	if in.WriteMetadata {
		m := in.MetadataMask
		for ofs := uint16(0); ofs < 64; {
			if m>>ofs&1 == 0 {
				ofs++
				continue
			}
			n := uint16(0)
			for ofs+n < 64 && m>>(ofs+n)&1 != 0 {
				n++
			}
			val := in.Metadata >> ofs
			if n < 64 {
				val &= 1<<n - 1
			}
			c.freezeRest([]openflow.Action{{Type: openflow.ActRegLoad, Field: openflow.FieldMetadata, Ofs: ofs, NBits: n, Load: val}})
			ofs += n
		}
	}
	if in.GotoTable {
		c.freezeRest([]openflow.Action{openflow.Resubmit(openflow.PortInPort, in.Table)})
	}
}

// finishPause completes a paused translation: the continuation joins the
// userdata, and the userspace action goes out.
func (c *xctx) finishPause() {
	o := &c.out.ctrl
	cont := openflow.Continuation{ActionSet: c.actionSet[:c.nActionSet], Actions: o.frozen, Unrolls: o.unrolls,
		Conntracked: c.flow.CtState != 0}
	if c.ctrl.recirc {
		c.finishRecircFreeze(&cont) // xlate_mpls.go
		return
	}
	start := len(o.buf)
	b, err := appendContinuationBody(o.buf, &cont)
	if err != nil {
		// An action the continuation cannot carry: the packet stops.
		c.out.Actions = c.out.Actions[:0]
		c.out.Dropped = "cannot freeze: " + err.Error()
		return
	}
	binary.BigEndian.PutUint32(b[20:], uint32(len(b)-start))
	o.buf = b
	pid := c.x.ControllerPID.Load()
	c.appendPacketIn(pid, o.buf, c.ctrl.meter)
	c.out.Controller = true
}

// appendPacketIn appends the userspace action that sends the packet up as
// a packet-in with userdata ud. With a meter (the controller action's
// meter_id when that meter exists, else the controller meter, meter
// "controller", when there is one) it goes through the datapath's meter
// first, inside a sample action of probability 1 so that the meter's drop
// ends only the packet-in: sample(sample=100%,actions(meter(M),
// userspace(...))), as ovs-vswitchd composes it.
func (c *xctx) appendPacketIn(pid uint32, ud []byte, meterID uint32) {
	m := (*Meter)(nil)
	if meterID != openflow.NXCtlrNoMeter {
		m = c.x.Meters.Lookup(meterID)
	}
	if m == nil {
		m = c.x.Meters.Lookup(openflow.MeterController)
	}
	if m == nil {
		c.out.Actions = datapath.AppendUserspace(c.out.Actions, pid, ud)
		return
	}
	c.out.Actions = datapath.AppendMeteredUserspace(c.out.Actions, m.DPID, pid, ud)
}

// appendContinuationBody appends c's NXCPT_* properties but the bridge and
// odp_port (the packet-in adds them) with OpenFlow 1.3 actions.
func appendContinuationBody(b []byte, c *openflow.Continuation) ([]byte, error) {
	start := len(b)
	b, err := openflow.AppendContinuation(b, openflow.Version13, c)
	if err != nil {
		return b, err
	}
	// AppendContinuation writes the bridge first (24 bytes): drop it.
	n := copy(b[start:], b[start+24:])
	return b[:start+n], nil
}

// needsUnroll reports whether any frozen action depends on the table and
// cookie of the rule it came from (an output or controller action, whose
// packet-in names them; dec_ttl; a resubmit to the current table), the
// actions before which ovs-vswitchd records them.
func needsUnroll(acts []openflow.Action) bool {
	for i := range acts {
		a := &acts[i]
		switch a.Type {
		case openflow.ActOutput, openflow.ActEnqueue, openflow.ActGroup, openflow.ActDecNwTTL:
			return true
		case openflow.ActResubmit:
			if a.Table == openflow.TableAll {
				return true
			}
		case openflow.ActVendor:
			if openflow.IsController(a) {
				return true
			}
		}
	}
	return false
}

// pinMetadata fills m with the pipeline metadata a packet-in reports
// (OVS's flow_get_metadata): the tunnel id, metadata, registers and
// pkt_mark when not zero, and always the input port.
func pinMetadata(m *openflow.Match, k *flow.Key, inPort uint32) {
	m.Key.InPort, m.Mask.InPort = inPort, ^uint32(0)
	if k.Tunnel.ID != 0 {
		m.Key.Tunnel.ID, m.Mask.Tunnel.ID = k.Tunnel.ID, ^uint64(0)
	}
	if k.OFMetadata != 0 {
		m.Key.OFMetadata, m.Mask.OFMetadata = k.OFMetadata, ^uint64(0)
	}
	for i, r := range k.Regs {
		if r != 0 {
			m.Key.Regs[i], m.Mask.Regs[i] = r, ^uint32(0)
		}
	}
	if k.Mark != 0 {
		m.Key.Mark, m.Mask.Mark = k.Mark, ^uint32(0)
	}
}

// PacketInExt is what a controller2 userspace action adds to a packet-in.
// Its slices alias the upcall's userdata copy, which the receiver owns.
type PacketInExt struct {
	ControllerID uint16
	Pause        bool
	Metadata     []byte // raw OXM (NXPINT_METADATA)
	Userdata     []byte
	Continuation []byte // NXCPT_* without bridge and odp_port
}

// parsePacketInExt decodes a UserdataController2 userdata (already copied
// by the caller); nil for other userdata or a malformed one.
func parsePacketInExt(ud []byte) *PacketInExt {
	if len(ud) < ctrlHeaderLen || ud[0] != UserdataController2 {
		return nil
	}
	md, us, cl := int(binary.BigEndian.Uint16(ud[16:])), int(binary.BigEndian.Uint16(ud[18:])), int(binary.BigEndian.Uint32(ud[20:]))
	rest := ud[ctrlHeaderLen:]
	if md+us+cl > len(rest) {
		return nil
	}
	return &PacketInExt{ControllerID: binary.BigEndian.Uint16(ud[6:]), Pause: ud[3]&ctrlFlagPause != 0,
		Metadata: rest[:md:md], Userdata: rest[md : md+us : md+us], Continuation: rest[md+us : md+us+cl : md+us+cl]}
}

// checkControllerAction checks, at flow_mod and packet-out time, a Nicira
// action this file translates; ok is false for any other action. It takes
// a copy of the action's body, which aliases the decoded message, so the
// rule keeps it. A controller action's meter need not exist: without it
// the packet-ins go unmetered (or through the controller meter), as in
// ovs-vswitchd.
func checkControllerAction(a *openflow.Action) (ok bool, err error) {
	switch {
	case openflow.IsNote(a):
	case openflow.IsController(a):
		if _, err := openflow.ParseController(a); err != nil {
			return true, errorf(ErrUnsupportedNXAction, "controller action: %v", err)
		}
	default:
		return false, nil
	}
	a.Data = append([]byte(nil), a.Data...)
	return true, nil
}
