package openflow

import (
	"testing"
)

// gbpCaptures are ovs-ofctl 3.1 sessions that match and set tun_gbp_id
// and tun_gbp_flags (NXM_NX_TUN_GBP_ID, NXM_NX_TUN_GBP_FLAGS) in OpenFlow
// 1.0 (NXM), 1.3 and 1.5 (OXM with the NXM headers), recorded as
// TestOvsOfctl records its own (OFCTL_RECORD=1).
var gbpCaptures = []capture{
	{"gbp-of10", []string{"add-flow", "SW",
		"tun_gbp_id=0x10,tun_gbp_flags=0x40/0x48,actions=set_field:0x20->tun_gbp_id,load:0x8->NXM_NX_TUN_GBP_FLAGS[],output:2"}},
	{"gbp-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"tun_id=0x64,tun_gbp_id=0x1000/0xf000,actions=set_field:0x48->tun_gbp_flags,move:NXM_NX_TUN_GBP_ID[0..7]->NXM_NX_REG0[8..15],output:1"}},
	{"gbp-of15", []string{"-O", "OpenFlow15", "add-flow", "SW",
		"tun_gbp_flags=0x8,actions=set_field:0x1200/0xff00->tun_gbp_id,move:NXM_NX_REG1[0..15]->NXM_NX_TUN_GBP_ID[],output:3"}},
}

// TestOvsOfctlGbpCaptures records (OFCTL_RECORD=1) or checks the
// captures: every message decodes and re-encodes to ovs-ofctl's bytes.
func TestOvsOfctlGbpCaptures(t *testing.T) {
	recordOrCheckCaptures(t, gbpCaptures)
}

// TestGbpCaptureMeaning checks what ovs-ofctl's GBP matches and actions
// decode to: the bits of flow.Key.Tunnel they name.
func TestGbpCaptureMeaning(t *testing.T) {
	fm, _ := finCaptureFlowMod(t, "gbp-of10")
	if tn, mt := fm.Match.Key.Tunnel, fm.Match.Mask.Tunnel; tn.GbpID != 0x10 || mt.GbpID != 0xffff ||
		tn.GbpFlags != 0x40 || mt.GbpFlags != 0x48 {
		t.Errorf("of10 match %+v / %+v", tn, mt)
	}
	a := fm.Instructions.Apply
	if len(a) != 3 || a[0].Type != ActRegLoad || a[0].Field != FieldTunGbpID || a[0].Load != 0x20 || a[0].NBits != 16 ||
		a[1].Field != FieldTunGbpFlags || a[1].Load != 8 {
		t.Errorf("of10 actions %+v", a)
	}
	fm, _ = finCaptureFlowMod(t, "gbp-of13")
	if tn, mt := fm.Match.Key.Tunnel, fm.Match.Mask.Tunnel; tn.GbpID != 0x1000 || mt.GbpID != 0xf000 || tn.ID != 0x64 {
		t.Errorf("of13 match %+v / %+v", tn, mt)
	}
	if a := fm.Instructions.Apply; len(a) != 3 || a[1].Type != ActRegMove || a[1].Src != FieldTunGbpID {
		t.Errorf("of13 actions %+v", a)
	}
	fm, _ = finCaptureFlowMod(t, "gbp-of15")
	if tn, mt := fm.Match.Key.Tunnel, fm.Match.Mask.Tunnel; tn.GbpFlags != 8 || mt.GbpFlags != 0xff {
		t.Errorf("of15 match %+v / %+v", tn, mt)
	}
	if a := fm.Instructions.Apply; len(a) != 3 || a[0].Field != FieldTunGbpID || a[1].Field != FieldTunGbpID {
		t.Errorf("of15 actions %+v", a)
	}
}
