package openflow

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/govswitch/govswitch/flow"
)

// ActionType says what an Action does and which of its fields are used.
type ActionType uint8

// Action types. The comment names the Action fields each one uses.
const (
	ActNone       ActionType = iota
	ActOutput                // Port, MaxLen (bytes to send for PortController)
	ActEnqueue               // Port, Queue (OpenFlow 1.0 enqueue)
	ActSetVLANVID            // VLANVID: 1.0 set_vlan_vid, which adds a tag when there is none
	ActSetVLANPCP            // VLANPCP: 1.0 set_vlan_pcp, likewise
	ActStripVLAN             // 1.0 strip_vlan, 1.3 pop_vlan
	ActSetField              // Field, Value: 1.3 set_field; 1.0 set_dl_*/set_nw_*/set_tp_*
	ActPushVLAN              // EthType (0x8100 or 0x88a8)
	ActPushMPLS              // EthType (0x8847 or 0x8848)
	ActPopMPLS               // EthType of the payload
	ActSetQueue              // Queue
	ActGroup                 // Group
	ActSetNwTTL              // TTL
	ActDecNwTTL              // IDs: dec_ttl(ids) when non-nil
	ActSetMPLSTTL            // TTL
	ActDecMPLSTTL            //
	ActCopyTTLOut            //
	ActCopyTTLIn             //
	ActResubmit              // Port (PortInPort: keep in_port), Table (TableAll: the current table), CtOrig
	ActRegLoad               // Field, Ofs, NBits, Load: NXAST_REG_LOAD
	ActRegMove               // Src, SrcOfs → Field, Ofs; NBits: NXAST_REG_MOVE (move)
	ActVendor                // Vendor, Data: a vendor/experimenter action this codec does not model
	ActCT                    // Ct: NXAST_CT
	ActCTClear               // NXAST_CT_CLEAR
	ActNAT                   // NAT: NXAST_NAT, only nested in a ct action
	ActMeter                 // Queue: the meter id (OpenFlow 1.5's meter action)
	ActLearn                 // Learn: NXAST_LEARN, NXAST_LEARN2 (learn.go)
	ActConj                  // Queue id, Table clause (0-based), TTL n: NXAST_CONJUNCTION (conj.go)
	ActOutputReg             // Src, SrcOfs, NBits, MaxLen: NXAST_OUTPUT_REG (outputreg.go)
	ActExit                  // NXAST_EXIT: stop translating (outputreg.go)
	ActStackPush             // Field, Ofs, NBits: NXAST_STACK_PUSH (push)
	ActStackPop              // Field, Ofs, NBits: NXAST_STACK_POP (pop)

	// Nicira actions of action_clone.go and action_mpls.go.
	ActClone          // Nested: NXAST_CLONE
	ActOutputTrunc    // Port, TruncLen: NXAST_OUTPUT_TRUNC, output(port=..,max_len=..)
	ActCheckPktLarger // MaxLen (pkt_len), Field, Ofs: NXAST_CHECK_PKT_LARGER
	ActSetMPLSLabel   // Load: set_mpls_label (NXAST_SET_MPLS_LABEL; set_field in 1.2+)
	ActSetMPLSTC      // VLANPCP: set_mpls_tc (NXAST_SET_MPLS_TC; set_field in 1.2+)
	ActEncap          // Load: the new packet type, Ofs: hdr_size: NXAST_ENCAP (NSH's properties: NSHMDType, Data)
	ActDecap          // Load: the new packet type: NXAST_DECAP
	ActSample         // NXAST_SAMPLE, SAMPLE2, SAMPLE3: see action_sample.go
	ActMultipath      // Hash; Field, Ofs, NBits the destination: NXAST_MULTIPATH (action_multipath.go)
	ActBundle         // Hash; Field, Ofs, NBits bundle_load's destination: NXAST_BUNDLE(_LOAD) (action_bundle.go)
	ActFinTimeout     // Ofs idle, NBits hard timeout: NXAST_FIN_TIMEOUT (action_fintimeout.go)
	ActDeleteField    // Field: NXAST_DELETE_FIELD (action_deletefield.go)
)

