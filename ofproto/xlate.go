package ofproto

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/maclearn"
	"github.com/govswitch/govswitch/ofproto/mcast"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Translation limits, as OVS's: resubmit recursion depth, and resubmits in
// all. Past them the packet is dropped.
const (
	MaxResubmitDepth = 64
	MaxResubmits     = 4096
	// MaxXlateRules is how many rules one translation remembers for stats
	// crediting; more are still applied, and the last slot is reused.
	MaxXlateRules = 16
	maxActionSet  = 16
)

// Userdata of the userspace actions xlate emits, so the upcall that comes
// back says what to do with the packet. Layout (16 bytes, a multiple of 4
// as the kernel pads userdata):
//
//	[0]    UserdataController
//	[1]    reason: ReasonNoMatch or ReasonAction
//	[2]    table id
//	[3]    flags: ctrlFlagConntracked (packetin_ct.go)
//	[4:6]  max_len (big-endian)
//	[6:8]  the bridge's number on its datapath (Xlator.ID, big-endian)
//	[8:16] cookie of the rule (big-endian), ^0 for a table miss
const (
	UserdataController = 1
	UserdataLen        = 16

	ReasonNoMatch    uint8 = 0
	ReasonAction     uint8 = 1
	ReasonInvalidTTL uint8 = 2
)

// ControllerUserdata is a decoded controller userdata.
type ControllerUserdata struct {
	Reason uint8
	Table  uint8
	MaxLen uint16
	Bridge uint16 // Xlator.ID of the bridge whose actions sent it
	Cookie uint64
	// Conntracked says the packet-in reports the upcall key's conntrack
	// fields (packetin_ct.go).
	Conntracked bool
}

// ParseControllerUserdata decodes userdata written by xlate's controller
// output. ok is false for anything else.
func ParseControllerUserdata(b []byte) (u ControllerUserdata, ok bool) {
	if len(b) < UserdataLen || b[0] != UserdataController && b[0] != UserdataController2 {
		return u, false
	}
	u = ControllerUserdata{Reason: b[1], Table: b[2], MaxLen: binary.BigEndian.Uint16(b[4:]),
		Bridge: binary.BigEndian.Uint16(b[6:]), Cookie: binary.BigEndian.Uint64(b[8:]), Conntracked: b[3]&ctrlFlagConntracked != 0}
	if b[0] == UserdataController2 {
		// [6:8] is the controller id there; the bridge is at [24:26]
		// (xlate_controller.go).
		if len(b) < ctrlHeaderLen {
			return u, false
		}
		u.Bridge = binary.BigEndian.Uint16(b[24:])
	}
	return u, true
}

// Xlator translates packets through the OpenFlow tables into datapath
// actions. It is safe for concurrent use: handlers and revalidators share
// one.
type Xlator struct {
	Tables *Tables
	Ports  *Ports
	MAC    *maclearn.Table
	// Groups and Meters are what group actions and meters refer to (nil:
	// none).
	Groups *Groups
	Meters *Meters

	// ControllerPID is the netlink port id that userspace actions (packets
	// for the controller) are sent to; 0 means no controller path, and
	// CONTROLLER outputs and table misses to the controller become drops.
	ControllerPID atomic.Uint32
	// MissToController makes a table miss send the packet to the
	// controller (OpenFlow 1.0 behaviour). Otherwise a miss drops.
	MissToController atomic.Bool

	// ID numbers the bridge among its datapath's (controller userdata
	// carries it, so the packet-in goes to the bridge whose actions sent
	// it); bridge and backer are the bridge and its datapath, nil for a
	// bare Xlator.
	ID     uint16
	bridge *Bridge
	backer *Backer
	// sflow is the bridge's sFlow sampling, nil without (xlate_sample.go);
	// netflow its NetFlow (netflow_bridge.go).
	sflow   atomic.Pointer[sflowState]
	netflow atomic.Pointer[netflowState]
	// ipfix is the bridge's IPFIX, nil without (ipfix_bridge.go).
	ipfix atomic.Pointer[ipfixState]
	// stp is the bridge's spanning tree, nil without (stp_bridge.go).
	stp atomic.Pointer[stpBridge]
	// rstp is its rapid spanning tree, nil without (rstp_bridge.go).
	rstp atomic.Pointer[rstpBridge]
	// mcast is the bridge's multicast snooping table, nil when snooping
	// is off (xlate_mcast.go, mcast_bridge.go).
	mcast atomic.Pointer[mcast.Table]
}

// Out is the result of one translation. The caller owns it and reuses it
// from packet to packet; Translate resets everything but the capacity of
// Actions.
type Out struct {
	// Actions are the datapath actions (OVS_ACTION_ATTR_*), appended to
	// Actions[:0]. Empty means drop.
	Actions []byte
	// WC is the megaflow mask: every key bit the translation depended on.
	WC flow.Mask
	// Rules are the OpenFlow rules the packet matched, for crediting
	// stats; NRules of them are valid.
	Rules  [MaxXlateRules]*Rule
	NRules int
	// RuleBridges[i] is the Xlator.ID of the bridge whose table Rules[i]
	// is in (a patch port takes translation into another bridge).
	RuleBridges [MaxXlateRules]uint16
	// Controller is set when the actions send the packet to the
	// controller (such flows are still cacheable).
	Controller bool
	// TablesVersion and MACVersion are the versions of the tables and of
	// the MAC table that the translation read. A revalidator whose
	// versions still match knows the translation still holds.
	TablesVersion uint64
	MACVersion    uint64
	// Learned is set when NORMAL learned or moved an address.
	Learned bool
	// Dropped says why a translation ended in a drop it did not choose:
	// "" normally.
	Dropped string

	// ctx is the translation's working state. It lives here, in memory
	// the caller owns and reuses, so a translation allocates nothing even
	// where the compiler cannot keep it on the stack.
	ctx xctx
	// ctrl holds the controller actions' userdata (xlate_controller.go).
	ctrl ctrlOut
	// netflow is set when the bridge runs NetFlow (netflow_bridge.go);
	// nfFlood when the translation flooded (NetFlow's output 65535).
	netflow, nfFlood bool
	// HasLearn is set when the translation ran a learn action; learns
	// are the flows it learned, for applyLearns (xlate_learn.go).
	HasLearn bool
	learns   []learnReq
	// fins are the fin_timeout actions the translation ran, nFins of
	// them (xlate_fintimeout.go).
	fins  [maxFinTimeouts]finReq
	nFins int
	// lacp is set when the packet is a LACPDU for this bond's member
	// lacpPort: the handler gives it to the LACP machine and does not
	// execute it (lacp_bond.go).
	lacp     *Bond
	lacpPort string
	// acct is the balanced bond and bucket the output hashed into
	// (bond_rebalance.go), nil bond when none.
	acct bondAcct

	// Slow holds the slow-path reasons (datapath.SlowAction, ...): the
	// actions do what the kernel datapath cannot, so the flow installed
	// sends its packets to userspace and each packet's Actions run
	// there (xlate_slow.go, upcall_slow.go). slowActs is that flow's
	// userspace action.
	Slow     uint32
	slowActs []byte
	slowOff  uint32 // the turned-off features that made it slow (backer_features.go)

	// mcastPorts is NORMAL's multicast port list (xlate_mcast.go),
	// kept for its capacity.
	mcastPorts []uint32

	// trace is set by ofproto/trace only (trace_log.go); reset leaves
	// it, so a trace sets it before it translates.
	trace *traceLog
}

