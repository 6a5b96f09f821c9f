package ofproto

import (
	"crypto/rand"
	"fmt"
	"time"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Continuations: controller(pause) freezes a translation and sends its
// state up in a packet-in2 (xlate_controller.go); NXT_RESUME gives the
// packet and that state back, and translation goes on from after the
// controller action. The continuation is opaque to the controller and
// carries everything: the remaining actions and action set, the table and
// cookie they ran under, and the bridge it came from (a UUID drawn when the
// connection manager starts, so that one from another bridge or an earlier
// run is refused as stale, NXR_STALE, as ovs-vswitchd refuses it). A forged
// continuation gets an error: its actions are decoded and checked as a
// packet-out's are, and nothing in it is trusted beyond that.

// newBridgeUUID draws the bridge's continuation UUID.
func newBridgeUUID() [16]byte {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		// crypto/rand does not fail on Linux; a fixed value would only
		// make stale continuations harder to tell apart.
		u[0] = 1
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80
	return u
}

// continuation builds the NXPINT_CONTINUATION content of a paused
// packet-in for a connection of version v: the frozen state (encoded with
// OpenFlow 1.3 actions by xlate) with the bridge and the datapath input
// port added, re-encoded in v.
func (m *ConnManager) continuation(v uint8, pin *PacketIn) ([]byte, error) {
	c, err := openflow.DecodeContinuation(openflow.Version13, pin.Ext.Continuation)
	if err != nil {
		return nil, fmt.Errorf("frozen state: %w", err)
	}
	c.Bridge = m.contUUID
	c.OdpPort = pin.Key.InPort
	return openflow.AppendContinuation(nil, v, c)
}

// nxrStale is OFPERR_NXR_STALE in version v.
func nxrStale(v uint8) *openflow.Error {
	if v == openflow.Version10 {
		return &openflow.Error{Version: v, Type: openflow.ErrTypeBadRequest, Code: 534}
	}
	return &openflow.Error{Version: v, Type: openflow.Err13TypeExperimenter, Code: 35, Experimenter: openflow.NXVendorID}
}

// resume handles NXT_RESUME.
func (c *Conn) resume(raw []byte, m *openflow.PacketIn2) error {
	if slave, err := c.isSlave(raw); slave {
		return err
	}
	v := c.Version()
	cont, err := openflow.DecodeContinuation(v, m.Continuation)
	if err != nil {
		c.log.Info("NXT_RESUME with a bad continuation", "err", err)
		if oe, ok := err.(*openflow.Error); ok {
			return c.queueMsg(oe.Reply(raw))
		}
		return c.sendError(raw, openflow.ErrTypeBadRequest, openflow.BadRequestBadLen)
	}
	if cont.Bridge != c.m.contUUID || len(cont.Stack) > 0 || cont.Mirrors != 0 {
		// Not from this bridge in this run: this switch writes no stack
		// or mirrors into its continuations.
		c.log.Info("NXT_RESUME with a stale continuation")
		return c.queueMsg(nxrStale(v).Reply(raw))
	}
	for _, list := range [][]openflow.Action{cont.Actions, cont.ActionSet} {
		if err := checkSupported(list); err != nil {
			typ, code := flowModError(v, err)
			c.logRefusal("resume", err)
			return c.sendError(raw, typ, code)
		}
	}
	in := m.Metadata.Key.InPort
	if m.Metadata.Mask.InPort == 0 {
		in = openflow.PortController
	}
	if err := c.m.b.Resume(m.Packet, in, &m.Metadata, cont); err != nil {
		c.log.Info("resume failed", "err", err)
		return c.sendError(raw, openflow.ErrTypeBadAction, openflow.BadActionBadArgument)
	}
	return nil
}

// Resume continues a paused translation for packet, which entered on
// OpenFlow port inPort with the pipeline metadata md (registers,
// metadata, tunnel id, pkt_mark), and executes what it yields.
func (b *Bridge) Resume(packet []byte, inPort uint32, md *openflow.Match, cont *openflow.Continuation) error {
	var meta flow.Metadata
	if p := b.Ports.Snapshot().ByOF(inPort); p != nil {
		meta.InPort = p.DPPort
	}
	meta.Tunnel.ID = md.Key.Tunnel.ID & md.Mask.Tunnel.ID
	meta.Mark = md.Key.Mark & md.Mask.Mark
	key := flow.Extract(packet, meta)
	flow.ExtractNDExt(&key, packet, nil) // for rules on nd_reserved, nd_options_type
	key.OFMetadata = md.Key.OFMetadata & md.Mask.OFMetadata
	for i := range key.Regs {
		key.Regs[i] = md.Key.Regs[i] & md.Mask.Regs[i]
	}
	if cont.Conntracked {
		// Paused after a ct action: the tables go on seeing the
		// connection the packet-in reported (pinCtMetadata), as
		// ovs-vswitchd's resume takes it from the metadata.
		resumeCtMetadata(&key, md)
	}
	var out Out
	now := time.Now()
	// The tables see the tun_metadata fields too; the datapath executes
	// the packet without them (its key has no tunnel then).
	xkey := key
	resumeTunMetadata(&xkey, md) // tun_metadata.go
	b.X.TranslateResume(&xkey, inPort, cont, now, &out)
	applyLearns(&out, now)
	out.applyFinTimeouts(xkey.TCPFlags) // xlate_fintimeout.go
	if out.Dropped != "" {
		return fmt.Errorf("resume: %s", out.Dropped)
	}
	if len(out.Actions) == 0 {
		return nil
	}
	return executeWithHelp(b.DP, packet, &key, &out) // upcall_slow.go
}

// TranslateResume translates a continuation: its action set written
// first, its actions run as if in the tables and under the cookies its
// unrolls name, then the action set at the end of the pipeline. key's InPort is in
// datapath numbering; ofInPort is the packet's OpenFlow input port.
func (x *Xlator) TranslateResume(key *flow.Key, ofInPort uint32, cont *openflow.Continuation, now time.Time, out *Out) {
	out.reset()
	out.TablesVersion = x.Tables.Version()
	out.MACVersion = x.macVersion()
	c := &out.ctx
	c.xstate = xstate{x: x, view: x.Tables.View(), ports: x.Ports.Snapshot(), out: out, now: now, learn: true, flow: *key, base: *key}
	c.inPort = c.ports.ByOF(ofInPort)
	c.flow.InPort = ofInPort
	c.runContinuation(cont)
	if !c.exit {
		c.runActionSet()
	}
	if c.ctrl.pausing {
		c.finishPause()
	}
}

// runContinuation writes a continuation's action set and runs its
// actions as if in the tables and under the cookies its unrolls name,
// for an NXT_RESUME or a packet back from a recirculation frozen as one.
func (c *xctx) runContinuation(cont *openflow.Continuation) {
	for _, a := range cont.ActionSet {
		c.writeAction(a)
	}
	// Each run of actions runs as part of the rule its unroll names.
	from := 0
	for i := 0; i <= len(cont.Unrolls) && !c.exit; i++ {
		to := len(cont.Actions)
		if i < len(cont.Unrolls) {
			to = min(max(cont.Unrolls[i].At, from), to)
		}
		c.doActions(cont.Actions[from:to])
		if c.ctrl.pausing {
			c.freezeRest(cont.Actions[to:])
			break
		}
		if i < len(cont.Unrolls) {
			c.table, c.cookie = cont.Unrolls[i].TableID, cont.Unrolls[i].Cookie
		}
		from = to
	}
}

// resumeCtMetadata copies into key the conntrack fields of a resumed
// packet's metadata md: ct_state, ct_zone, ct_mark, ct_label and the
// original-direction tuple, each as far as md's mask has it.
func resumeCtMetadata(key *flow.Key, md *openflow.Match) {
	k, m := &md.Key, &md.Mask
	key.CtState = k.CtState & m.CtState
	key.CtZone = k.CtZone & m.CtZone
	key.CtMark = k.CtMark & m.CtMark
	for i := range key.CtLabels {
		key.CtLabels[i] = k.CtLabels[i] & m.CtLabels[i]
	}
	o, ko, mo := &key.CtOrig, &k.CtOrig, &m.CtOrig
	for i := range o.IPv4Src {
		o.IPv4Src[i] = ko.IPv4Src[i] & mo.IPv4Src[i]
		o.IPv4Dst[i] = ko.IPv4Dst[i] & mo.IPv4Dst[i]
	}
	for i := range o.IPv6Src {
		o.IPv6Src[i] = ko.IPv6Src[i] & mo.IPv6Src[i]
		o.IPv6Dst[i] = ko.IPv6Dst[i] & mo.IPv6Dst[i]
	}
	o.Proto, o.TpSrc, o.TpDst = ko.Proto&mo.Proto, ko.TpSrc&mo.TpSrc, ko.TpDst&mo.TpDst
}
