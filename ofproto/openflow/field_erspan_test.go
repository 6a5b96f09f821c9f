package openflow

import (
	"bytes"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

// erspanCaptures are ovs-ofctl 3.1's flow mods with the ERSPAN fields in
// matches (exact and masked) and as set_field targets, over NXM (OpenFlow
// 1.0: set_field as NXAST_REG_LOAD2) and OXM (1.3 and 1.5).
// TestOvsOfctlErspanFields records them (OFCTL_RECORD=1).
var erspanCaptures = []capture{
	{"add-flow-erspan-nxm", []string{"add-flow", "SW",
		"in_port=1,tun_erspan_ver=2,tun_erspan_dir=1,tun_erspan_hwid=0x7," +
			"actions=set_field:1->tun_erspan_ver,set_field:0x12345->tun_erspan_idx,set_field:0x3f->tun_erspan_hwid,set_field:1->tun_erspan_dir,output:2"}},
	{"add-flow-erspan-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"tun_erspan_ver=1,tun_erspan_idx=0x100/0xff00,actions=set_field:2->tun_erspan_ver,output:2"}},
	{"add-flow-erspan-of15", []string{"-O", "OpenFlow15", "add-flow", "SW",
		"tun_erspan_ver=2,tun_erspan_hwid=0x4/0x3c,actions=set_field:0x5->tun_erspan_hwid,output:2"}},
}

// TestOvsOfctlErspanFields sends the ERSPAN flow mods with the real
// ovs-ofctl to a fake switch; with OFCTL_RECORD=1 it rewrites the
// checked-in captures.
func TestOvsOfctlErspanFields(t *testing.T) {
	liveOrRecordCaptures(t, erspanCaptures)
}

// TestErspanFieldCaptures decodes the recorded ERSPAN flow mods, checks
// the match and the set_field targets, and re-encodes them to ovs-ofctl's
// bytes.
func TestErspanFieldCaptures(t *testing.T) {
	checks := map[string]func(t *testing.T, fm *FlowMod){
		"add-flow-erspan-nxm": func(t *testing.T, fm *FlowMod) {
			k, m := fm.Match.Key.Tunnel, fm.Match.Mask.Tunnel
			// ovs-ofctl sends each value as its own mask (field_erspan.go).
			if k.ErspanVer != 2 || m.ErspanVer != 2 || k.ErspanDir != 1 || m.ErspanDir != 1 || k.ErspanHwid != 7 || m.ErspanHwid != 7 || m.ErspanIdx != 0 {
				t.Errorf("match %+v / %+v", k, m)
			}
			acts := fm.Instructions.Apply
			if len(acts) != 5 {
				t.Fatalf("actions %+v", acts)
			}
			want := []struct {
				f Field
				v flow.Tunnel
			}{
				{FieldTunErspanVer, flow.Tunnel{ErspanVer: 1}},
				{FieldTunErspanIdx, flow.Tunnel{ErspanIdx: 0x12345}},
				{FieldTunErspanHwid, flow.Tunnel{ErspanHwid: 0x3f}},
				{FieldTunErspanDir, flow.Tunnel{ErspanDir: 1}},
			}
			for i, w := range want {
				k, ok := acts[i].setFieldKey()
				if acts[i].Type != ActSetField || acts[i].Field != w.f || !ok || k.Tunnel != w.v {
					t.Errorf("action %d: %+v (key tunnel %+v), want set_field %s %+v", i, acts[i], k.Tunnel, w.f, w.v)
				}
			}
		},
		"add-flow-erspan-of13": func(t *testing.T, fm *FlowMod) {
			k, m := fm.Match.Key.Tunnel, fm.Match.Mask.Tunnel
			if k.ErspanVer != 1 || m.ErspanVer != 1 || k.ErspanIdx != 0x100 || m.ErspanIdx != 0xff00 {
				t.Errorf("match %+v / %+v", k, m)
			}
			if acts := fm.Instructions.Apply; len(acts) != 2 || acts[0].Field != FieldTunErspanVer || acts[0].Value[0] != 2 {
				t.Errorf("actions %+v", acts)
			}
		},
		"add-flow-erspan-of15": func(t *testing.T, fm *FlowMod) {
			k, m := fm.Match.Key.Tunnel, fm.Match.Mask.Tunnel
			if k.ErspanVer != 2 || k.ErspanHwid != 4 || m.ErspanHwid != 4 {
				t.Errorf("match %+v / %+v", k, m)
			}
			if acts := fm.Instructions.Apply; len(acts) != 2 || acts[0].Field != FieldTunErspanHwid || acts[0].Value[0] != 5 {
				t.Errorf("actions %+v", acts)
			}
		},
	}
	for _, c := range erspanCaptures {
		t.Run(c.name, func(t *testing.T) {
			raws := readCapture(t, c.name)
			n := 0
			for i, raw := range raws {
				msg, err := Decode(raw)
				if err != nil {
					t.Fatalf("message %d (% x): %v", i, raw, err)
				}
				out, err := msg.Append(nil)
				if err != nil {
					t.Fatalf("message %d (%T): re-encode: %v", i, msg, err)
				}
				if !bytes.Equal(out, raw) {
					t.Errorf("message %d (%T) re-encodes differently:\n got % x\nwant % x", i, msg, out, raw)
				}
				if fm, ok := msg.(*FlowMod); ok {
					n++
					checks[c.name](t, fm)
				}
			}
			if n != 1 {
				t.Errorf("%d flow mods", n)
			}
		})
	}
}