func (o *Out) reset() {
	o.Actions = o.Actions[:0]
	o.WC = flow.Mask{}
	o.Rules = [MaxXlateRules]*Rule{}
	o.NRules = 0
	o.Controller = false
	o.Learned = false
	o.Dropped = ""
	o.netflow, o.nfFlood = false, false
	o.ctrl.reset()
	o.HasLearn = false
	o.learns = o.learns[:0]
	clear(o.fins[:o.nFins])
	o.nFins = 0
	o.lacp, o.lacpPort = nil, ""
	o.acct = bondAcct{}
	o.Slow = 0
	o.slowActs = o.slowActs[:0]
	o.slowOff = 0
}

// xctx is the state of one translation: xstate, which every translation
// starts from zero, and the action set, whose live part is
// actionSet[:nActionSet], kept out of the zeroing because it is two
// thirds of the whole and most translations never write it.
type xctx struct {
	xstate
	actionSet [maxActionSet]openflow.Action
}

// xstate is the part of a translation's state that starts from zero.
type xstate struct {
	view  *View // the tables as of the translation's start: goto_table and resubmit see one version
	x     *Xlator
	ports *PortSet
	out   *Out
	now   time.Time
	learn bool

	// flow is the packet as the actions so far have modified it, with
	// InPort in OpenFlow numbering; base is the packet as the datapath
	// actions emitted so far leave it.
	flow, base flow.Key
	inPort     *Port

	depth, resubmits int
	fwd              int // forward resubmits within depth (deep)
	nActionSet       int
	table            uint8
	cookie           uint64
	rule             *Rule // the rule whose actions run, nil for a packet-out's own (fin_timeout's)
	exit             bool
	packetOut        bool      // translating a packet-out: OFPP_TABLE is allowed
	ctrl             ctrlState // controller(pause) (xlate_controller.go)
	// groupFreezeOK says the group action about to run may freeze the
	// translation for a dp_hash (xlate_group.go): it is in a rule's own
	// apply-actions at depth 0. hashFreeze is the hash such a group
	// asked for, the freeze to make from its action on.
	groupFreezeOK bool
	hashFreeze    *groupHash
	mirrored      uint32     // mirrors the packet went to (xlate_mirror.go)
	mirrorSnaplen uint32     // while a mirror's copy is output: its snaplen, 0 none
	mirrorVID     uint16     // the arriving VID, 0x8000 set once known (xlate_mirror.go)
	stack         xlateStack // push and pop (xlate_stack.go)
	// scratch holds field values that load, move, push and pop read and
	// write: a local array would escape through Field.Value and cost
	// an allocation per action.
	scratch [2][16]byte
	wasMPLS bool       // popped to an L3 header the datapath has not parsed (xlate_mpls.go)
	encap   encapState // packet types (xlate_encap.go)
	// packet is the packet being translated, when the caller has it
	// (TranslatePacket); nil otherwise. Multicast snooping reads IGMP
	// and MLD from it (xlate_mcast.go).
	packet []byte
}

// macVersion is the MAC table's version, 0 when there is no MAC table.
// It is one atomic load: handlers call it per batch.
func (x *Xlator) macVersion() uint64 {
	v := uint64(0)
	if x.MAC != nil {
		v = x.MAC.Version()
	}
	// The snooping table's changes count as the MAC table's: both alter
	// NORMAL's outputs. Both versions only grow, so their sum changes
	// whenever either does.
	if ms := x.mcast.Load(); ms != nil {
		v += ms.Version()
	}
	return v
}

// Translate runs key (InPort in datapath numbering) through the tables
// and writes the datapath actions and megaflow mask to out. learn says
// whether NORMAL may update the MAC table (true on the miss path). It does
// not allocate once out.Actions has grown to its working size.
func (x *Xlator) Translate(key *flow.Key, now time.Time, learn bool, out *Out) {
	x.TranslatePacket(key, nil, now, learn, out)
}

