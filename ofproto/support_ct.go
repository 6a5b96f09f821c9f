package ofproto

import (
	"sync/atomic"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// What the kernel's connection tracker supports decides which conntrack
// rules the switch takes, as ovs-vswitchd's check_mask and check_actions
// decide: a rule needing what the datapath lacks is refused with
// NXBMC_CT_DATAPATH_SUPPORT (its match) or NXBAC_CT_DATAPATH_SUPPORT (its
// actions). Conntrack support is the kernel's, not one datapath's, so one
// record serves every bridge.

// ctFeatures is the probed support; nil (a datapath that probes nothing,
// such as the dummy one) refuses nothing.
var ctFeatures atomic.Pointer[datapath.Features]

// noteDatapathFeatures records the conntrack support a datapath probed.
func noteDatapathFeatures(f datapath.Features) {
	if f.CtProbed {
		ctFeatures.Store(&f)
	}
	dpSupportsHash.Store(f.Hash && f.Recirc) // group_dphash.go
}

// nxErrorCodes10 is where Nicira's OpenFlow 1.0 error codes start: a
// code this high under a standard type is theirs, sent as a vendor error.
const nxErrorCodes10 = 256

// OVS's NXBAC_CT_DATAPATH_SUPPORT and NXBMC_CT_DATAPATH_SUPPORT: Nicira
// codes under OFPET_BAD_REQUEST in OpenFlow 1.0, experimenter errors
// (NX_VENDOR_ID) from 1.2 on.
const (
	nxbacCtDatapathSupport10 uint16 = 265
	nxbmcCtDatapathSupport10 uint16 = 264
	nxbacCtDatapathSupport12 uint16 = 42
	nxbmcCtDatapathSupport12 uint16 = 43
	// nxBadSetArgument10 is OFPBAC_BAD_SET_ARGUMENT in OpenFlow 1.0 and
	// 1.1 (NX1.0-1.1(1,525)), which have no standard code for it.
	nxBadSetArgument10 uint16 = 525
)

// ctStateKnown are the ct_state bits the kernel defines; a mask with any
// other is OFPBMC_BAD_MASK, as in ovs-vswitchd.
const ctStateKnown = 0xff

// checkCt refuses a flow whose conntrack match or actions the datapath
// cannot carry out, and conntrack actions out of place: nat outside ct,
// and setting ct_mark or ct_label outside ct (OFPBAC_BAD_SET_ARGUMENT).
func checkCt(in *openflow.Instructions, m *classifier.Match) error {
	if m.Mask.CtState&^ctStateKnown != 0 {
		return errorf(ErrBadMask, "ct_state mask %#x has bits no datapath knows", m.Mask.CtState)
	}
	f := ctFeatures.Load()
	if f != nil {
		st := m.Key.CtState & m.Mask.CtState
		switch {
		case m.Mask.CtState != 0 && !f.CtState,
			m.Mask.CtZone != 0 && !f.CtZone,
			m.Mask.CtMark != 0 && !f.CtMark,
			m.Mask.CtLabels != [16]byte{} && !f.CtLabel,
			st&(0x40|0x80) != 0 && !f.CtNAT:
			return errorf(ErrCtDatapathMatch, "the datapath does not support the conntrack fields this match uses")
		}
	}
	for _, list := range [][]openflow.Action{in.Apply, in.Write} {
		for i := range list {
			if err := checkCtAction(&list[i], f); err != nil {
				return err
			}
		}
		if err := checkResubmitCt(list, m); err != nil {
			return err
		}
	}
	return nil
}

// checkResubmitCt refuses a resubmit(,table,ct) in acts (or in a clone in
// them) unless match m pins down a valid connection, one that has a
// tuple to look up by (OFPBAC_MATCH_INCONSISTENT, as ovs-vswitchd's
// check_RESUBMIT). A nil m is a packet-out's: its packet has no
// connection, so every such resubmit is refused.
func checkResubmitCt(acts []openflow.Action, m *classifier.Match) error {
	for i := range acts {
		a := &acts[i]
		switch {
		case a.Type == openflow.ActClone:
			if err := checkResubmitCt(a.Nested, m); err != nil {
				return err
			}
		case a.Type == openflow.ActResubmit && a.CtOrig:
			if m == nil || !openflow.CtValid(&m.Key, &m.Mask) {
				return errorf(ErrMatchInconsistent, "resubmit(,%d,ct): the match does not pin down a tracked, valid connection", a.Table)
			}
		}
	}
	return nil
}

func checkCtAction(a *openflow.Action, f *datapath.Features) error {
	switch a.Type {
	case openflow.ActClone:
		for i := range a.Nested {
			if err := checkCtAction(&a.Nested[i], f); err != nil {
				return err
			}
		}
	case openflow.ActNAT:
		return errorf(ErrBadSetArgument, "nat outside of a ct action")
	case openflow.ActSetField, openflow.ActRegLoad, openflow.ActRegMove:
		if a.Field == openflow.FieldCtMark || a.Field == openflow.FieldCtLabel {
			return errorf(ErrBadSetArgument, "cannot set %s outside of a ct action", a.Field)
		}
	case openflow.ActCT:
		ct := a.Ct
		if f == nil {
			return nil
		}
		if !f.Conntrack || !f.CtState {
			return errorf(ErrCtDatapathAction, "the datapath does not support the ct action")
		}
		if (ct.ZoneImm != 0 || ct.ZoneField != openflow.FieldNone) && !f.CtZone {
			return errorf(ErrCtDatapathAction, "the datapath does not support conntrack zones")
		}
		if ct.Table != openflow.CtNoRecirc && !f.Recirc {
			return errorf(ErrCtDatapathAction, "the datapath does not support recirculation")
		}
		for i := range ct.Actions {
			n := &ct.Actions[i]
			switch {
			case n.Type == openflow.ActNAT && !f.CtNAT:
				return errorf(ErrCtDatapathAction, "the datapath does not support nat")
			case n.Field == openflow.FieldCtMark && !f.CtMark, n.Field == openflow.FieldCtLabel && !f.CtLabel:
				return errorf(ErrCtDatapathAction, "the datapath does not support setting %s", n.Field)
			}
		}
	}
	return nil
}

// ctFlowModError maps the conntrack refusals to version v's error.
func ctFlowModError(v uint8, k ErrorKind) (typ, code uint16, ok bool) {
	switch k {
	case ErrCtDatapathAction:
		if v >= openflow.Version13 {
			return openflow.Err13TypeExperimenter, nxbacCtDatapathSupport12, true
		}
		return openflow.ErrTypeBadRequest, nxbacCtDatapathSupport10, true
	case ErrCtDatapathMatch:
		if v >= openflow.Version13 {
			return openflow.Err13TypeExperimenter, nxbmcCtDatapathSupport12, true
		}
		return openflow.ErrTypeBadRequest, nxbmcCtDatapathSupport10, true
	case ErrNDExtDatapathSet:
		// OFPBAC_BAD_SET_ARGUMENT: OVS gives OpenFlow 1.0 and 1.1 its
		// Nicira code, bad request 525.
		if v >= openflow.Version12 {
			return openflow.ErrTypeBadAction, openflow.BadAction13BadSetArgment, true
		}
		return openflow.ErrTypeBadRequest, nxBadSetArgument10, true
	case ErrBadSetArgument:
		if v >= openflow.Version13 {
			return openflow.ErrTypeBadAction, openflow.BadAction13BadSetArgment, true
		}
		// OpenFlow 1.0 has no such code; its closest is a bad argument.
		return openflow.ErrTypeBadAction, openflow.BadActionBadArgument, true
	case ErrBadMask:
		if v >= openflow.Version13 {
			return openflow.Err13TypeBadMatch, openflow.BadMatch13BadMask, true
		}
		return openflow.ErrTypeBadRequest, openflow.BadRequestBadSubtype, false
	}
	return 0, 0, false
}
