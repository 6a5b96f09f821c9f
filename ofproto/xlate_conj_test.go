package ofproto

import (
	"errors"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// conjACL: to port 2 only from 10.0.0.1 or 10.0.0.5 (clause 1) and to TCP
// port 80 or 443 (clause 2); everything else to port 3.
func conjACL(t *testing.T, x *Xlator) {
	t.Helper()
	for _, src := range [][4]byte{{10, 0, 0, 1}, {10, 0, 0, 5}} {
		mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
			k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
			k.IPv4Src, m.IPv4Src = src, [4]byte{0xff, 0xff, 0xff, 0xff}
		}, 100, apply(openflow.Conjunction(7, 0, 2)))
	}
	for _, port := range []uint16{80, 443} {
		mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
			k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
			k.NwProto, m.NwProto = flow.IPProtoTCP, 0xff
			k.TpDst, m.TpDst = port, 0xffff
		}, 100, apply(openflow.Conjunction(7, 1, 2)))
	}
	mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) { k.ConjID, m.ConjID = 7, 0xffffffff }, 100, apply(openflow.Output(2, 0)))
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 1, apply(openflow.Output(3, 0)))
}

func TestXlateConjunction(t *testing.T) {
	x := testBridge(t)
	conjACL(t, x)
	for _, c := range []struct {
		name string
		src  [4]byte
		port uint16
		want string
	}{
		{"both clauses", [4]byte{10, 0, 0, 1}, 80, "12"},
		{"other source, other port", [4]byte{10, 0, 0, 5}, 443, "12"},
		{"source only", [4]byte{10, 0, 0, 1}, 22, "13"},
		{"port only", [4]byte{10, 0, 0, 9}, 80, "13"},
		{"neither", [4]byte{10, 0, 0, 9}, 22, "13"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := pkt(11)
			k.IPv4Src, k.TpDst = c.src, c.port
			var out Out
			x.Translate(&k, t0, true, &out)
			if got := datapath.FormatActions(out.Actions); got != c.want {
				t.Errorf("actions %q, want %q", got, c.want)
			}
			if out.WC.ConjID != 0 {
				t.Errorf("conj_id in the megaflow mask")
			}
			// The megaflow is right for every packet it covers: it must
			// hold the source and port the answer depended on.
			if c.want == "12" && (out.WC.IPv4Src != [4]byte{0xff, 0xff, 0xff, 0xff} || out.WC.TpDst != 0xffff) {
				t.Errorf("megaflow ip_src %v tp_dst %#x: the answer depended on both", out.WC.IPv4Src, out.WC.TpDst)
			}
			if k.ConjID != 0 {
				t.Errorf("key's conj_id left %d", k.ConjID)
			}
		})
	}
	// Removing a clause's flows turns the conjunction off.
	for _, port := range []uint16{80, 443} {
		del := FlowMod{Command: CmdDeleteStrict, Table: 0, Priority: 100, OutPort: openflow.PortAny, Match: match(func(k *flow.Key, m *flow.Mask) {
			k.EthType, m.EthType = flow.EthTypeIPv4, 0xffff
			k.NwProto, m.NwProto = flow.IPProtoTCP, 0xff
			k.TpDst, m.TpDst = port, 0xffff
		})}
		if err := x.Tables.Apply(&del, t0); err != nil {
			t.Fatal(err)
		}
	}
	k := pkt(11)
	var out Out
	x.Translate(&k, t0, true, &out)
	if got := datapath.FormatActions(out.Actions); got != "13" {
		t.Errorf("after deleting clause 2: %q, want 13", got)
	}
	if x.Tables.View().conj[0] != true {
		t.Error("table 0 still holds clause 1 flows")
	}
}

func TestConjMixRefused(t *testing.T) {
	x := testBridge(t)
	fm := FlowMod{Command: CmdAdd, OutPort: openflow.PortAny,
		Instructions: apply(openflow.Conjunction(1, 0, 2), openflow.Output(2, 0))}
	err := x.Tables.Apply(&fm, t0)
	var e *Error
	if !errors.As(err, &e) || e.Kind != ErrBadConjunction {
		t.Fatalf("err %v, want ErrBadConjunction", err)
	}
	if typ, code := flowModError(openflow.Version10, err); typ != openflow.ErrTypeBadAction || code != 526 {
		t.Errorf("1.0 error %d/%d", typ, code)
	}
}

func TestXlateAllocsConj(t *testing.T) {
	x := testBridge(t)
	conjACL(t, x)
	out := Out{Actions: make([]byte, 0, 1024)}
	k := pkt(11)
	n := testing.AllocsPerRun(1000, func() {
		k.TpSrc++
		x.Translate(&k, t0, true, &out)
	})
	if n != 0 {
		t.Errorf("conjunctive Translate allocates %v per packet", n)
	}
}