// TranslatePacket is Translate for a packet whose bytes the caller has
// (the miss and slow paths): NORMAL's multicast snooping learns from the
// IGMP and MLD messages in it. packet is read during the call only.
func (x *Xlator) TranslatePacket(key *flow.Key, packet []byte, now time.Time, learn bool, out *Out) {
	if vlanLimit.Load() != 0 && key.VLANs[len(key.VLANs)-1].TCI&flow.VLANPresent != 0 {
		x.limitedTranslate(key, now, learn, out) // vlan_qinq.go
		return
	}
	out.reset()
	out.TablesVersion = x.Tables.Version()
	out.MACVersion = x.macVersion()
	c := &out.ctx
	c.xstate = xstate{x: x, view: x.Tables.View(), ports: x.Ports.Snapshot(), out: out, now: now, learn: learn, flow: *key, base: *key, packet: packet}
	// Some fields are always part of the megaflow, as in OVS: the input
	// port (every decision below can depend on it), the ethertype (the
	// datapath rejects a key whose ethertype is wildcarded to zero, and
	// set actions depend on it) and, for IP, the fragment bits.
	out.WC.InPort = ^uint32(0)
	out.WC.RecircID = ^uint32(0)
	out.WC.EthType = 0xffff
	if key.EthType == flow.EthTypeIPv4 || key.EthType == flow.EthTypeIPv6 {
		out.WC.NwFrag = flow.FragAny | flow.FragLater
	}
	c.inPort = c.ports.ByDP(key.InPort)
	if c.inPort == nil {
		c.inPort = c.tunnelInPort(key) // xlate_tunnel.go
	}
	if c.inPort == nil {
		out.Dropped = "unknown input port"
		return
	}
	if key.Tunnel.Flags&flow.TunnelUDPIF != 0 {
		defer c.tunMDMask(key) // tun_metadata.go
		if !c.tunMDFromDatapath() {
			return
		}
	}
	c.flow.InPort = c.inPort.OFPort
	if key.L3 {
		c.l3Input() // xlate_encap.go
	}
	if isLACPFrame(key, c.inPort) {
		c.lacpSlowPath(c.inPort) // lacp_bond.go, as OVS's process_special
		return
	}
	sflowAt := -1
	if key.RecircID == 0 {
		if (x.stp.Load() != nil || x.rstp.Load() != nil) && c.stpSpecial() {
			return // a BPDU, for the spanning tree (xlate_stp.go)
		}
		if c.inPort.NoRecv || !stpReceives(c.inPort) {
			return // OFPPC_NO_RECV or STP: dropped before the tables, as OVS's may_receive
		}
		if c.ports.mirrors != nil {
			c.mirrorIngress() // xlate_mirror.go
		}
		sflowAt = c.sflowBegin()
		n := len(out.Actions)
		c.ipfixInput() // ipfix_bridge.go
		c.pipeline(0)
		if !stpForwards(c.inPort) {
			out.Actions, out.Controller, c.exit = out.Actions[:n], false, true // learning: NORMAL learned, nothing leaves
		}
	} else if !c.resume(key) { // a packet back from ct(table=T): xlate_ct.go
		return
	}
	if !c.exit {
		c.runActionSet()
	}
	if c.ctrl.pausing {
		c.finishPause()
	}
	if sflowAt >= 0 {
		c.sflowFix(sflowAt)
	}
	if x.netflow.Load() != nil {
		c.netflowMask(key)
	}
	if out.Slow != 0 {
		c.composeSlowPath() // xlate_slow.go
	}
}

// TranslateActions translates an explicit action list, a packet-out's, for
// a packet with key whose input port is the OpenFlow port ofInPort (which
// may be a reserved port such as openflow.PortController or PortAny: then
// nothing is excluded from flooding and IN_PORT outputs nowhere). An
// output to openflow.PortTable runs the packet through the tables.
func (x *Xlator) TranslateActions(key *flow.Key, ofInPort uint32, acts []openflow.Action, now time.Time, out *Out) {
	out.reset()
	out.TablesVersion = x.Tables.Version()
	c := &out.ctx
	c.xstate = xstate{x: x, view: x.Tables.View(), ports: x.Ports.Snapshot(), out: out, now: now, learn: true, flow: *key, base: *key}
	if limitVLANs(&c.flow) { // the VLAN limit, as flow_extract applies it (vlan_qinq.go)
		c.base = c.flow
	}
	c.inPort = c.ports.ByOF(ofInPort)
	c.flow.InPort = ofInPort
	c.packetOut = true
	c.cookie = ^uint64(0) // no rule: a packet-in from here has no cookie, as ovs-vswitchd's
	c.doActions(acts)
	if c.ctrl.pausing {
		c.finishPause()
	}
}

// pipeline looks the flow up in table id and runs the instructions found,
// following goto_table.
func (c *xctx) pipeline(id uint8) {
	for !c.exit {
		c.table = id
		r := c.view.Lookup(id, &c.flow, &c.out.WC)
		if r == nil {
			c.miss(id)
			return
		}
		next, ok := c.runRule(r)
		if !ok {
			return
		}
		id = next
	}
}

// runRule carries out rule r's instructions and returns the table its
// goto_table names, ok false when it has none.
func (c *xctx) runRule(r *Rule) (next uint8, ok bool) {
	c.note(r)
	c.cookie, c.rule = r.Value.Cookie, r
	in := &r.Value.Instructions
	if in.Meter != 0 {
		c.meter(in.Meter)
	}
	whole := c.doActionsIn(in.Apply, in)
	if c.ctrl.pausing {
		c.freezeInstructions(in)
		return 0, false
	}
	if !whole {
		return 0, false // check_pkt_larger ran the rest (xlate_clone.go)
	}
	if in.Clear {
		c.nActionSet = 0
	}
	for i := range in.Write {
		c.writeAction(in.Write[i])
	}
	if in.WriteMetadata {
		c.flow.OFMetadata = c.flow.OFMetadata&^in.MetadataMask | in.Metadata&in.MetadataMask
	}
	return in.Table, in.GotoTable
}

func (c *xctx) note(r *Rule) {
	o := c.out
	if o.NRules < MaxXlateRules {
		o.Rules[o.NRules] = r
		o.RuleBridges[o.NRules] = c.x.ID
		o.NRules++
	} else {
		o.Rules[MaxXlateRules-1] = r
		o.RuleBridges[MaxXlateRules-1] = c.x.ID
	}
}

func (c *xctx) miss(table uint8) {
	if c.x.MissToController.Load() && (c.inPort == nil || !c.inPort.NoPacketIn) {
		c.controller(ReasonNoMatch, table, 0xffff, ^uint64(0))
	}
}

// writeAction adds a to the action set, which holds one action of each
// kind (a later write of the same kind replaces an earlier one).
func (c *xctx) writeAction(a openflow.Action) {
	for i := 0; i < c.nActionSet; i++ {
		if c.actionSet[i].Type == a.Type && (a.Type != openflow.ActSetField || c.actionSet[i].Field == a.Field) {
			c.actionSet[i] = a
			return
		}
	}
	if c.nActionSet < maxActionSet {
		c.actionSet[c.nActionSet] = a
		c.nActionSet++
	}
}

// runActionSet runs the action set at the end of the pipeline: every
// action but output in the order written, then output.
func (c *xctx) runActionSet() {
	var output *openflow.Action
	for i := 0; i < c.nActionSet; i++ {
		a := &c.actionSet[i]
		if a.Type == openflow.ActOutput {
			output = a
			continue
		}
		c.doAction(a)
	}
	if output != nil {
		c.doAction(output)
	}
}

