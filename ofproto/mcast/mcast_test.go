package mcast

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"
)

var t0 = time.Unix(1_000_000, 0)

func g4(a, b, c, d byte) Group { return IPv4Group(0, [4]byte{a, b, c, d}) }

// igmpFrame builds an untagged Ethernet frame with an IPv4 header
// (with the router alert option, as hosts send it) and msg as its IGMP
// payload, the IGMP checksum filled in.
func igmpFrame(src [4]byte, msg []byte) []byte {
	m := append([]byte(nil), msg...)
	binary.BigEndian.PutUint16(m[2:], 0)
	binary.BigEndian.PutUint16(m[2:], checksum(m, 0))
	f := make([]byte, 14, 14+24+len(m))
	copy(f, []byte{0x01, 0x00, 0x5e, 0, 0, 0x16, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00})
	ip := []byte{
		0x46, 0xc0, 0, 0, // v4, IHL 6; tos; total length
		0, 0, 0, 0, // id, flags, fragment
		1, 2, 0, 0, // ttl, proto IGMP, checksum
		src[0], src[1], src[2], src[3],
		224, 0, 0, 22,
		0x94, 0x04, 0, 0, // router alert
	}
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)+len(m)))
	f = append(f, ip...)
	return append(f, m...)
}

func v2(typ byte, grp [4]byte) []byte {
	return []byte{typ, 0, 0, 0, grp[0], grp[1], grp[2], grp[3]}
}

type rec struct {
	typ  byte
	grp  [4]byte
	srcs int
}

func v3(recs ...rec) []byte {
	m := []byte{IGMPv3Report, 0, 0, 0, 0, 0, 0, byte(len(recs))}
	for _, r := range recs {
		m = append(m, r.typ, 0, 0, byte(r.srcs), r.grp[0], r.grp[1], r.grp[2], r.grp[3])
		for i := 0; i < r.srcs; i++ {
			m = append(m, 10, 0, 0, byte(i+1))
		}
	}
	return m
}

func update(t *testing.T, tb *Table, frame []byte, port uint32, now time.Time) int {
	t.Helper()
	f, ok := Parse(frame)
	if !ok {
		t.Fatalf("Parse failed on %x", frame)
	}
	return tb.Update(&f, 0, port, now)
}

func show(tb *Table, now time.Time) string {
	s := ""
	for _, e := range tb.Entries(now) {
		if e.Querier {
			s += fmt.Sprintf("%d querier %d;", e.Port, e.Age)
		} else {
			s += fmt.Sprintf("%d %d.%d.%d.%d %d;", e.Port, e.Group[12], e.Group[13], e.Group[14], e.Group[15], e.Age)
		}
	}
	return s
}

