package flow

// gbp prints a tunnel's VXLAN-GBP metadata as OVS's
// format_odp_tun_vxlan_opt does: vxlan(gbp(id=N,flags=0xM)), the ID in
// decimal and the flags in C's %#x (0 is "0"). With a mask (masked, a
// dumped flow) it appears when either mask is not zero, each field when
// its mask is not, with /mask in hex when that is not all ones; without
// one (an action, an upcall key) it appears when the tunnel has any and
// then with both fields bare.
func (f *formatter) gbp(v, m *Tunnel, masked bool) {
	if masked && m.GbpID == 0 && m.GbpFlags == 0 || !masked && v.GbpID == 0 && v.GbpFlags == 0 {
		return
	}
	f.attr("vxlan")
	f.attr("gbp")
	if !masked || m.GbpID != 0 {
		f.field("id")
		f.dec(uint64(v.GbpID))
		if masked && m.GbpID != 0xffff {
			f.b = append(f.b, '/')
			f.hexC(uint64(m.GbpID))
		}
	}
	if !masked || m.GbpFlags != 0 {
		f.field("flags")
		f.hexC(uint64(v.GbpFlags))
		if masked && m.GbpFlags != 0xff {
			f.b = append(f.b, '/')
			f.hexC(uint64(m.GbpFlags))
		}
	}
	f.end()
	f.end()
}

// AppendGbp appends t's VXLAN-GBP metadata as ovs-dpctl prints it in a
// set(tunnel(...)) action, vxlan(gbp(id=32,flags=0)), or nothing when t
// has none.
func AppendGbp(dst []byte, t *Tunnel) []byte {
	f := formatter{b: dst, start: len(dst)}
	f.gbp(t, t, false)
	return f.b
}