func (c *xctx) doActions(list []openflow.Action) { c.doActionsIn(list, nil) }

// doActionsIn runs list, the apply-actions of in when in is not nil. It
// returns false when a check_pkt_larger took over the rest of the list
// (and of in): xlate_clone.go.
func (c *xctx) doActionsIn(list []openflow.Action, in *openflow.Instructions) bool {
	for i := range list {
		if c.exit {
			return true
		}
		if c.encap.freezeNext || c.wasMPLS && mplsNeedsRecirc(&list[i]) {
			c.mplsFreeze(list[i:], in)
			return false
		}
		if list[i].Type == openflow.ActCheckPktLarger {
			c.checkPktLarger(&list[i], list[i+1:], in)
			return false
		}
		c.groupFreezeOK = in != nil && c.depth == 0 && list[i].Type == openflow.ActGroup && len(list) <= len(in.Apply)
		if c.out.trace != nil && c.out.trace.actions && c.depth == 0 {
			c.trace(traceAction, "%s", ActionString(&list[i]))
		}
		c.doAction(&list[i])
		if c.hashFreeze != nil {
			// A select group asked for the datapath's hash: freeze from
			// the group action on, which runs again with it.
			c.recircFreeze(list[i:], in, c.hashFreeze) // xlate_mpls.go
			return false
		}
		if c.ctrl.pausing {
			c.freezeRest(list[i+1:])
			return true
		}
	}
	if c.encap.freezeNext && !c.exit || c.wasMPLS && in != nil && !c.exit && (in.Clear || in.Write != nil || in.WriteMetadata || in.GotoTable) {
		c.mplsFreeze(list[len(list):], in)
		return false
	}
	return true
}

func (c *xctx) doAction(a *openflow.Action) {
	switch a.Type {
	case openflow.ActOutput:
		c.output(a.Port, a.MaxLen)
	case openflow.ActEnqueue:
		// The queue as skb priority for this output only, as OVS's
		// xlate_enqueue_action; an enqueue to the input port does
		// nothing.
		p, ok := queuePriority(a.Queue)
		if !ok {
			c.output(a.Port, a.MaxLen)
			break
		}
		if a.Port != openflow.PortInPort && a.Port == c.flow.InPort {
			break
		}
		saved := c.flow.Priority
		c.flow.Priority = p
		c.output(a.Port, a.MaxLen)
		c.flow.Priority = saved
	case openflow.ActSetField:
		a.ApplySetFieldScratch(&c.flow, &c.scratch[0])
		c.unwildcardSetField(a) // xlate_setfield.go
	case openflow.ActRegLoad:
		c.regLoad(a)
		c.unwildcardDst(a.Field, a.Ofs, a.NBits)
	case openflow.ActRegMove:
		c.regMove(a)
		c.unwildcardDst(a.Field, a.Ofs, a.NBits)
	case openflow.ActStackPush, openflow.ActStackPop:
		c.stackOp(a)
	case openflow.ActSetVLANVID:
		c.flow.VLANs[0].TCI = c.flow.VLANs[0].TCI&^flow.VLANVIDMask | a.VLANVID&flow.VLANVIDMask | flow.VLANPresent
		if c.flow.VLANs[0].TPID == 0 {
			c.flow.VLANs[0].TPID = flow.EthTypeVLAN
		}
		c.out.WC.VLANs[0].TCI |= flow.VLANPresent
	case openflow.ActSetVLANPCP:
		c.flow.VLANs[0].TCI = c.flow.VLANs[0].TCI&^flow.VLANPCPMask | uint16(a.VLANPCP&7)<<13 | flow.VLANPresent
		if c.flow.VLANs[0].TPID == 0 {
			c.flow.VLANs[0].TPID = flow.EthTypeVLAN
		}
		c.out.WC.VLANs[0].TCI |= flow.VLANPresent
	case openflow.ActStripVLAN:
		c.out.WC.VLANs[0].TCI |= flow.VLANPresent
		c.flow.VLANs[0] = c.flow.VLANs[1]
		c.flow.VLANs[1] = flow.VLAN{}
	case openflow.ActPushVLAN:
		c.out.WC.VLANs[0].TCI |= flow.VLANPresent
		c.flow.VLANs[1] = c.flow.VLANs[0]
		c.flow.VLANs[0] = flow.VLAN{TPID: a.EthType, TCI: flow.VLANPresent}
	case openflow.ActResubmit:
		c.resubmit(a)
	case openflow.ActGroup:
		c.group(a.Group)
	case openflow.ActMeter:
		c.meter(a.Queue)
	case openflow.ActDecNwTTL:
		c.decTTL(a)
	case openflow.ActSetNwTTL:
		c.flow.NwTTL = a.TTL
	case openflow.ActCT:
		c.ct(a)
	case openflow.ActCTClear:
		c.ctClear()
	case openflow.ActLearn:
		c.learnAction(a.Learn)
	case openflow.ActOutputReg:
		c.outputReg(a)
	case openflow.ActFinTimeout:
		c.finTimeout(a) // xlate_fintimeout.go
	case openflow.ActDeleteField:
		c.deleteTunMD(a.Field) // tun_metadata.go
	case openflow.ActExit:
		c.exit = true // a group bucket's ends only the bucket (xlate_group.go)
	case openflow.ActConj:
		// A conjunction flow is a clause, not a flow that runs; reached
		// only from a packet-out, it does nothing (as in OVS).
	case openflow.ActVendor:
		c.vendorAction(a)
	case openflow.ActClone:
		c.clone(a)
	case openflow.ActPushMPLS, openflow.ActPopMPLS, openflow.ActSetMPLSLabel, openflow.ActSetMPLSTC,
		openflow.ActSetMPLSTTL, openflow.ActDecMPLSTTL:
		c.mplsAction(a)
	case openflow.ActEncap:
		c.doEncap(a)
	case openflow.ActDecap:
		c.doDecap(a)
	case openflow.ActOutputTrunc:
		c.outputTrunc(a)
	case openflow.ActSample:
		c.flowSample(a) // xlate_flowsample.go
	case openflow.ActMultipath:
		c.multipath(a) // xlate_multipath.go
	case openflow.ActBundle:
		c.bundle(a) // xlate_bundle.go
	case openflow.ActCheckPktLarger:
		c.checkPktLarger(a, nil, nil)
	case openflow.ActSetQueue:
		// The queue becomes the packet's skb priority, which the
		// port's linux-htb QoS maps to class 1:N+1 (qos.go in
		// vswitchd); outputs after this carry it, as in OVS.
		if p, ok := queuePriority(a.Queue); ok {
			c.flow.Priority = p
		}
	default:
		// Flow mods and packet-outs with actions we do not translate
		// (MPLS, vendor actions) are refused (checkSupported);
		// should one reach here anyway, the translation ends in a
		// drop rather than half-apply.
		c.out.Actions = c.out.Actions[:0]
		c.out.Dropped = "unsupported action " + a.Type.String()
		c.exit = true
	}
}

