package ofproto

import (
	"sync"

	"github.com/govswitch/govswitch/ofproto/openflow"
)

// What translation can carry out. A flow whose actions decode but that
// translation cannot execute faithfully is refused at flow_mod (and
// packet-out) time, as ovs-vswitchd refuses what it cannot do, rather
// than installed and then dropping what it says to forward.

// settable reports whether translation carries out a set_field or load
// into f: the field is either written into the packet when it is output
// (xctx.commit) or pipeline metadata that later lookups read (registers,
// metadata, in_port, tunnel id before any tunnel port exists).
func settable(f openflow.Field) bool {
	switch f {
	case openflow.FieldEthSrc, openflow.FieldEthDst,
		openflow.FieldVLANVID, openflow.FieldVLANPCP, openflow.FieldVLANTCI,
		openflow.FieldIPv4Src, openflow.FieldIPv4Dst, openflow.FieldIPv6Src, openflow.FieldIPv6Dst, openflow.FieldIPv6Label,
		openflow.FieldIPDSCP, openflow.FieldIPTOS, openflow.FieldIPECN, openflow.FieldIPTTL,
		openflow.FieldTCPSrc, openflow.FieldTCPDst, openflow.FieldUDPSrc, openflow.FieldUDPDst,
		openflow.FieldSCTPSrc, openflow.FieldSCTPDst, openflow.FieldTpSrc, openflow.FieldTpDst,
		openflow.FieldPktMark, openflow.FieldMetadata, openflow.FieldTunnelID,
		openflow.FieldTunIPv4Src, openflow.FieldTunIPv4Dst, openflow.FieldTunIPv6Src, openflow.FieldTunIPv6Dst, // tunnel ports: xlate_tunnel.go
		openflow.FieldTunFlags,
		openflow.FieldTunGbpID, openflow.FieldTunGbpFlags, // exts=gbp ports: xlate_tunnel.go
		openflow.FieldTunErspanIdx, openflow.FieldTunErspanVer, openflow.FieldTunErspanDir, openflow.FieldTunErspanHwid, // erspan_ver=flow ports: xlate_tunnel.go
		openflow.FieldInPort, openflow.FieldNXMInPort,
		openflow.FieldMPLSLabel, openflow.FieldMPLSTC,
		openflow.FieldARPOp, openflow.FieldARPSPA, openflow.FieldARPTPA, openflow.FieldARPSHA, openflow.FieldARPTHA, // slow path: xlate_slow.go
		openflow.FieldICMPv4Type, openflow.FieldICMPv4Code, openflow.FieldICMPv6Type, openflow.FieldICMPv6Code,
		openflow.FieldNDTarget, openflow.FieldNDSLL, openflow.FieldNDTLL, // slow path: xlate_slow.go
		openflow.FieldNSHFlags, openflow.FieldNSHTTL, openflow.FieldNSHSPI, openflow.FieldNSHSI, // xlate_nsh.go
		openflow.FieldNSHC1, openflow.FieldNSHC2, openflow.FieldNSHC3, openflow.FieldNSHC4:
		return true
	}
	return f >= openflow.FieldReg0 && f <= openflow.FieldReg15 ||
		f >= openflow.FieldXReg0 && f <= openflow.FieldXXReg3 ||
		f.IsTunMetadata() // Geneve output: tun_metadata.go
}

// isNDExt reports whether f is one of OVS's IPv6 ND extension fields,
// nd_reserved and nd_options_type. The Linux datapath has no key or set
// action for them (OVS_KEY_ATTR_ND_EXTENSIONS is userspace-only), so
// matches on them are handled in userspace (xlate.go) and writes to
// them are refused.
func isNDExt(f openflow.Field) bool {
	return f == openflow.FieldNDReserved || f == openflow.FieldNDOptionsType
}

// ndExtSetError refuses a write into an ND extension field as
// ovs-vswitchd 3.1 refuses it on a datapath without ND extensions:
// OFPBAC_BAD_SET_ARGUMENT, with a WARN.
func ndExtSetError(verb string, f openflow.Field) error {
	return errorf(ErrNDExtDatapathSet, "%s into %s refused: the datapath does not support setting IPv6 ND Extensions fields", verb, f)
}

