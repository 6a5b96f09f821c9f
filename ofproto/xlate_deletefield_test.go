package ofproto

import (
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestXlateDeleteField: a packet from the Geneve port with two mapped
// options goes back out the port; delete_field:tun_metadata0 drops that
// option from set(tunnel(...)) and keeps the other, a set_field after it
// brings it back, and delete_field of a field the packet lacks does
// nothing. A delete_field of another field is refused with
// OFPBAC_BAD_ARGUMENT, as ovs-vswitchd's check_DELETE_FIELD refuses it.
func TestXlateDeleteField(t *testing.T) {
	bk, br0, g0 := geneveBridge(t, openflow.TLVMap{Class: 0xffff, Type: 0, Len: 4, Index: 0},
		openflow.TLVMap{Class: 0x0102, Type: 0x80, Len: 4, Index: 1}, openflow.TLVMap{Class: 0x0102, Type: 0x81, Len: 4, Index: 2})
	var set flow.Key
	loc := openflow.CurrentTunMDLayout()[0]
	copy(set.Tunnel.Metadata.Opts[loc.Off:], []byte{0, 0, 0, 0x0c})
	del := func(n int) openflow.Action {
		return openflow.DeleteField(openflow.FieldTunMetadata0 + openflow.Field(n))
	}
	out1 := openflow.Output(openflow.PortInPort, 0)
	for _, tc := range []struct {
		name string
		acts []openflow.Action
		want string
	}{
		{"none", []openflow.Action{out1}, "geneve({class=0xffff,type=0,len=4,0xa}{class=0x102,type=0x80,len=4,0x1234})"},
		{"delete 0", []openflow.Action{del(0), out1}, "geneve({class=0x102,type=0x80,len=4,0x1234})"},
		{"delete both", []openflow.Action{del(0), del(1), out1}, ""},
		{"delete absent 2", []openflow.Action{del(2), out1}, "geneve({class=0xffff,type=0,len=4,0xa}{class=0x102,type=0x80,len=4,0x1234})"},
		{"delete then set", []openflow.Action{del(0), openflow.SetField(openflow.FieldTunMetadata0, &set), out1},
			"geneve({class=0xffff,type=0,len=4,0xc}{class=0x102,type=0x80,len=4,0x1234})"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m classifier.Match
			m.Key.InPort, m.Mask.InPort = g0.OFPort, ^uint32(0)
			fm := FlowMod{Command: CmdAdd, Match: m, Priority: 100, OutPort: openflow.PortAny,
				Instructions: openflow.Instructions{Apply: tc.acts}}
			if err := checkSupported(tc.acts); err != nil {
				t.Fatal(err)
			}
			if err := br0.Tables.Apply(&fm, time.Now()); err != nil {
				t.Fatal(err)
			}
			rx := flow.Metadata{InPort: g0.DPPort, Tunnel: flow.Tunnel{IPv4Src: [4]byte{10, 0, 0, 2}, IPv4Dst: [4]byte{10, 0, 0, 1},
				TTL: 64, TpDst: 6081, Flags: flow.TunnelKey | flow.TunnelUDPIF}}
			opts := []byte{0xff, 0xff, 0x00, 0x01, 0, 0, 0, 0x0a, 0x01, 0x02, 0x80, 0x01, 0, 0, 0x12, 0x34}
			copy(rx.Tunnel.Metadata.Opts[:], opts)
			rx.Tunnel.Metadata.Present = uint64(len(opts))
			var key flow.Key
			flow.ExtractInto(&key, synFrame(8), &rx)
			out := Out{Actions: make([]byte, 0, 1024)}
			bk.Translate(&key, time.Now(), true, &out)
			got := datapath.FormatActions(out.Actions)
			want := "set(tunnel(dst=10.0.0.2,ttl=64,tp_dst=6081," + tc.want
			if tc.want == "" {
				want = "set(tunnel(dst=10.0.0.2,ttl=64,tp_dst=6081,flags(df)))"
			}
			if !strings.HasPrefix(got, want) {
				t.Errorf("actions %s, want %s...", got, want)
			}
		})
	}
	err := checkSupported([]openflow.Action{openflow.DeleteField(openflow.FieldReg0)})
	if typ, code := flowModError(openflow.Version13, err); typ != openflow.ErrTypeBadAction || code != openflow.BadActionBadArgument {
		t.Errorf("delete_field:reg0: %v (%d,%d), want OFPBAC_BAD_ARGUMENT", err, typ, code)
	}
}

// TestDeleteFieldText: bridge/dump-flows and ofproto/trace name the
// field, as ovs-ofctl prints delete_field.
func TestDeleteFieldText(t *testing.T) {
	a := openflow.DeleteField(openflow.FieldTunMetadata0 + 3)
	if got, want := ActionString(&a), "delete_field:tun_metadata3"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
