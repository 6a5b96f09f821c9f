package ofproto

import (
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestXlateDecTTLIDs: a packet whose TTL runs out at dec_ttl() (no ids,
// as ovn-controller writes it) is dropped without a packet-in; plain
// dec_ttl sends it to controller id 0, dec_ttl(5,0) to ids 5 and 0; a TTL
// that does not run out is decremented by either form.
func TestXlateDecTTLIDs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ids   []uint16
		ttl   uint8
		pins  int
		ext   []uint16 // controller ids of the packet-ins with a controller id
		drops bool
	}{
		{"dec_ttl() expired", []uint16{}, 1, 0, nil, true},
		{"dec_ttl expired", nil, 1, 1, nil, true},
		{"dec_ttl(5,0) expired", []uint16{5, 0}, 1, 2, []uint16{5}, true},
		{"dec_ttl() live", []uint16{}, 9, 0, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := testBridge(t)
			x.ControllerPID.Store(77)
			mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff }, 1,
				apply(openflow.Action{Type: openflow.ActDecNwTTL, IDs: tc.ids}, openflow.Output(2, 0)))
			k := pkt(11)
			k.NwTTL = tc.ttl
			var out Out
			x.Translate(&k, t0, true, &out)
			acts := parseActs(t, out.Actions)
			pins, outputs := 0, 0
			var ext []uint16
			for _, a := range acts {
				switch a.Type {
				case datapath.ActionUserspace:
					pins++
					if e := parsePacketInExt(a.Userspace.Userdata); e != nil {
						ext = append(ext, e.ControllerID)
					}
				case datapath.ActionOutput:
					outputs++
				}
			}
			if pins != tc.pins || (outputs == 0) != tc.drops || len(ext) != len(tc.ext) {
				t.Fatalf("actions %q: %d packet-ins (ids %v), %d outputs", datapath.FormatActions(out.Actions), pins, ext, outputs)
			}
			for i := range ext {
				if ext[i] != tc.ext[i] {
					t.Errorf("packet-in %d to controller id %d, want %d", i, ext[i], tc.ext[i])
				}
			}
			if !tc.drops && (len(acts) < 2 || acts[0].Type != datapath.ActionSetMasked && acts[0].Type != datapath.ActionSet) {
				t.Errorf("actions %q: the TTL is not decremented", datapath.FormatActions(out.Actions))
			}
		})
	}
}