// checkSupported returns an *Error (ErrUnsupportedAction,
// ErrUnsupportedVendor, ErrUnsupportedNXAction or ErrUnsupportedSetField)
// for the first action in acts that translation cannot carry out, or nil.
func checkSupported(acts []openflow.Action) error {
	for i := range acts {
		a := &acts[i]
		switch a.Type {
		case openflow.ActOutput, openflow.ActEnqueue, openflow.ActSetVLANVID, openflow.ActSetVLANPCP,
			openflow.ActStripVLAN, openflow.ActPushVLAN, openflow.ActResubmit, openflow.ActDecNwTTL,
			openflow.ActSetNwTTL, openflow.ActSetQueue, openflow.ActGroup, openflow.ActMeter,
			openflow.ActPushMPLS, openflow.ActPopMPLS, openflow.ActSetMPLSLabel, openflow.ActSetMPLSTC,
			openflow.ActSetMPLSTTL, openflow.ActDecMPLSTTL:
			// A group or meter that does not exist is refused by
			// Tables.checkRefs (OFPBAC_BAD_OUT_GROUP,
			// OFPMMFC_INVALID_METER), as ovs-vswitchd refuses it.
		case openflow.ActSetField:
			if isNDExt(a.Field) {
				return ndExtSetError("set_field", a.Field)
			}
			if a.Field == openflow.FieldCtMark || a.Field == openflow.FieldCtLabel {
				return errorf(ErrBadSetArgument, "cannot set %s outside of a ct action", a.Field)
			}
			if !settable(a.Field) {
				return errorf(ErrUnsupportedSetField, "set_field %s is not implemented", a.Field)
			}
		case openflow.ActRegLoad:
			if isNDExt(a.Field) {
				return ndExtSetError("load", a.Field)
			}
			if a.Field == openflow.FieldCtMark || a.Field == openflow.FieldCtLabel {
				return errorf(ErrBadSetArgument, "cannot set %s outside of a ct action", a.Field)
			}
			if !settable(a.Field) {
				return errorf(ErrUnsupportedSetField, "load into %s is not implemented", a.Field)
			}
		case openflow.ActRegMove:
			if isNDExt(a.Field) {
				return ndExtSetError("move", a.Field)
			}
			if a.Field == openflow.FieldCtMark || a.Field == openflow.FieldCtLabel {
				return errorf(ErrBadSetArgument, "cannot set %s outside of a ct action", a.Field)
			}
			if !settable(a.Field) {
				return errorf(ErrUnsupportedSetField, "move into %s is not implemented", a.Field)
			}
		case openflow.ActStackPush, openflow.ActStackPop:
			if err := checkStack(a); err != nil {
				return err
			}
		case openflow.ActCT, openflow.ActCTClear:
			// Checked against the datapath by checkCt.
		case openflow.ActExit, openflow.ActFinTimeout:
		case openflow.ActDeleteField:
			// OVS 3.1 deletes only tun_metadata fields (the codec has
			// checked that the field is mapped).
			if !a.Field.IsTunMetadata() {
				return errorf(ErrBadArgument, "delete_field:%s: only tun_metadata fields can be deleted", a.Field)
			}
		case openflow.ActOutputReg:
			// The port is read at translation; checkActions checks the
			// source's prerequisites.
		case openflow.ActConj:
			if err := checkConj(acts); err != nil {
				return err
			}
		case openflow.ActLearn:
			// checkActions checks it again with the flow's match.
			if err := checkLearn(a.Learn, nil); err != nil {
				return err
			}
		case openflow.ActClone:
			if err := checkSupported(a.Nested); err != nil {
				return err
			}
		case openflow.ActOutputTrunc, openflow.ActSample:
		case openflow.ActMultipath, openflow.ActBundle:
			if a.Field != openflow.FieldNone && !settable(a.Field) {
				return errorf(ErrUnsupportedSetField, "%s into %s is not implemented", a.Type, a.Field)
			}
			if a.Field == openflow.FieldCtMark || a.Field == openflow.FieldCtLabel {
				return errorf(ErrBadSetArgument, "cannot set %s outside of a ct action", a.Field)
			}
		case openflow.ActEncap, openflow.ActDecap:
			if !encapSupported(a) {
				return errorf(ErrUnsupportedNXAction, "%s to packet type %#x is not implemented", a.Type, a.Load)
			}
		case openflow.ActCheckPktLarger:
			if !settable(a.Field) {
				return errorf(ErrUnsupportedSetField, "check_pkt_larger into %s is not implemented", a.Field)
			}
		case openflow.ActNAT:
			return errorf(ErrBadSetArgument, "nat outside of a ct action")
		case openflow.ActVendor:
			if ok, err := checkControllerAction(a); ok {
				if err != nil {
					return err
				}
				continue
			}
			if a.Vendor == openflow.NXVendorID {
				sub := -1
				if len(a.Data) >= 2 {
					sub = int(a.Data[0])<<8 | int(a.Data[1])
				}
				return errorf(ErrUnsupportedNXAction, "Nicira action %s (subtype %d) is not implemented", nxActionName(sub), sub)
			}
			return errorf(ErrUnsupportedVendor, "actions of vendor %#08x are not implemented", a.Vendor)
		default:
			return errorf(ErrUnsupportedAction, "action %s is not implemented", a.Type)
		}
	}
	return nil
}

// nxActionNames names the NXAST_* subtypes this switch does not
// implement, for log lines a user can act on.
var nxActionNames = [...]string{
	5: "pop_queue", 8: "note", 10: "multipath", 12: "bundle", 13: "bundle_load",
	15: "output_reg", 16: "learn", 17: "exit", 19: "fin_timeout", 20: "controller",
	21: "dec_ttl(ids)", 22: "write_metadata", 23: "push_mpls", 24: "pop_mpls", 25: "set_mpls_ttl",
	26: "dec_mpls_ttl", 27: "push", 28: "pop", 29: "sample", 30: "set_mpls_label", 31: "set_mpls_tc",
	32: "output_reg2", 33: "load2", 34: "conjunction", 35: "ct", 36: "nat", 37: "controller2",
	38: "sample2", 39: "output_trunc", 41: "sample3", 42: "clone", 43: "ct_clear",
	44: "resubmit_table_ct", 45: "learn2", 46: "encap", 47: "decap", 49: "check_pkt_larger",
}

func nxActionName(sub int) string {
	if sub >= 0 && sub < len(nxActionNames) && nxActionNames[sub] != "" {
		return nxActionNames[sub]
	}
	return "unknown"
}

// warnedUnsupported remembers which refusals have been logged at WARN:
// once per kind of action, so a controller replaying the same flows does
// not flood the log.
var warnedUnsupported sync.Map

// isUnsupported reports whether err refuses an unimplemented action.
func isUnsupported(err error) bool {
	switch ErrKind(err) {
	case ErrUnsupportedAction, ErrUnsupportedVendor, ErrUnsupportedNXAction, ErrUnsupportedSetField,
		ErrCtDatapathAction, ErrCtDatapathMatch, ErrNDExtDatapathSet:
		return true
	}
	return false
}

// warnOnce reports whether the refusal err is the first of its text.
func warnOnce(err error) bool {
	_, seen := warnedUnsupported.LoadOrStore(err.Error(), struct{}{})
	return !seen
}