func (c *xctx) regLoad(a *openflow.Action) {
	n := a.Field.Size()
	if n == 0 || int(a.Ofs)+int(a.NBits) > n*8 || a.NBits == 0 || a.NBits > 64 {
		return
	}
	v, ok := a.Field.Value(c.scratch[0][:0], &c.flow)
	if !ok {
		return
	}
	// Bit p of the field (0 the least significant) is bit p%8 of byte
	// n-1-p/8 of its big-endian value.
	for i := uint16(0); i < a.NBits; i++ {
		p := int(a.Ofs + i)
		bit := byte(1) << (p % 8)
		if a.Load>>i&1 != 0 {
			v[n-1-p/8] |= bit
		} else {
			v[n-1-p/8] &^= bit
		}
	}
	a.Field.SetValue(&c.flow, v)
}

// regMove copies NBits from a.Src at SrcOfs to a.Field at Ofs. The
// translation now depends on the source's value: its whole field joins
// the megaflow, a tun_metadata field's only the bits read (registers and
// metadata are no datapath fields and drop out of the datapath mask).
func (c *xctx) regMove(a *openflow.Action) {
	sn, dn := a.Src.Size(), a.Field.Size()
	if sn == 0 || dn == 0 || a.NBits == 0 || int(a.SrcOfs)+int(a.NBits) > 8*sn || int(a.Ofs)+int(a.NBits) > 8*dn {
		return
	}
	if a.Src.IsTunMetadata() {
		// Only the bits read, as ovs-vswitchd's mf_subfield_copy: OVN
		// reads a tunnel option's logical ports as two bit ranges, and
		// its megaflows leave the option's other bits wildcarded.
		c.unwildcardBits(a.Src, a.SrcOfs, a.NBits)
	} else {
		cover := a.Src.Cover()
		c.out.WC.Or(&cover)
	}
	src, ok1 := a.Src.Value(c.scratch[0][:0], &c.flow)
	dst, ok2 := a.Field.Value(c.scratch[1][:0], &c.flow)
	if !ok1 || !ok2 {
		return
	}
	for i := 0; i < int(a.NBits); i++ {
		sp, dp := int(a.SrcOfs)+i, int(a.Ofs)+i
		bit := byte(1) << (dp % 8)
		if src[sn-1-sp/8]>>(sp%8)&1 != 0 {
			dst[dn-1-dp/8] |= bit
		} else {
			dst[dn-1-dp/8] &^= bit
		}
	}
	a.Field.SetValue(&c.flow, dst)
}

func (c *xctx) decTTL(a *openflow.Action) {
	switch c.flow.EthType {
	case flow.EthTypeIPv4, flow.EthTypeIPv6:
		c.out.WC.EthType = 0xffff
		c.out.WC.NwTTL = 0xff
		if c.flow.NwTTL <= 1 {
			// TTL expired: as OVS, the packet goes no further but to
			// the controllers that asked for invalid_ttl packet-ins
			// (the connection's async config filters the reason);
			// dec_ttl(ids) names the controller ids (xlate_decttl.go).
			c.invalidTTL(a)
			c.out.Dropped = "ttl expired"
			c.exit = true
			return
		}
		c.flow.NwTTL--
	}
}

func (c *xctx) resubmit(a *openflow.Action) {
	if c.deep() >= MaxResubmitDepth || c.resubmits >= MaxResubmits {
		c.out.Actions = c.out.Actions[:0]
		c.out.Dropped = "resubmit limit exceeded"
		c.exit = true
		return
	}
	table := a.Table
	if table == openflow.TableAll {
		table = c.table
	}
	// Only a resubmit to this table or an earlier one deepens the
	// translation against MaxResubmitDepth (deep), as in OVS's
	// xlate_table_action: a pipeline that only moves forward (OVN's,
	// through a chain of a hundred tables and more across logical
	// datapaths) is bounded by MaxResubmits alone. depth still counts
	// every level, for what needs to know it is inside a resubmit.
	forward := table > c.table
	if forward {
		c.fwd++
	}
	c.depth++
	c.resubmits++
	saveIn, saveTable, saveCookie, saveRule := c.flow.InPort, c.table, c.cookie, c.rule
	if a.Port != openflow.PortInPort {
		c.flow.InPort = a.Port
	}
	// The rule found runs whole, goto_table and write-actions included,
	// as ovs-vswitchd runs it; a miss (in the first table or one gone to)
	// does nothing.
	first := true
	for !c.exit && int(table) < NumTables {
		var r *Rule
		if first && a.CtOrig {
			r = c.lookupCtOrig(table) // xlate_ct.go
		} else {
			r = c.view.Lookup(table, &c.flow, &c.out.WC)
		}
		first = false
		if r == nil {
			break
		}
		c.table = table
		next, ok := c.runRule(r)
		if !ok {
			break
		}
		table = next
	}
	c.flow.InPort, c.table, c.cookie, c.rule = saveIn, saveTable, saveCookie, saveRule
	c.depth--
	if forward {
		c.fwd--
	}
}

// deep is the translation's depth as OVS counts it against
// MaxResubmitDepth: its nesting less the forward resubmits in it.
func (c *xctx) deep() int { return c.depth - c.fwd }