var actionNames = [...]string{
	ActNone: "none", ActOutput: "output", ActEnqueue: "enqueue", ActSetVLANVID: "set_vlan_vid",
	ActSetVLANPCP: "set_vlan_pcp", ActStripVLAN: "strip_vlan", ActSetField: "set_field",
	ActPushVLAN: "push_vlan", ActPushMPLS: "push_mpls", ActPopMPLS: "pop_mpls", ActSetQueue: "set_queue",
	ActGroup: "group", ActSetNwTTL: "set_nw_ttl", ActDecNwTTL: "dec_ttl", ActSetMPLSTTL: "set_mpls_ttl",
	ActDecMPLSTTL: "dec_mpls_ttl", ActCopyTTLOut: "copy_ttl_out", ActCopyTTLIn: "copy_ttl_in",
	ActResubmit: "resubmit", ActRegLoad: "load", ActRegMove: "move", ActVendor: "vendor",
	ActCT: "ct", ActCTClear: "ct_clear", ActNAT: "nat", ActMeter: "meter",
	ActLearn: "learn", ActConj: "conjunction", ActOutputReg: "output_reg", ActExit: "exit",
	ActStackPush: "push", ActStackPop: "pop",
	ActClone: "clone", ActOutputTrunc: "output_trunc", ActCheckPktLarger: "check_pkt_larger",
	ActSetMPLSLabel: "set_mpls_label", ActSetMPLSTC: "set_mpls_tc", ActEncap: "encap", ActDecap: "decap",
	ActSample: "sample", ActMultipath: "multipath", ActBundle: "bundle",
	ActFinTimeout: "fin_timeout", ActDeleteField: "delete_field",
}

func (t ActionType) String() string {
	if int(t) < len(actionNames) {
		return actionNames[t]
	}
	return fmt.Sprintf("action(%d)", uint8(t))
}

// NXVendorID is the Nicira vendor/experimenter id used by OVS extensions.
const NXVendorID uint32 = 0x00002320

// Action is one OpenFlow action in a version-independent form. It is a
// plain value (no pointers but Data) so action lists are flat slices.
// Fields a Type does not use are zero.
type Action struct {
	Type    ActionType
	VLANPCP uint8
	Table   uint8
	TTL     uint8
	MaxLen  uint16
	EthType uint16
	VLANVID uint16
	Ofs     uint16
	NBits   uint16
	Field   Field
	Src     Field // ActRegMove's source field, read at bit SrcOfs
	SrcOfs  uint16
	Port    uint32
	Queue   uint32
	Group   uint32
	Vendor  uint32
	Load    uint64
	// Value is the set_field value, big-endian, in its first Field.Size()
	// bytes; the rest is zero.
	Value [16]byte
	// Masked says an ActSetField sets only the bits of Mask (big-endian as
	// Value), OpenFlow 1.5's masked set_field (setfield.go); Value has no
	// bit outside Mask. Unmasked, Mask is zero and the whole field is set.
	Masked bool
	Mask   [16]byte
	// CopyField says an ActRegMove came as a copy_field (OpenFlow 1.5's,
	// or ONF's 1.3 extension), which 1.3 writes back as ONF's copy_field
	// (action_copyfield.go).
	CopyField bool
	// CtOrig says an ActResubmit looks up its table with the packet's
	// conntrack original-direction tuple (ct_nw_src, ct_nw_dst or their
	// IPv6 forms, ct_nw_proto, ct_tp_src, ct_tp_dst) in place of its
	// addresses, IP protocol and ports: resubmit(,table,ct),
	// NXAST_RESUBMIT_TABLE_CT.
	CtOrig bool
	// IDs are an ActDecNwTTL's controller ids when it came as
	// dec_ttl(ids) (action_decttl.go); nil for plain dec_ttl.
	IDs []uint16
	// Data is the body of an ActVendor action after the vendor id. It
	// aliases the decoded message.
	Data []byte
	// Ct and NAT are the bodies of ActCT and ActNAT (see ct.go).
	Ct  *CtAction
	NAT *NATAction
	// Learn is the body of ActLearn (see learn.go).
	Learn *LearnAction
	// Hash is the body of ActMultipath and ActBundle.
	Hash *HashAction
	// Nested is the action list of an ActClone.
	Nested []Action
	// TruncLen is an ActOutputTrunc's max_len.
	TruncLen uint32
	// NSHMDType is an encap(nsh)'s md_type property, 0 when it had none
	// (MD type 1); its tlv properties are in Data, as MD type 2 context
	// headers (class, type, length, value padded to 4 bytes), in their
	// order (action_mpls.go).
	NSHMDType uint8
	// OutputReg2 says an ActOutputReg came as NXAST_OUTPUT_REG2, which is
	// written back so (outputreg.go); one of an experimenter field is
	// written so anyway.
	OutputReg2 bool
}

// Output returns an output action to port. maxLen matters only for
// PortController (0xffff: send the whole packet).
func Output(port uint32, maxLen uint16) Action {
	return Action{Type: ActOutput, Port: port, MaxLen: maxLen}
}

// SetField returns an action that sets field f to its value in k.
func SetField(f Field, k *flow.Key) Action {
	a := Action{Type: ActSetField, Field: f}
	f.Value(a.Value[:0], k)
	return a
}

// Resubmit returns an NXAST_RESUBMIT(_TABLE) action.
func Resubmit(port uint32, table uint8) Action {
	return Action{Type: ActResubmit, Port: port, Table: table}
}

