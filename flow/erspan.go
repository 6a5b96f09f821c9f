package flow

// erspan prints a tunnel's ERSPAN metadata as OVS's
// format_odp_tun_erspan_opt does, when the key has any (v.ErspanVer set):
// erspan(ver=..,idx=..) for type II, erspan(ver=..,dir=..,hwid=..) for
// type III. With a mask (masked, as in a dumped flow) the version, dir
// and hwid appear when their mask is not zero, with /mask when it is not
// 0xff, and the index always as idx=value/mask; without one (an action),
// every field of the version appears bare. As OVS, it prints the dir and
// hwid fields of struct erspan_md2 as their bit fields hold them: dir's
// mask is one bit, so an exact dir shows as dir=1/0x1, and hwid shows
// its low four bits only.
func (f *formatter) erspan(v, m *Tunnel, masked bool) {
	if v.ErspanVer == 0 {
		return
	}
	f.attr("erspan")
	u8 := func(name string, val, mask uint8, hex bool) {
		if masked && mask == 0 {
			return
		}
		f.field(name)
		if hex {
			f.hexC(uint64(val))
		} else {
			f.dec(uint64(val))
		}
		if masked && mask != 0xff {
			f.b = append(f.b, '/')
			f.hexC(uint64(mask))
		}
	}
	u8("ver", v.ErspanVer, m.ErspanVer, false)
	switch v.ErspanVer {
	case 1:
		f.field("idx")
		f.hexC(uint64(v.ErspanIdx))
		if masked {
			f.b = append(f.b, '/')
			f.hexC(uint64(m.ErspanIdx))
		}
	case 2:
		u8("dir", v.ErspanDir&1, m.ErspanDir&1, false)
		u8("hwid", v.ErspanHwid&0xf, m.ErspanHwid&0xf, true)
	}
	f.end()
}

// AppendErspan appends t's ERSPAN metadata as ovs-dpctl prints it in a
// set(tunnel(...)) action, erspan(ver=1,idx=0x7), or nothing when t has
// none.
func AppendErspan(dst []byte, t *Tunnel) []byte {
	f := formatter{b: dst, start: len(dst)}
	f.erspan(t, t, false)
	return f.b
}
