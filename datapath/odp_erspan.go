package datapath

import (
	"encoding/binary"

	"github.com/govswitch/govswitch/flow"
)

// erspanOptsLen is the size of struct erspan_metadata
// (include/uapi/linux/erspan.h), the payload of
// OVS_TUNNEL_KEY_ATTR_ERSPAN_OPTS: the version as a host-order int, then
// a union of the type II index (big-endian) and the type III struct
// erspan_md2 (timestamp, sgt, then the bit fields in wire order).
//
//	bytes 0-3   version (1 or 2), host order
//	bytes 4-7   v1: index, big-endian       v2: timestamp
//	bytes 8-9                               v2: sgt
//	byte  10                                v2: p(7) ft(6-2) hwid bits 5-4 (1-0)
//	byte  11                                v2: hwid bits 3-0 (7-4) dir(3) gra(2-1) o(0)
const erspanOptsLen = 12

// ERSPAN version masks of what a key's erspan_metadata carries.
const (
	erspanHwidMask = 0x3f
	erspanDirMask  = 0x01
)

// putErspanOpts writes the erspan_metadata of tunnel values vt into p
// (erspanOptsLen bytes, zeroed), laid out for version ver (the key's: a
// mask follows its key's layout). Only the fields of that version are
// written; the type III timestamp, sgt and the p, ft, gra and o bits are
// the device's to fill and stay zero.
func putErspanOpts(p []byte, ver uint8, vt *flow.Tunnel) {
	binary.NativeEndian.PutUint32(p[0:4], uint32(vt.ErspanVer))
	switch ver {
	case 1:
		binary.BigEndian.PutUint32(p[4:8], vt.ErspanIdx)
	case 2:
		p[10] = vt.ErspanHwid >> 4 & 0x3
		p[11] = vt.ErspanHwid&0xf<<4 | vt.ErspanDir&1<<3
	}
}

// decodeErspanOpts decodes an erspan_metadata payload d into t. A key
// carries the fields of its version (other versions keep only the
// version, as OVS does; version 0, which only a masked key can have,
// is none); a mask (isMask) carries every field's bits, its
// version mask saturating at 0xff. The type III timestamp and the other
// header bits the kernel copies from the packet are not kept: nothing
// matches on them.
func decodeErspanOpts(d []byte, t *flow.Tunnel, isMask bool) error {
	if len(d) != erspanOptsLen {
		return keyErr("erspan options of %d bytes, want %d", len(d), erspanOptsLen)
	}
	ver := binary.NativeEndian.Uint32(d[0:4])
	idx := binary.BigEndian.Uint32(d[4:8])
	dir := d[11] >> 3 & 1
	hwid := d[10]&0x3<<4 | d[11]>>4
	if isMask {
		t.ErspanVer = uint8(min(ver, 0xff))
		t.ErspanIdx, t.ErspanDir, t.ErspanHwid = idx, dir, hwid
		return nil
	}
	if ver > 0xff {
		return keyErr("erspan version %d", ver)
	}
	t.ErspanVer = uint8(ver)
	switch ver {
	case 1:
		t.ErspanIdx = idx
	case 2:
		t.ErspanDir, t.ErspanHwid = dir, hwid
	}
	return nil
}

// fitErspan fits the ERSPAN part of tunnel mask mt to key tunnel kt: none
// for a key without ERSPAN metadata (the kernel has no options to match
// then; only an erspan vport gives a packet any, and every megaflow
// matches in_port exactly, so no packet with them can match), only the fields of the key's version, each within its width, and
// the version exact whenever any of them is matched (a field means
// nothing without it).
func fitErspan(kt, mt *flow.Tunnel) {
	switch kt.ErspanVer {
	case 1:
		mt.ErspanDir, mt.ErspanHwid = 0, 0
	case 2:
		mt.ErspanIdx = 0
		mt.ErspanDir &= erspanDirMask
		mt.ErspanHwid &= erspanHwidMask
	case 0:
		mt.ErspanVer, mt.ErspanIdx, mt.ErspanDir, mt.ErspanHwid = 0, 0, 0, 0
	default:
		mt.ErspanIdx, mt.ErspanDir, mt.ErspanHwid = 0, 0, 0
	}
	if mt.ErspanIdx != 0 || mt.ErspanDir != 0 || mt.ErspanHwid != 0 {
		mt.ErspanVer = 0xff
	}
}