// ApplySetField writes an ActSetField action's value into k. It reports
// false for another action type or an out-of-range value.
func (a *Action) ApplySetField(k *flow.Key) bool {
	var buf [16]byte
	return a.ApplySetFieldScratch(k, &buf)
}

// ApplySetFieldScratch is ApplySetField reading a masked set_field's old
// value into scratch, so that a caller that keeps one (the translation)
// allocates nothing.
func (a *Action) ApplySetFieldScratch(k *flow.Key, scratch *[16]byte) bool {
	if a.Type != ActSetField {
		return false
	}
	n := a.Field.Size()
	if n == 0 {
		return false
	}
	if a.Masked {
		v, ok := a.Field.Value(scratch[:0], k)
		if !ok || len(v) != n {
			return false
		}
		for i := range v {
			v[i] = v[i]&^a.Mask[i] | a.Value[i]&a.Mask[i]
		}
		if !a.Field.SetValue(k, v) {
			return false
		}
	} else if !a.Field.SetValue(k, a.Value[:n]) {
		return false
	}
	// Setting a VLAN's VID or PCP rewrites a tag, never removes one: OVS
	// sends set_field:vlan_vid without OFPVID_PRESENT.
	if a.Field == FieldVLANVID || a.Field == FieldVLANPCP {
		k.VLANs[0].TCI |= flow.VLANPresent
	}
	return true
}

// setFieldKey returns a Key holding only the set_field value, for moving a
// value between field forms (ip_dscp ↔ nw_tos).
func (a *Action) setFieldKey() (flow.Key, bool) {
	var k flow.Key
	ok := a.ApplySetField(&k)
	return k, ok
}

// Instructions is the OpenFlow 1.3 instruction set of a flow, and the
// action list of an OpenFlow 1.0 flow (Apply alone). The zero value drops
// the packet.
type Instructions struct {
	Meter         uint32   // OFPIT_METER when nonzero
	Apply         []Action // OFPIT_APPLY_ACTIONS; the 1.0 action list
	Clear         bool     // OFPIT_CLEAR_ACTIONS
	Write         []Action // OFPIT_WRITE_ACTIONS when non-nil
	WriteMetadata bool     // OFPIT_WRITE_METADATA with Metadata/MetadataMask
	Metadata      uint64
	MetadataMask  uint64
	GotoTable     bool // OFPIT_GOTO_TABLE to Table
	Table         uint8
}

// onlyApply reports whether in has nothing OpenFlow 1.0 cannot carry.
func (in *Instructions) onlyApply() bool {
	return in.Meter == 0 && !in.Clear && in.Write == nil && !in.WriteMetadata && !in.GotoTable
}

// Equal reports whether a and b are the same action (Data compared by
// content).
func (a Action) Equal(b Action) bool {
	return a.Type == b.Type && a.VLANPCP == b.VLANPCP && a.Table == b.Table && a.TTL == b.TTL &&
		a.MaxLen == b.MaxLen && a.EthType == b.EthType && a.VLANVID == b.VLANVID && a.Ofs == b.Ofs &&
		a.NBits == b.NBits && a.Field == b.Field && a.Src == b.Src && a.SrcOfs == b.SrcOfs && a.Port == b.Port && a.Queue == b.Queue &&
		a.Group == b.Group && a.Vendor == b.Vendor && a.Load == b.Load && a.Value == b.Value &&
		a.Masked == b.Masked && a.Mask == b.Mask && a.CopyField == b.CopyField && a.CtOrig == b.CtOrig &&
		(a.IDs == nil) == (b.IDs == nil) && slices.Equal(a.IDs, b.IDs) &&
		bytes.Equal(a.Data, b.Data) && a.Ct.equal(b.Ct) && a.NAT.equal(b.NAT) &&
		a.Learn.equal(b.Learn) && a.Hash.equal(b.Hash) && a.TruncLen == b.TruncLen && a.OutputReg2 == b.OutputReg2 &&
		actionsEqual(a.Nested, b.Nested)
}

// OutputsTo reports whether a sends packets to port: an output or enqueue
// to it. This is the flow mod and flow stats out_port filter; PortAny
// matches every action list, as the specs say, so callers test for it
// first.
func (a *Action) OutputsTo(port uint32) bool {
	return (a.Type == ActOutput || a.Type == ActEnqueue) && a.Port == port
}

// OutputsTo reports whether any action in the apply or write lists outputs
// to port (see Action.OutputsTo); PortAny is always true.
func (in *Instructions) OutputsTo(port uint32) bool {
	if port == PortAny {
		return true
	}
	for i := range in.Apply {
		if in.Apply[i].OutputsTo(port) {
			return true
		}
	}
	for i := range in.Write {
		if in.Write[i].OutputsTo(port) {
			return true
		}
	}
	return false
}
