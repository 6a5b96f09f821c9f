package ofproto

import (
	"testing"

	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// FuzzGeneveOpts: Geneve options from the datapath (any bytes a kernel
// key can carry) never panic the conversion to tun_metadata fields nor
// the mask's conversion back, and the mask stays within the options.
func FuzzGeneveOpts(f *testing.F) {
	f.Add([]byte{0xff, 0xff, 0x00, 0x01, 0, 0, 0, 0x0a})
	f.Add([]byte{0x01, 0x02, 0x80, 0x01, 0, 0, 0, 0x0a, 0x01, 0x03, 0x85, 0x00})
	f.Add([]byte{0x01, 0x02, 0x80, 0x1f})
	f.Add([]byte{0xff, 0xff, 0x00, 0x02, 1, 2, 3, 4, 5, 6, 7, 8})
	var tbl TLVTable
	if err := tbl.Apply(openflow.TLVTableAdd, []openflow.TLVMap{{Class: 0xffff, Type: 0, Len: 4, Index: 0},
		{Class: 0x0102, Type: 0x80, Len: 4, Index: 1}, {Class: 0xffff, Type: 0x88, Len: 8, Index: 2}}); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { tbl.Apply(openflow.TLVTableClear, nil) })
	f.Fuzz(func(t *testing.T, opts []byte) {
		if len(opts) > flow.TunMetadataSpace {
			opts = opts[:flow.TunMetadataSpace]
		}
		var key flow.Tunnel
		copy(key.Metadata.Opts[:], opts)
		key.Metadata.Present = uint64(len(opts))
		key.Flags = flow.TunnelUDPIF
		mapped := key
		ok := tbl.tunMDFromDatapath(&mapped)
		wc := flow.Tunnel{Metadata: flow.TunMetadata{Present: mapped.Metadata.Present}}
		for i := range wc.Metadata.Opts {
			wc.Metadata.Opts[i] = 0xff
		}
		tbl.tunMDMaskToDatapath(&key, &wc)
		if len(opts) > 0 && wc.Metadata.Present != 0xff {
			t.Fatalf("mask length %d", wc.Metadata.Present)
		}
		for i := len(opts); i < len(wc.Metadata.Opts); i++ {
			if wc.Metadata.Opts[i] != 0 {
				t.Fatalf("mask byte %d beyond %d option bytes", i, len(opts))
			}
		}
		if ok {
			var out flow.Tunnel
			tbl.tunMDToDatapath(&mapped.Metadata, &out)
			if out.Metadata.Present > flow.TunMetadataSpace {
				t.Fatalf("options of %d bytes", out.Metadata.Present)
			}
		}
	})
}