// output sends the packet to OpenFlow port p.
func (c *xctx) output(p uint32, maxLen uint16) {
	switch p {
	case openflow.PortInPort:
		c.emitOutput(c.inPort)
	case openflow.PortNormal:
		c.normal()
	case openflow.PortFlood:
		c.flood(true)
	case openflow.PortAll:
		c.flood(false)
	case openflow.PortController:
		c.controller(ReasonAction, c.table, maxLen, c.cookie)
	case openflow.PortLocal:
		c.emitOutput(c.ports.ByOF(openflow.PortLocal))
	case openflow.PortTable:
		// Only a packet-out may send a packet through the tables.
		if c.packetOut {
			c.packetOut = false
			c.pipeline(0)
		}
	case openflow.PortAny:
		// Not a destination.
	default:
		if p == c.flow.InPort {
			// OpenFlow: output to the input port needs IN_PORT.
			return
		}
		c.emitOutput(c.ports.ByOF(p))
	}
}

// emitOutput commits pending header changes and outputs to pt.
func (c *xctx) emitOutput(pt *Port) {
	if pt == nil || pt.Down || pt.NoFwd || !c.stpOutput(pt) {
		return
	}
	if pt.IsPatch() {
		c.patchOutput(pt)
		return
	}
	if c.ports.mirrors != nil {
		c.mirrorEgress(pt) // xlate_mirror.go
	}
	c.mirrorTrunc() // xlate_mirror.go
	if pt.tunnel != nil {
		c.tunnelOutput(pt) // xlate_tunnel.go
		return
	}
	c.commit()
	c.ipfixOutput(pt.DPPort) // ipfix_bridge.go
	c.out.Actions = datapath.AppendOutput(c.out.Actions, pt.DPPort)
}

// flood outputs to every port but the input port; honourNoFlood leaves out
// ports with flooding disabled (FLOOD, NORMAL) and not (ALL). The FLOOD and
// ALL actions output by OpenFlow port number; NORMAL in its flood order.
func (c *xctx) flood(honourNoFlood bool) { c.floodPorts(c.ports.List(), honourNoFlood) }

func (c *xctx) floodPorts(ports []*Port, honourNoFlood bool) {
	c.out.nfFlood = true
	for _, pt := range ports {
		if pt == c.inPort || pt.OFPort == c.flow.InPort || pt.Down || honourNoFlood && pt.NoFlood {
			continue
		}
		c.emitOutput(pt)
	}
}

func (c *xctx) controller(reason, table uint8, maxLen uint16, cookie uint64) {
	pid := c.x.ControllerPID.Load()
	if pid == 0 {
		return
	}
	if c.inPort != nil && c.inPort.IsPatch() || c.pipelineMetadata() {
		// Rules of a bridge reached through a patch port: the
		// datapath's input port is another bridge's, so the packet-in
		// carries its OpenFlow in_port (the patch port) in the
		// metadata of the extended form (xlate_controller.go). So
		// does a packet whose registers or metadata are set: the
		// packet-in reports them, as ovs-vswitchd's does, and the
		// datapath's upcall knows nothing of them.
		ca := openflow.DefaultController
		ca.Reason, ca.MaxLen = reason, maxLen
		c.controller2At(&ca, table, cookie)
		return
	}
	c.commit()
	var ud [UserdataLen]byte
	ud[0], ud[1], ud[2], ud[3] = UserdataController, reason, table, c.ctrlFlags()
	binary.BigEndian.PutUint16(ud[4:], maxLen)
	binary.BigEndian.PutUint16(ud[6:], c.x.ID)
	binary.BigEndian.PutUint64(ud[8:], cookie)
	c.appendPacketIn(pid, ud[:], openflow.NXCtlrNoMeter) // xlate_controller.go
	c.out.Controller = true
}

// pipelineMetadata reports whether the pipeline has set a register or
// the metadata, which a packet-in's match carries. Both are functions of
// the fields the translation matched, so the megaflow needs nothing more.
func (c *xctx) pipelineMetadata() bool {
	for _, r := range c.flow.Regs {
		if r != 0 {
			return true
		}
	}
	return c.flow.OFMetadata != 0
}

// normal is the NORMAL action: an L2 learning switch per VLAN, with the
// ports' VLAN configuration applied as ofproto-dpif's xlate_normal does:
// the frame's VID (0 when untagged) is mapped to a VLAN by the input port's
// mode, a frame the port does not accept is dropped, addresses are learned
// and looked up in that VLAN, and each output port gets the frame tagged or
// untagged as its mode says. Its decision depends on the input port, the
// VID and both Ethernet addresses, and nothing above L2, so that is all it
// adds to the megaflow (a tag change adds the whole popped TCI in commit).
func (c *xctx) normal() {
	wc := &c.out.WC
	wc.EthSrc = ones6
	wc.EthDst = ones6
	wc.VLANs[0].TCI |= flow.VLANVIDMask | flow.VLANPresent
	tag := c.flow.VLANs[0]
	if tag.TCI&flow.VLANPresent == 0 && (c.flow.EthType == flow.EthTypeVLAN || c.flow.EthType == flow.EthTypeQinQ) {
		return // a VLAN ethertype without a readable tag: malformed, as OVS drops it
	}
	in := &trunkAll
	if c.inPort != nil {
		in = &c.inPort.VLAN
	}
	ix, ok := in.inputXVLAN(extractXVLAN(&c.flow)) // vlan_qinq.go
	if !ok {
		if c.inPort != nil {
			in.inputRefused(c.inPort.Name, tag.TCI&flow.VLANVIDMask)
		}
		return // not a VLAN the input port carries
	}
	vlan := ix[0].vid
	if c.ports.vlans {
		// Access and dot1q-tunnel ports look at the inner tag too.
		wc.VLANs[1].TCI |= flow.VLANVIDMask | flow.VLANPresent
	}
	if isReservedMulticast(c.flow.EthDst) && (c.x.bridge == nil || !c.x.bridge.forwardBPDU.Load()) {
		return // STP, LACP, pause ...: for the link, not to be switched (xlate_special.go)
	}
	if c.inPort != nil && (c.inPort.Bond != nil && !c.bondAdmit(vlan) || c.mirrorOut(c.inPort)) {
		return // xlate_bond.go, xlate_mirror.go
	}
	mac := c.x.MAC
	if mac != nil && c.learn && c.inPort != nil && maclearn.IsLearnable(c.flow.EthSrc) {
		if mac.Learn(vlan, c.flow.EthSrc, c.learnPort(), c.now) {
			c.out.Learned = true
			if c.out.trace != nil {
				c.trace(traceAction, " -> learned that %s is on port %s in VLAN %d", macText(c.flow.EthSrc), c.bundleName(), vlan)
			}
		}
	}
	if ms := c.x.mcast.Load(); ms != nil && c.flow.EthDst[0]&1 != 0 && c.flow.EthDst != ones6 &&
		(c.flow.EthType == flow.EthTypeIPv4 || c.flow.EthType == flow.EthTypeIPv6) {
		c.mcastNormal(ms, vlan, &ix) // xlate_mcast.go
		return
	}
	if mac != nil && c.flow.EthDst[0]&1 == 0 {
		if p, ok := mac.Lookup(vlan, c.flow.EthDst, c.now); ok {
			pt := c.ports.ByOF(p)
			switch {
			case pt == nil:
				if c.out.trace != nil {
					c.trace(traceAction, " >> learned port is unknown, dropping")
				}
			case c.sameBundle(pt):
				c.traceDetail("learned port is input port, dropping")
			default:
				c.traceDetail("forwarding to learned port")
				if pt.VLAN.includesX(&ix) && !c.mirrorOut(pt) {
					c.normalOutput(pt, vlan, &ix)
				}
			}
			return
		}
	}
	c.traceDetail("no learned MAC for destination, flooding")
	c.normalFlood(vlan, &ix)
}

