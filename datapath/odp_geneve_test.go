package datapath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/flow"
)

// geneveKey is a Geneve packet's key with two options, as the kernel
// passes it up.
func geneveKey() flow.Key {
	var k flow.Key
	k.InPort = 3
	k.Tunnel = flow.Tunnel{IPv4Src: [4]byte{172, 31, 1, 100}, IPv4Dst: [4]byte{172, 31, 1, 1}, TTL: 64, TpSrc: 5000, TpDst: 6081,
		Flags: flow.TunnelKey | flow.TunnelUDPIF}
	opts := []byte{0x01, 0x02, 0x80, 0x01, 0, 0, 0, 0x0a, 0xff, 0xff, 0x05, 0x00}
	copy(k.Tunnel.Metadata.Opts[:], opts)
	k.Tunnel.Metadata.Present = uint64(len(opts))
	k.EthType = flow.EthTypeIPv4
	return k
}

// TestGeneveOptsKey: Geneve options go to the kernel as
// OVS_TUNNEL_KEY_ATTR_GENEVE_OPTS and come back the same; the mask carries
// options of the key's length; ovs-dpctl's text shows them; more option
// bytes than a Key holds, or a length not a multiple of 4, are errors.
func TestGeneveOptsKey(t *testing.T) {
	k := geneveKey()
	b := AppendKey(nil, &k)
	var got flow.Key
	if err := DecodeKey(b, &got); err != nil || got != k {
		t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, got.Tunnel, k.Tunnel)
	}
	m := flow.ExactMask()
	m.Tunnel.Metadata.Opts[4], m.Tunnel.Metadata.Opts[5], m.Tunnel.Metadata.Opts[6], m.Tunnel.Metadata.Opts[7] = 0, 0, 0, 0x0f
	FitMask(&k, &m)
	mb := AppendMask(nil, &k, &m)
	var gm flow.Mask
	if err := DecodeMask(mb, &k, &gm); err != nil {
		t.Fatal(err)
	}
	if gm.Tunnel.Metadata.Present != 0xff || gm.Tunnel.Metadata.Opts[7] != 0x0f || gm.Tunnel.Metadata.Opts[12] != 0 {
		t.Errorf("mask metadata %+v", gm.Tunnel.Metadata)
	}
	if s := flow.Format(&k, &gm); !strings.Contains(s, "geneve({class=0x102,type=0x80,len=4,0xa/0xf}{class=0xffff,type=0x5,len=0})") {
		t.Errorf("format: %s", s)
	}
	for _, n := range []int{6, flow.TunMetadataSpace + 4} {
		bad := append([]byte(nil), b...)
		// Rebuild with a bad option length: key attrs, tunnel nested.
		var kk flow.Key
		kk.Tunnel = k.Tunnel
		bad = AppendKey(nil, &kk)
		bad = replaceGeneve(t, bad, make([]byte, n))
		if err := DecodeKey(bad, &kk); err == nil {
			t.Errorf("%d bytes of options decoded", n)
		}
	}
	if os.Getenv("FUZZ_SEED") == "1" {
		dir := filepath.Join("testdata", "fuzz", "FuzzDecodeKey")
		os.WriteFile(filepath.Join(dir, "geneve-opts"), []byte("go test fuzz v1\n[]byte("+quoteBytes(b)+")\n"), 0o644)
	}
}

// replaceGeneve swaps the Geneve options of an encoded key for opts.
func replaceGeneve(t *testing.T, key, opts []byte) []byte {
	t.Helper()
	var k flow.Key
	if err := DecodeKey(key, &k); err != nil {
		t.Fatal(err)
	}
	k.Tunnel.Flags &^= flow.TunnelUDPIF
	k.Tunnel.Metadata = flow.TunMetadata{}
	b := AppendKey(nil, &k)
	// The tunnel attribute is the first nested one: grow it by opts.
	for i := 0; i+4 <= len(b); {
		l := int(b[i]) | int(b[i+1])<<8
		typ := int(b[i+2]) | int(b[i+3])<<8
		if typ&0x3fff == int(KeyAttrTunnel) {
			attr := []byte{byte(4 + len(opts)), byte((4 + len(opts)) >> 8), tunAttrGeneveOpts, 0}
			attr = append(attr, opts...)
			for len(attr)%4 != 0 {
				attr = append(attr, 0)
			}
			nl := l + len(attr)
			out := append([]byte(nil), b[:i]...)
			out = append(out, byte(nl), byte(nl>>8), b[i+2], b[i+3])
			out = append(out, b[i+4:i+l]...)
			out = append(out, attr...)
			return append(out, b[i+((l+3)&^3):]...)
		}
		i += (l + 3) &^ 3
	}
	t.Fatal("no tunnel attribute")
	return nil
}

func quoteBytes(b []byte) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, c := range b {
		sb.WriteString("\\x")
		sb.WriteByte("0123456789abcdef"[c>>4])
		sb.WriteByte("0123456789abcdef"[c&15])
	}
	sb.WriteByte('"')
	return sb.String()
}
