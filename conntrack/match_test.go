package conntrack

import (
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// parseArgs parses dpctl/flush-conntrack's tuple arguments, orig then reply.
func parseArgs(args ...string) (Match, error) {
	var m Match
	for i, a := range args {
		if a == "" {
			continue
		}
		if err := ParseTuple(a, &m, i == 1); err != nil {
			return m, err
		}
	}
	return m, nil
}

var (
	a4 = netip.MustParseAddr("10.1.1.1")
	b4 = netip.MustParseAddr("10.1.1.2")
	a6 = netip.MustParseAddr("fc00::1")
	b6 = netip.MustParseAddr("fc00::2")
)

// TestParseTuple: the tuples OVS's "conntrack - ct flush" test and its
// manual give, and ovs-vswitchd 3.1's error texts for bad ones.
func TestParseTuple(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want Match
		err  string
	}{
		{name: "five-tuple", args: []string{"ct_nw_src=10.1.1.2,ct_nw_dst=10.1.1.1,ct_nw_proto=17,ct_tp_src=2,ct_tp_dst=1"},
			want: Match{Proto: 17, Family: unix.AF_INET, Orig: MatchTuple{Src: b4, Dst: a4, SrcPort: 2, DstPort: 1}}},
		{name: "icmp", args: []string{"ct_nw_src=10.1.1.2,ct_nw_dst=10.1.1.1,ct_nw_proto=1,icmp_id=4660,icmp_type=8,icmp_code=0"},
			want: Match{Proto: 1, Family: unix.AF_INET, Orig: MatchTuple{Src: b4, Dst: a4, ICMPID: 4660, ICMPType: 8}}},
		{name: "partial", args: []string{"ct_nw_proto=17,ct_tp_src=1"},
			want: Match{Proto: 17, Orig: MatchTuple{SrcPort: 1}}},
		{name: "reply only", args: []string{"", "ct_nw_src=10.1.1.2"},
			want: Match{Family: unix.AF_INET, Reply: MatchTuple{Src: b4}}},
		{name: "ipv6 both", args: []string{"ct_ipv6_src=fc00::1", "ct_ipv6_dst=fc00::2,ct_nw_proto=6"},
			want: Match{Proto: 6, Family: unix.AF_INET6, Orig: MatchTuple{Src: a6}, Reply: MatchTuple{Dst: b6}}},
		{name: "ipv6 zero is any", args: []string{"ct_ipv6_src=::"},
			want: Match{Family: unix.AF_INET6}},
		{name: "ipv4 zero is an address", args: []string{"ct_nw_src=0.0.0.0"},
			want: Match{Family: unix.AF_INET, Orig: MatchTuple{Src: netip.IPv4Unspecified()}}},
		{name: "hex and spaces", args: []string{"ct_nw_proto=0x11, ct_tp_dst=0x50"},
			want: Match{Proto: 17, Orig: MatchTuple{DstPort: 80}}},
		{name: "colon delimiter", args: []string{"ct_nw_proto:6"}, want: Match{Proto: 6}},

		{name: "no value", args: []string{"ct_nw_src"}, err: "field ct_nw_src missing value"},
		{name: "empty value", args: []string{"ct_nw_src="}, err: "field ct_nw_src missing value"},
		{name: "datapath name", args: []string{"system@ovs-system"}, err: "field system@ovs-system missing value"},
		{name: "bad address", args: []string{"ct_nw_src=10.1.1"}, err: "failed to parse field ct_nw_src"},
		{name: "ipv6 in ipv4 field", args: []string{"ct_nw_dst=fc00::1"}, err: "failed to parse field ct_nw_dst"},
		{name: "mixed families", args: []string{"ct_nw_src=10.1.1.1,ct_ipv6_dst=fc00::1"}, err: "the L3 protocol does not match fc00::1"},
		{name: "mixed families across tuples", args: []string{"ct_ipv6_src=fc00::1", "ct_nw_src=10.1.1.1"}, err: "the L3 protocol does not match 10.1.1.1"},
		{name: "twice", args: []string{"ct_nw_src=10.1.1.1,ct_nw_src=10.1.1.2"}, err: "ct_nw_src is set multiple times"},
		{name: "proto too big", args: []string{"ct_nw_proto=256"}, err: "failed to parse field ct_nw_proto"},
		{name: "port too big", args: []string{"ct_nw_proto=6,ct_tp_src=65536"}, err: "failed to parse field ct_tp_src"},
		{name: "go-only number forms", args: []string{"ct_nw_proto=0b1"}, err: "failed to parse field ct_nw_proto"},
		{name: "digit underscores", args: []string{"ct_nw_proto=6,ct_tp_src=1_0"}, err: "failed to parse field ct_tp_src"},
		{name: "port without protocol", args: []string{"ct_tp_src=1"}, err: "port is set without protocol"},
		{name: "icmp without protocol", args: []string{"icmp_id=1"}, err: "invalid L4 fields"},
		{name: "icmp fields for udp", args: []string{"ct_nw_proto=17,icmp_type=8"}, err: "invalid L4 fields"},
		{name: "unknown field", args: []string{"ct_zone=5"}, err: "invalid conntrack tuple field: ct_zone"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseArgs(c.args...)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// The connections of OVS's "conntrack - ct flush" test: UDP from port 1
// in zone 0, UDP from port 2 in zone 5, and a ping from port 2 in zone 5.
var (
	udp1 = Entry{Orig: Tuple{Src: a4, Dst: b4, Proto: 17, SrcPort: 1, DstPort: 2},
		Reply: Tuple{Src: b4, Dst: a4, Proto: 17, SrcPort: 2, DstPort: 1}}
	udp2 = Entry{Orig: Tuple{Src: b4, Dst: a4, Proto: 17, SrcPort: 2, DstPort: 1},
		Reply: Tuple{Src: a4, Dst: b4, Proto: 17, SrcPort: 1, DstPort: 2}, Zone: 5}
	ping2 = Entry{Orig: Tuple{Src: b4, Dst: a4, Proto: 1, ICMPID: 77, ICMPType: 8},
		Reply: Tuple{Src: a4, Dst: b4, Proto: 1, ICMPID: 77}, Zone: 5}
	udp6 = Entry{Orig: Tuple{Src: a6, Dst: b6, Proto: 17, SrcPort: 1, DstPort: 2},
		Reply: Tuple{Src: b6, Dst: a6, Proto: 17, SrcPort: 2, DstPort: 1}}
)

// TestMatches: which connections each partial flush of OVS's test
// selects (zones are FlushMatch's business, not Matches').
func TestMatches(t *testing.T) {
	all := []Entry{udp1, udp2, ping2, udp6}
	for _, c := range []struct {
		name string
		args []string
		want []bool // for udp1, udp2, ping2, udp6
	}{
		{"by src port 1", []string{"ct_nw_proto=17,ct_tp_src=1"}, []bool{true, false, false, true}},
		{"by src port 2", []string{"ct_nw_proto=17,ct_tp_src=2"}, []bool{false, true, false, false}},
		{"by dst port 2", []string{"ct_nw_proto=17,ct_tp_dst=2"}, []bool{true, false, false, true}},
		{"by src address", []string{"ct_nw_src=10.1.1.1"}, []bool{true, false, false, false}},
		{"by dst address", []string{"ct_nw_dst=10.1.1.1"}, []bool{false, true, true, false}},
		{"by reply src", []string{"", "ct_nw_src=10.1.1.2"}, []bool{true, false, false, false}},
		{"by reply src in v6", []string{"", "ct_ipv6_src=fc00::2"}, []bool{false, false, false, true}},
		// ovs-vswitchd compares ICMP id, type and code of both tuples,
		// zeros included: a partial ICMP match needs both tuples.
		{"icmp both tuples", []string{"ct_nw_src=10.1.1.2,ct_nw_proto=1,icmp_id=77,icmp_type=8", "icmp_id=77"}, []bool{false, false, true, false}},
		{"icmp reply zeros are compared", []string{"ct_nw_src=10.1.1.2,ct_nw_proto=1,icmp_id=77,icmp_type=8"}, []bool{false, false, false, false}},
		{"icmp zeros are compared", []string{"ct_nw_src=10.1.1.2,ct_nw_proto=1"}, []bool{false, false, false, false}},
		{"family only", []string{"ct_ipv6_src=::"}, []bool{false, false, false, true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := parseArgs(c.args...)
			if err != nil {
				t.Fatal(err)
			}
			for i := range all {
				if got := m.Matches(&all[i]); got != c.want[i] {
					t.Errorf("%s: %v, want %v", all[i].Format(false, false), got, c.want[i])
				}
			}
		})
	}
}

// TestFlushOne: a full five-tuple with no reply tuple is deleted by its
// tuple in the zone given (zone 0 without one), not searched for; with a
// reply tuple or a port missing it is searched for.
func TestFlushOne(t *testing.T) {
	five := "ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.2,ct_nw_proto=17,ct_tp_src=1,ct_tp_dst=2"
	zone5 := uint16(5)
	for _, c := range []struct {
		name string
		args []string
		zone *uint16
		want *Entry
	}{
		{"udp zone 0", []string{five}, nil, &Entry{Orig: udp1.Orig}},
		{"udp zone 5", []string{five}, &zone5, &Entry{Orig: udp1.Orig, Zone: 5}},
		{"icmp needs addresses only", []string{"ct_nw_src=10.1.1.2,ct_nw_dst=10.1.1.1,ct_nw_proto=1,icmp_id=77,icmp_type=8,icmp_code=0"},
			&zone5, &Entry{Orig: ping2.Orig, Zone: 5}},
		{"with reply tuple", []string{five, "ct_nw_src=10.1.1.2"}, nil, nil},
		{"one port", []string{"ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.2,ct_nw_proto=17,ct_tp_src=1"}, nil, nil},
		{"no address", []string{"ct_nw_proto=17,ct_tp_src=1,ct_tp_dst=2"}, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := parseArgs(c.args...)
			if err != nil {
				t.Fatal(err)
			}
			got := m.one(c.zone)
			if (got == nil) != (c.want == nil) || got != nil && (got.Orig != c.want.Orig || got.Zone != c.want.Zone) {
				t.Errorf("one: %+v, want %+v", got, c.want)
			}
		})
	}
	if m := (Match{}); !m.IsZero() {
		t.Error("the zero Match is not zero")
	}
	if m, _ := parseArgs("ct_nw_proto=17"); m.IsZero() {
		t.Error("a protocol-only Match is zero")
	}
}

func TestMatchString(t *testing.T) {
	m, err := parseArgs("ct_nw_src=10.1.1.1,ct_nw_proto=17,ct_tp_src=1", "ct_nw_dst=10.1.1.1")
	if err != nil {
		t.Fatal(err)
	}
	want := "'ct_nw_src=10.1.1.1,ct_nw_dst=0.0.0.0,ct_tp_src=1,ct_tp_dst=0,ct_nw_proto=17' 'ct_nw_src=0.0.0.0,ct_nw_dst=10.1.1.1,ct_tp_src=0,ct_tp_dst=0'"
	if got := m.String(); got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
}

// FuzzParseTuple: the CLI tuple parser never panics; what it accepts
// formats, and a five-tuple it accepts names one connection of its
// protocol.
func FuzzParseTuple(f *testing.F) {
	for _, s := range []string{
		"ct_nw_src=10.1.1.2,ct_nw_dst=10.1.1.1,ct_nw_proto=17,ct_tp_src=2,ct_tp_dst=1",
		"ct_nw_src=10.1.1.2,ct_nw_dst=10.1.1.1,ct_nw_proto=1,icmp_id=4660,icmp_type=8,icmp_code=0",
		"ct_ipv6_src=fc00::1,ct_ipv6_dst=fc00::2,ct_nw_proto=58,icmp_type=128",
		"ct_nw_proto=17,ct_tp_src=1", "ct_nw_src=10.1.1.1", "ct_tp_dst:0x50", "a,b=,=c,,",
	} {
		f.Add(s, "")
		f.Add("", s)
	}
	f.Fuzz(func(t *testing.T, orig, reply string) {
		m, err := parseArgs(orig, reply)
		if err != nil {
			return
		}
		_ = m.String()
		_ = m.Matches(&udp1)
		if e := m.one(nil); e != nil && (e.Orig.Proto != m.Proto || !e.Orig.Src.IsValid() || !e.Orig.Dst.IsValid()) {
			t.Errorf("%q %q: five-tuple %+v", orig, reply, e.Orig)
		}
		if _, err := encodeKey(&Entry{Orig: m.Orig.tuple(m.Proto)}); m.Orig.isFive(m.Proto) && err != nil {
			t.Errorf("%q: encoding the five-tuple: %v", orig, err)
		}
	})
}