// bundleName is the name OVS gives the input port's bundle: its bond's
// port name, or its own.
func (c *xctx) bundleName() string {
	if c.inPort.Bond != nil {
		return c.inPort.Bond.Config.Name
	}
	return c.inPort.Name
}

// normalFlood is NORMAL's flood of a frame of VLAN vlan, internal tags
// ix, as OVS's xlate_normal_flood: to every port of the VLAN but the
// input port's bundle.
func (c *xctx) normalFlood(vlan uint16, ix *xvlan) {
	if !c.ports.vlans && c.ports.bonds == nil && c.ports.mirrors == nil {
		// Every port a trunk of all VLANs: every port takes the frame as
		// it came.
		c.floodPorts(c.ports.FloodOrder(), true)
		return
	}
	c.out.nfFlood = true
	// Flood to every port of the VLAN, grouped by the headers the frame
	// leaves with, so that each change of tag is made once: first the
	// ports that take the frame as the datapath has it now, then those
	// that want the first other header met, then the rest. (A frame leaves
	// a port untagged or with its VLAN's tag, so there are at most two
	// headers besides the one it came with.)
	start := c.base.VLANs
	var next [2]flow.VLAN
	haveNext, rest := false, false
	for pass := 0; pass < 3; pass++ {
		if pass == 2 && !rest {
			break
		}
		for _, pt := range c.ports.FloodOrder() {
			if pt == c.inPort || pt.OFPort == c.flow.InPort || pt.Bond == nil && (pt.Down || pt.NoFlood) || !pt.VLAN.includesX(ix) ||
				pt.Bond != nil && (c.sameBundle(pt) || c.bondFloodSkip(pt)) || c.mirrorOut(pt) {
				continue
			}
			h := c.normalHeader(pt, ix)
			switch {
			case pass == 0 && h != start, pass > 0 && h == start:
				continue
			case pass == 1 && !haveNext:
				next, haveNext = h, true
			case pass == 1 && h != next:
				rest = true
				continue
			case pass == 2 && h == next:
				continue
			}
			c.normalOutput(pt, vlan, ix)
		}
	}
}

// queuePriority is the skb priority of OpenFlow queue q on the kernel
// datapath, as ovs-vswitchd's dpif_netlink_queue_to_priority: tc class
// 1:q+1, for queues below 0xf000.
func queuePriority(q uint32) (uint32, bool) {
	if q >= 0xf000 {
		return 0, false
	}
	return 1<<16 | (q + 1), true
}

// trunkAll is the VLAN configuration of no port: a packet-out from the
// controller or LOCAL with no port behind it carries any VLAN.
var trunkAll PortVLAN

// normalHeader returns the VLAN headers a frame with internal tags ix
// leaves port pt with (vlan_qinq.go).
func (c *xctx) normalHeader(pt *Port, ix *xvlan) [2]flow.VLAN {
	out := pt.VLAN.outputXVLAN(*ix)
	if pt.VLAN.PriorityTags == PriorityTagsNever {
		return out.headers()
	}
	// Port other_config:priority-tags: the outer tag carries the frame's
	// priority even where it carries no VLAN (an access port's), as
	// ovs-vswitchd's output_normal gives it.
	out[0].pcp = c.flow.VLANs[0].TCI & flow.VLANPCPMask
	return out.headersTagged(pt.VLAN.PriorityTags == PriorityTagsAlways)
}

// normalOutput outputs the frame of VLAN vlan, internal tags ix, to pt
// with the VLAN headers the port wants, leaving the frame as it was for
// the next output.
func (c *xctx) normalOutput(pt *Port, vlan uint16, ix *xvlan) {
	if pt.VLAN.Mode == VLANDot1qTunnel && pt.VLAN.CVLANs != nil {
		// As OVS's check_and_set_cvlan_mask: the whole inner TCI.
		c.out.WC.VLANs[1].TCI = 0xffff
	}
	if pt.Bond != nil {
		if c.bondRecirc(pt, ix) { // xlate_bond.go
			return
		}
		if pt = c.bondOutput(pt, vlan); pt == nil {
			return
		}
	}
	if !c.ports.vlans {
		c.emitOutput(pt)
		return
	}
	saved := c.flow.VLANs
	c.flow.VLANs = c.normalHeader(pt, ix)
	c.emitOutput(pt)
	c.flow.VLANs = saved
}