func TestIGMPReportsAndLeaves(t *testing.T) {
	host := [4]byte{10, 0, 0, 1}
	tests := []struct {
		name  string
		steps []struct {
			port uint32
			msg  []byte
		}
		want string
	}{
		{"v2 report", []struct {
			port uint32
			msg  []byte
		}{{1, v2(IGMPv2Report, [4]byte{239, 1, 1, 1})}}, "1 239.1.1.1 0;"},
		{"v1 report", []struct {
			port uint32
			msg  []byte
		}{{2, v2(IGMPv1Report, [4]byte{239, 1, 1, 2})}}, "2 239.1.1.2 0;"},
		{"v2 leave", []struct {
			port uint32
			msg  []byte
		}{{1, v2(IGMPv2Report, [4]byte{239, 1, 1, 1})}, {2, v2(IGMPv2Report, [4]byte{239, 1, 1, 1})}, {1, v2(IGMPv2Leave, [4]byte{239, 1, 1, 1})}}, "2 239.1.1.1 0;"},
		{"v3 exclude joins, include none leaves", []struct {
			port uint32
			msg  []byte
		}{
			{3, v3(rec{ChangeToExclude, [4]byte{239, 2, 2, 2}, 0}, rec{ModeIsInclude, [4]byte{239, 3, 3, 3}, 2})},
			{4, v3(rec{ModeIsExclude, [4]byte{239, 2, 2, 2}, 0})},
			{3, v3(rec{ChangeToInclude, [4]byte{239, 2, 2, 2}, 0})},
		}, "3 239.3.3.3 0;4 239.2.2.2 0;"},
		{"v3 unknown record type ends the walk", []struct {
			port uint32
			msg  []byte
		}{{5, v3(rec{ModeIsExclude, [4]byte{239, 5, 5, 5}, 0}, rec{9, [4]byte{239, 6, 6, 6}, 0}, rec{ModeIsExclude, [4]byte{239, 7, 7, 7}, 0})}}, "5 239.5.5.5 0;"},
		{"query marks a router port", []struct {
			port uint32
			msg  []byte
		}{{6, v2(IGMPQuery, [4]byte{})}, {6, v2(IGMPv2Report, [4]byte{239, 1, 1, 1})}}, "6 querier 0;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := New()
			for _, s := range tt.steps {
				update(t, tb, igmpFrame(host, s.msg), s.port, t0)
			}
			if got := show(tb, t0); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestBadChecksumAndQueryFromZero(t *testing.T) {
	tb := New()
	f := igmpFrame([4]byte{10, 0, 0, 1}, v2(IGMPv2Report, [4]byte{239, 1, 1, 1}))
	f[len(f)-1] ^= 1
	if n := update(t, tb, f, 1, t0); n != 0 || tb.Len() != 0 {
		t.Errorf("bad checksum learned %d", n)
	}
	update(t, tb, igmpFrame([4]byte{}, v2(IGMPQuery, [4]byte{})), 1, t0)
	if s := show(tb, t0); s != "" {
		t.Errorf("query from 0.0.0.0 learned: %q", s)
	}
}

func TestAgingSizeAndPorts(t *testing.T) {
	tb := New()
	tb.Configure(20*time.Second, 10, true)
	if tb.Aging() != 20*time.Second || tb.Size() != 10 {
		t.Fatalf("aging %v size %d", tb.Aging(), tb.Size())
	}
	tb.Configure(time.Second, 1, true) // clamped, as OVS clamps
	if tb.Aging() != 15*time.Second || tb.Size() != 10 {
		t.Fatalf("clamp: aging %v size %d", tb.Aging(), tb.Size())
	}
	for i := 0; i < 12; i++ {
		tb.Join(g4(239, 0, 0, byte(i)), 1, t0.Add(time.Duration(i)*time.Second))
	}
	if tb.Len() != 10 {
		t.Fatalf("len %d after 12 joins into 10", tb.Len())
	}
	if _, ok := tb.Members(g4(239, 0, 0, 0), nil); ok {
		t.Errorf("oldest group not evicted")
	}
	if got := show(tb, t0.Add(14*time.Second)); got[:16] != "1 239.0.0.2 12;1" {
		t.Errorf("ages: %q", got)
	}
	// Groups .2 to .11 remain, joined at t0+2s ... t0+11s, aging 15 s.
	if tb.Expire(t0.Add(16 * time.Second)); tb.Len() != 10 {
		t.Errorf("expired early: len %d", tb.Len())
	}
	if tb.Expire(t0.Add(17 * time.Second)); tb.Len() != 9 {
		t.Errorf("group .2 did not expire at its time: len %d", tb.Len())
	}
	tb.Expire(t0.Add(30 * time.Second))
	if tb.Len() != 0 {
		t.Errorf("len %d after every member aged out", tb.Len())
	}

	tb.AddMrouter(0, 7, t0)
	if got := tb.Mrouters(0, nil); len(got) != 1 || got[0] != 7 {
		t.Errorf("mrouters %v", got)
	}
	if tb.Join(g4(239, 1, 1, 1), 7, t0) || tb.Len() != 0 {
		t.Errorf("a router port was recorded as a member")
	}
	tb.Expire(t0.Add(MrouterAging))
	if got := tb.Mrouters(0, nil); len(got) != 0 {
		t.Errorf("router port did not age out: %v", got)
	}

	tb.SetPorts([]uint32{3}, []uint32{4})
	v := tb.Version()
	if tb.Join(g4(239, 1, 1, 1), 3, t0) || tb.AddMrouter(0, 3, t0) {
		t.Errorf("a flood port was learned")
	}
	tb.Join(g4(239, 1, 1, 1), 4, t0)
	if tb.Leave(g4(239, 1, 1, 1), 4) {
		t.Errorf("a flood-reports port left on a leave")
	}
	if tb.Version() == v {
		t.Errorf("a new member did not change the version")
	}
	v = tb.Version()
	tb.Join(g4(239, 1, 1, 1), 4, t0.Add(time.Second))
	if tb.Version() != v {
		t.Errorf("a refresh changed the version")
	}
	tb.Flush()
	if tb.Len() != 0 || tb.Version() == v || len(tb.FloodPorts(nil)) != 1 {
		t.Errorf("flush: len %d flood %v", tb.Len(), tb.FloodPorts(nil))
	}
}

func TestConfigureMovesExpiry(t *testing.T) {
	tb := New()
	tb.Join(g4(239, 1, 1, 1), 1, t0)
	tb.Configure(60*time.Second, 0, true)
	if got := show(tb, t0.Add(10*time.Second)); got != "1 239.1.1.1 10;" {
		t.Errorf("got %q", got)
	}
	tb.Expire(t0.Add(59 * time.Second))
	if tb.Len() != 1 {
		t.Fatalf("expired early")
	}
	tb.Expire(t0.Add(60 * time.Second))
	if tb.Len() != 0 {
		t.Errorf("did not expire at 60 s")
	}
}

func TestMembersOrderAndLookupAllocs(t *testing.T) {
	tb := New()
	g := g4(239, 1, 1, 1)
	tb.Join(g, 1, t0)
	tb.Join(g, 2, t0)
	tb.Join(g, 1, t0.Add(time.Second)) // refreshed: after 2
	tb.AddMrouter(0, 9, t0)
	buf := make([]uint32, 0, 8)
	got, ok := tb.Members(g, buf)
	if !ok || fmt.Sprint(got) != "[2 1]" {
		t.Errorf("members %v %v", got, ok)
	}
	allocs := testing.AllocsPerRun(100, func() {
		b, _ := tb.Members(g, buf[:0])
		b = tb.Mrouters(0, b)
		b = tb.FloodPorts(b)
		_ = tb.FloodReportsPorts(b)
		tb.Join(g, 2, t0) // a refresh
	})
	if allocs != 0 {
		t.Errorf("lookups and refresh allocate %v per run", allocs)
	}
}

func TestParseTaggedAndMLD(t *testing.T) {
	f := igmpFrame([4]byte{10, 0, 0, 1}, v2(IGMPv2Report, [4]byte{239, 1, 1, 1}))
	tagged := append(append(append([]byte(nil), f[:12]...), 0x81, 0x00, 0x00, 0x0a), f[12:]...)
	p, ok := Parse(tagged)
	if !ok || p.Type() != IGMPv2Report || !p.ChecksumOK() {
		t.Fatalf("tagged: %v %+v", ok, p)
	}
	// An MLDv2 report for ff05::1:3 with a hop-by-hop router alert.
	src := [16]byte{0xfe, 0x80, 15: 1}
	dst := [16]byte{0xff, 0x02, 15: 0x16}
	msg := []byte{MLDv2Report, 0, 0, 0, 0, 0, 0, 1,
		ChangeToExclude, 0, 0, 0, 0xff, 0x05, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 3}
	hbh := []byte{58, 0, 5, 2, 0, 0, 1, 0}
	ip := make([]byte, 40)
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], uint16(len(hbh)+len(msg)))
	ip[6], ip[7] = 0, 1
	copy(ip[8:], src[:])
	copy(ip[24:], dst[:])
	var sum uint32
	for i := 8; i < 40; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	sum += uint32(len(msg)) + 58
	binary.BigEndian.PutUint16(msg[2:], checksum(msg, sum))
	frame := append([]byte{0x33, 0x33, 0, 0, 0, 0x16, 2, 0, 0, 0, 0, 1, 0x86, 0xdd}, ip...)
	frame = append(append(frame, hbh...), msg...)
	p, ok = Parse(frame)
	if !ok || !p.IPv6 || p.Type() != MLDv2Report || !p.ChecksumOK() {
		t.Fatalf("mld: %v %+v", ok, p)
	}
	tb := New()
	if n := tb.Update(&p, 0, 1, t0); n != 1 {
		t.Fatalf("mld learned %d", n)
	}
	want := Group{Addr: [16]byte{0xff, 0x05, 13: 1, 15: 3}}
	if _, ok := tb.Members(want, nil); !ok || want.IsIPv4() || !g4(1, 2, 3, 4).IsIPv4() {
		t.Errorf("ff05::1:3 not learned")
	}
}
