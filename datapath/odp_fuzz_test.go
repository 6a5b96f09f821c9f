package datapath

import (
	"bytes"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

// Fuzz targets for the decoders of what the kernel sends: flow keys (in
// upcalls and dumps), masks and actions (in dumps). Each must never panic,
// and whatever decodes must re-encode to something that decodes the same.
// Seeds: testdata/fuzz/Fuzz*/ and the f.Add calls below.

func FuzzDecodeKey(f *testing.F) {
	for _, tc := range testKeys() {
		f.Add(AppendKey(nil, &tc.key))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var k flow.Key
		if err := DecodeKey(b, &k); err != nil {
			return
		}
		enc := AppendKey(nil, &k)
		if len(enc) > MaxKeyLen {
			t.Fatalf("AppendKey wrote %d bytes, more than MaxKeyLen", len(enc))
		}
		var k2 flow.Key
		if err := DecodeKey(enc, &k2); err != nil {
			t.Fatalf("re-encoded key does not decode: %v\nkey %+v\n%x", err, k, enc)
		}
		if k2 != k {
			t.Fatalf("decode, encode, decode changed the key\n got %+v\nwant %+v", k2, k)
		}
	})
}

func FuzzDecodeMask(f *testing.F) {
	r := newSeedRand()
	for _, tc := range testKeys() {
		m := randomMask(r)
		exact := flow.ExactMask()
		f.Add(AppendKey(nil, &tc.key), AppendMask(nil, &tc.key, &m))
		f.Add(AppendKey(nil, &tc.key), AppendMask(nil, &tc.key, &exact))
	}
	f.Fuzz(func(t *testing.T, kb, mb []byte) {
		var k flow.Key
		if err := DecodeKey(kb, &k); err != nil {
			return
		}
		var m flow.Mask
		if err := DecodeMask(mb, &k, &m); err != nil {
			return
		}
		enc := AppendMask(nil, &k, &m)
		var m2 flow.Mask
		if err := DecodeMask(enc, &k, &m2); err != nil {
			t.Fatalf("re-encoded mask does not decode: %v\nkey %+v\nmask %+v", err, k, m)
		}
		fm := m
		FitMask(&k, &fm)
		if m2 != fm {
			t.Fatalf("DecodeMask(AppendMask(m)) != FitMask(m)\nkey %+v\n got %+v\nwant %+v", k, m2, fm)
		}
	})
}

func FuzzWalkActions(f *testing.F) {
	for _, s := range []string{
		"1,2", "push_vlan(vid=10,pcp=0),3", "userspace(pid=1234,userdata(01020304),actions)",
		"userspace(pid=5,ipfix(output_port=4),tunnel_out_port=4)",
		"userspace(pid=5,flow_sample(probability=9,collector_set_id=5,obs_domain_id=3,obs_point_id=4,output_port=2,egress))",
		"set(ipv4(src=10.0.0.1/255.255.255.0,ttl=9)),set(tcp(src=1,dst=2)),set(tunnel(tun_id=0x1,dst=1.1.1.1,ttl=2,flags(key)))",
		"ct(commit,zone=1,mark=0x1/0xff,label=0x1,helper=ftp,nat(src=10.0.0.1-10.0.0.2:1-2,random))",
		"sample(sample=50.0%,actions(clone(1),check_pkt_len(size=100,gt(2),le(3))))",
		"recirc(0x1),hash(l4(0)),trunc(100),meter(1),push_mpls(label=1,tc=0,ttl=1,bos=1,eth_type=0x8847),pop_mpls(eth_type=0x800)",
		"dec_ttl(le_1(userspace(pid=1))),push_eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),pop_eth,ct_clear,pop_nsh()",
		"push_nsh(flags=0,ttl=63,mdtype=1,np=3,spi=0x1234,si=255,c1=0x11223344,c2=0x0,c3=0x0,c4=0x0),set(nsh(ttl=7,si=4,c2=0x1/0xff))",
	} {
		b, err := ParseActions(s)
		if err != nil {
			f.Fatalf("seed %q: %v", s, err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = FormatActions(b) // must not panic, even on malformed input
		enc, err := reencode(b)
		if err != nil {
			return
		}
		again, err := reencode(enc)
		if err != nil {
			t.Fatalf("re-encoded actions do not decode: %v\n%x", err, enc)
		}
		if !bytes.Equal(again, enc) {
			t.Fatalf("decode, encode, decode is not stable\n%x\n%x", enc, again)
		}
		// The text of what decodes parses back to the same text, when it
		// has no action OVS has no syntax for.
		text := FormatActions(enc)
		if parsed, err := ParseActions(text); err == nil {
			if again := FormatActions(parsed); again != text {
				t.Fatalf("text not stable:\n%s\n%s", text, again)
			}
		}
	})
}

// reencode decodes b, recursing into nested action lists, and re-encodes
// each action with AppendAction.
func reencode(b []byte) ([]byte, error) {
	var out []byte
	err := WalkActions(b, func(a *Action) error {
		for _, nested := range []*[]byte{&a.Actions, &a.IfGreater, &a.IfLessEq} {
			if *nested == nil {
				continue
			}
			n, err := reencode(*nested)
			if err != nil {
				return err
			}
			if n == nil {
				n = []byte{}
			}
			*nested = n
		}
		if a.Type == ActionSet || a.Type == ActionSetMasked {
			var k flow.Key
			var m flow.Mask
			if err := a.DecodeSet(&k, &m); err != nil {
				return err
			}
		}
		out = AppendAction(out, a)
		return nil
	})
	return out, err
}