var ones6 = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// commit emits the datapath actions that turn the packet as the datapath
// has it (base) into the packet the OpenFlow actions described (flow), for
// the headers an output will carry. Fields a set action depends on are
// added to the megaflow so the flow never applies a set to a packet of
// another protocol.
func (c *xctx) commit() {
	f, b, wc := &c.flow, &c.base, &c.out.WC
	acts := c.out.Actions
	if c.encap != (encapState{}) {
		acts = c.commitEncap(acts) // xlate_encap.go
	}
	if f.EthType != b.EthType || f.MPLSLSE != b.MPLSLSE {
		acts = c.commitMPLS(acts) // xlate_mpls.go
	}
	if f.NSH != b.NSH && f.EthType == flow.EthTypeNSH && b.EthType == flow.EthTypeNSH {
		acts = c.commitSetNSH(acts) // xlate_nsh.go
	}

	// VLAN: the datapath has no "set VLAN", so, as OVS's
	// commit_vlan_action, keep the innermost tags both have in common, pop
	// the base's others (each popped tag becomes exact in the megaflow: the
	// action removes all of it) and push the flow's, innermost first.
	if f.VLANs != b.VLANs {
		bn, fn := vlanCount(b), vlanCount(f)
		for bn > 0 && fn > 0 && b.VLANs[bn-1] == f.VLANs[fn-1] {
			bn--
			fn--
		}
		for i := 0; i < bn; i++ {
			wc.VLANs[i].TCI = 0xffff
			acts = datapath.AppendPopVLAN(acts)
		}
		for i := fn - 1; i >= 0; i-- {
			wc.VLANs[0].TCI |= flow.VLANPresent
			tpid := f.VLANs[i].TPID
			if tpid == 0 {
				tpid = flow.EthTypeVLAN
			}
			acts = datapath.AppendPushVLAN(acts, tpid, f.VLANs[i].TCI)
		}
		b.VLANs = f.VLANs
	}
	if f.EthSrc != b.EthSrc || f.EthDst != b.EthDst {
		var m flow.Mask
		if f.EthSrc != b.EthSrc {
			m.EthSrc = ones6
		}
		if f.EthDst != b.EthDst {
			m.EthDst = ones6
		}
		acts = datapath.AppendSetMasked(acts, datapath.KeyAttrEthernet, f, &m)
		b.EthSrc, b.EthDst = f.EthSrc, f.EthDst
	}
	if f.Mark != b.Mark {
		acts = datapath.AppendSet(acts, datapath.KeyAttrSkbMark, f)
		b.Mark = f.Mark
	}
	if f.Priority != b.Priority {
		// set_queue's or enqueue's skb priority, as OVS's
		// commit_set_priority_action: the input's priority is matched.
		wc.Priority = ^uint32(0)
		acts = datapath.AppendSet(acts, datapath.KeyAttrPriority, f)
		b.Priority = f.Priority
	}
	switch f.EthType {
	case flow.EthTypeIPv4:
		if f.IPv4Src != b.IPv4Src || f.IPv4Dst != b.IPv4Dst || f.NwTos != b.NwTos || f.NwTTL != b.NwTTL {
			wc.EthType = 0xffff
			wc.NwFrag = 0xff
			var m flow.Mask
			if f.IPv4Src != b.IPv4Src {
				m.IPv4Src = [4]byte{0xff, 0xff, 0xff, 0xff}
			}
			if f.IPv4Dst != b.IPv4Dst {
				m.IPv4Dst = [4]byte{0xff, 0xff, 0xff, 0xff}
			}
			if f.NwTos != b.NwTos {
				m.NwTos = 0xff
			}
			if f.NwTTL != b.NwTTL {
				m.NwTTL = 0xff
			}
			acts = datapath.AppendSetMasked(acts, datapath.KeyAttrIPv4, f, &m)
			b.IPv4Src, b.IPv4Dst, b.NwTos, b.NwTTL = f.IPv4Src, f.IPv4Dst, f.NwTos, f.NwTTL
		}
	case flow.EthTypeIPv6:
		if f.IPv6Src != b.IPv6Src || f.IPv6Dst != b.IPv6Dst || f.IPv6Label != b.IPv6Label || f.NwTos != b.NwTos || f.NwTTL != b.NwTTL {
			wc.EthType = 0xffff
			wc.NwFrag = 0xff
			var m flow.Mask
			if f.IPv6Label != b.IPv6Label {
				m.IPv6Label = 0x000fffff
			}
			if f.IPv6Src != b.IPv6Src {
				m.IPv6Src = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
			}
			if f.IPv6Dst != b.IPv6Dst {
				m.IPv6Dst = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
			}
			if f.NwTos != b.NwTos {
				m.NwTos = 0xff
			}
			if f.NwTTL != b.NwTTL {
				m.NwTTL = 0xff
			}
			acts = datapath.AppendSetMasked(acts, datapath.KeyAttrIPv6, f, &m)
			b.IPv6Src, b.IPv6Dst, b.IPv6Label, b.NwTos, b.NwTTL = f.IPv6Src, f.IPv6Dst, f.IPv6Label, f.NwTos, f.NwTTL
		}
		if f.NwProto == flow.IPProtoICMPv6 {
			acts = c.commitND(acts) // xlate_slow.go
		}
	case flow.EthTypeARP, flow.EthTypeRARP:
		acts = c.commitARP(acts) // xlate_slow.go
	}
	if (f.TpSrc != b.TpSrc || f.TpDst != b.TpDst) && f.NwFrag&flow.FragLater == 0 {
		var attr datapath.KeyAttr
		switch {
		case f.EthType != flow.EthTypeIPv4 && f.EthType != flow.EthTypeIPv6:
		case f.NwProto == flow.IPProtoTCP:
			attr = datapath.KeyAttrTCP
		case f.NwProto == flow.IPProtoUDP:
			attr = datapath.KeyAttrUDP
		case f.NwProto == flow.IPProtoSCTP:
			attr = datapath.KeyAttrSCTP
		}
		if attr != 0 {
			wc.EthType, wc.NwProto, wc.NwFrag = 0xffff, 0xff, 0xff
			var m flow.Mask
			if f.TpSrc != b.TpSrc {
				m.TpSrc = 0xffff
			}
			if f.TpDst != b.TpDst {
				m.TpDst = 0xffff
			}
			acts = datapath.AppendSetMasked(acts, attr, f, &m)
			b.TpSrc, b.TpDst = f.TpSrc, f.TpDst
		}
	}
	acts = c.commitICMP(acts) // xlate_slow.go
	c.out.Actions = acts
}

// vlanCount is how many VLAN tags k has.
func vlanCount(k *flow.Key) int {
	n := 0
	for n < len(k.VLANs) && k.VLANs[n].TCI&flow.VLANPresent != 0 {
		n++
	}
	return n
}
