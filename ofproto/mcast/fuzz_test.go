package mcast

import (
	"testing"
	"time"
)

// FuzzUpdate feeds arbitrary frames through Parse and Update: neither
// may panic, and the table stays within its size.
func FuzzUpdate(f *testing.F) {
	f.Add(igmpFrame([4]byte{10, 0, 0, 1}, v2(IGMPv2Report, [4]byte{239, 1, 1, 1})))
	f.Add(igmpFrame([4]byte{10, 0, 0, 1}, v2(IGMPQuery, [4]byte{})))
	f.Add(igmpFrame([4]byte{10, 0, 0, 1}, v3(rec{ChangeToExclude, [4]byte{239, 2, 2, 2}, 3}, rec{ModeIsInclude, [4]byte{239, 3, 3, 3}, 0})))
	f.Add([]byte{0x33, 0x33, 0, 0, 0, 1, 2, 0, 0, 0, 0, 1, 0x86, 0xdd, 0x60, 0, 0, 0, 0, 8, 58, 1})
	tb := New()
	tb.Configure(0, 10, true)
	f.Fuzz(func(t *testing.T, b []byte) {
		p, ok := Parse(b)
		if !ok {
			return
		}
		p.Type()
		tb.Update(&p, 1, 2, time.Unix(1000, 0))
		for r := NewRecords(p.Msg, p.IPv6); r.Next(); {
		}
		// The same message with its checksum made right, to reach
		// the table.
		if !p.IPv6 && len(p.Msg) >= 8 {
			c := append([]byte(nil), b...)
			q, _ := Parse(c)
			q.Msg[2], q.Msg[3] = 0, 0
			s := checksum(q.Msg, 0)
			q.Msg[2], q.Msg[3] = byte(s>>8), byte(s)
			tb.Update(&q, 1, 3, time.Unix(1000, 0))
		}
		if tb.Len() > 10 {
			t.Fatalf("table holds %d groups, size 10", tb.Len())
		}
	})
}
