package openflow

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// ipfixStatsAnswer is the fake switch's reply: every counter distinct.
func ipfixStatsAnswer(m *IPFIXStatsRequest) Msg {
	s := IPFIXStats{TotalFlows: 1, CurrentFlows: 2, Packets: 3, IPv4: 4, IPv6: 5, Errors: 6, IPv4Errors: 7, IPv6Errors: 8,
		TxPackets: 9, TxErrors: 10}
	r := &IPFIXStatsReply{Envelope: m.Envelope, Flow: m.Flow, Stats: []IPFIXStats{s}}
	if m.Flow {
		t := s
		t.CollectorSetID, t.Packets = 77, 33
		r.Stats[0].CollectorSetID = 5
		r.Stats = append(r.Stats, t)
	}
	return r
}

// TestOvsOfctlIPFIXStats: ovs-ofctl 3.1's dump-ipfix-bridge and
// dump-ipfix-flow requests decode (and re-encode to its bytes) in
// OpenFlow 1.0 and 1.3, and it prints our replies' counters where
// ovs-vswitchd's go.
func TestOvsOfctlIPFIXStats(t *testing.T) {
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		t.Skip("ovs-ofctl not installed")
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"dump-ipfix-bridge", "SW"}, []string{"bridge ipfix: flows=1, current flows=2, sampled pkts=3, ipv4 ok=4, ipv6 ok=5, tx pkts=9",
			"pkts errs=6, ipv4 errs=7, ipv6 errs=8, tx errs=10"}},
		{[]string{"-O", "OpenFlow13", "dump-ipfix-bridge", "SW"}, []string{"bridge ipfix: flows=1, current flows=2, sampled pkts=3"}},
		{[]string{"dump-ipfix-flow", "SW"}, []string{"id   5: flows=1, current flows=2, sampled pkts=3", "id  77: flows=1, current flows=2, sampled pkts=33"}},
		{[]string{"-O", "OpenFlow13", "dump-ipfix-flow", "SW"}, []string{"id  77: flows=1, current flows=2, sampled pkts=33"}},
	} {
		s := newFakeSwitch(t)
		out := s.ofctl(t, tc.args...)
		raws, msgs := s.take(t)
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out)
			}
		}
		found := false
		for i, m := range msgs {
			if r, ok := m.(*IPFIXStatsRequest); ok {
				found = true
				b, err := r.Append(nil)
				if err != nil || !bytes.Equal(b, raws[i]) {
					t.Errorf("%v: request % x re-encodes as % x (%v)", tc.args, raws[i], b, err)
				}
			}
		}
		if !found {
			t.Errorf("%v: no IPFIX stats request among %T", tc.args, msgs)
		}
	}
}

// TestIPFIXStatsReplyRoundTrip: a reply decodes to what was encoded.
func TestIPFIXStatsReplyRoundTrip(t *testing.T) {
	for _, v := range []uint8{Version10, Version13, Version15} {
		r := ipfixStatsAnswer(&IPFIXStatsRequest{Envelope: Envelope{Version: v, Xid: 9}, Flow: true}).(*IPFIXStatsReply)
		b, err := r.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Decode(b)
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		got, ok := m.(*IPFIXStatsReply)
		if !ok || len(got.Stats) != 2 || got.Stats[1] != r.Stats[1] || !got.Flow {
			t.Errorf("version %d: %+v, want %+v", v, m, r)
		}
	}
}
