package ofproto

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

// TestConnOvsOfctl11And12 drives the real ovs-ofctl over OpenFlow 1.1 and
// 1.2 against the switch: show (ports in the features reply), add-flow,
// dump-flows (held against 1.3's dump of the same tables), del-flows,
// packet-out, dump-ports, dump-tables, mod-port.
func TestConnOvsOfctl11And12(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	of13 := []string{"-O", "OpenFlow13"}
	for _, tc := range []struct {
		name string
		opts []string
		// flow is one only this version (and later ones) can carry.
		flow, match, actions string
	}{
		{"1.1", []string{"-O", "OpenFlow11"}, "table=1,priority=9,ip,metadata=0x5/0xff,dl_src=00:11:22:00:00:00/ff:ff:ff:00:00:00,nw_dst=10.1.0.0/16,actions=mod_dl_dst:00:00:00:00:00:09,output:2",
			"ip,metadata=0x5/0xff,dl_src=00:11:22:00:00:00/ff:ff:ff:00:00:00,nw_dst=10.1.0.0/16", "mod_dl_dst:00:00:00:00:00:09,output:2"},
		{"1.2", []string{"-O", "OpenFlow12"}, "table=1,priority=9,ipv6,ipv6_src=2001:db8::1,actions=set_field:2001:db8::2->ipv6_dst,output:2",
			"ipv6,ipv6_src=2001:db8::1", "set_field:2001:db8::2->ipv6_dst,output:2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			s.ofctl(t, nil, "del-flows")
			s.ofctl(t, of13, "add-flow", "cookie=0x10,priority=100,in_port=1,actions=output:2")
			s.ofctl(t, of13, "add-flow", "priority=300,udp,tp_dst=53,actions=set_field:10.0.0.1->ip_dst,goto_table:3")

			out := s.ofctl(t, opts, "show")
			for _, want := range []string{"OFPT_FEATURES_REPLY (OF" + tc.name + ")", "capabilities: FLOW_STATS TABLE_STATS PORT_STATS",
				" 1(p1): addr:", " 2(p2): addr:", " LOCAL(br0): addr:"} {
				if !strings.Contains(out, want) {
					t.Errorf("show lacks %q:\n%s", want, out)
				}
			}
			want := normalize(s.ofctl(t, of13, "dump-flows"))
			if tc.name == "1.1" {
				// 1.1 has no set_field: the rewrite is its own action.
				want = strings.ReplaceAll(want, "set_field:10.0.0.1->ip_dst", "mod_nw_dst:10.0.0.1")
			}
			if got := normalize(s.ofctl(t, opts, "dump-flows")); got != want {
				t.Errorf("dump-flows differs from 1.3:\n%s\nvs\n%s", got, want)
			}
			s.checkDump(t, parseFlows(t, s.ofctl(t, opts, "dump-flows")), -1)
			if got, want := normalize(s.ofctl(t, opts, "dump-aggregate")), normalize(s.ofctl(t, of13, "dump-aggregate")); got != want {
				t.Errorf("dump-aggregate differs from 1.3:\n%s\nvs\n%s", got, want)
			}
			if out := s.ofctl(t, opts, "dump-ports"); !strings.Contains(out, "3 ports") || !strings.Contains(out, "port  1: rx pkts=") {
				t.Errorf("dump-ports:\n%s", out)
			}
			if out := s.ofctl(t, opts, "dump-ports-desc"); !strings.Contains(out, " 2(p2): addr:") {
				t.Errorf("dump-ports-desc:\n%s", out)
			}
			out = s.ofctl(t, opts, "dump-tables")
			// As ovs-vswitchd's: no table names in 1.1 and 1.2, and the
			// last table has no goto_table.
			for _, want := range []string{"\n  table 0:\n", "active=2, lookup=0, matched=0", "max_entries=1000000",
				"instructions: apply_actions clear_actions write_actions write_metadata goto_table\n",
				"tables 2...253: ditto", "\n  table 254:\n", "instructions: apply_actions clear_actions write_actions write_metadata\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("dump-tables lacks %q:\n%s", want, out)
				}
			}
			// The match and set-field lists, as ovs-vswitchd 3.1 prints them
			// in the UML bed.
			ovsLines := map[string][]string{
				"1.1": {"exact match or wildcard: metadata in_port eth_{src,dst,type} vlan_{vid,pcp} mpls_{label,tc} ip_{src,dst} nw_{proto,tos} tcp_{src,dst}\n"},
				"1.2": {"supported on Set-Field: metadata in_port_oxm eth_{src,dst} vlan_{vid,pcp} mpls_{label,tc} ip_{src,dst} ipv6_{src,dst,label} ip_dscp nw_ecn arp_{op,spa,tpa,sha,tha} tcp_{src,dst} udp_{src,dst} sctp_{src,dst} icmp_{type,code} icmpv6_{type,code} nd_{target,sll,tll}\n",
					"exact match or wildcard: metadata in_port_oxm eth_{src,dst,type} vlan_{vid,pcp} mpls_{label,tc} ip_{src,dst} ipv6_{src,dst,label} nw_proto ip_dscp nw_ecn arp_{op,spa,tpa,sha,tha} tcp_{src,dst} udp_{src,dst} sctp_{src,dst} icmp_{type,code} icmpv6_{type,code} nd_{target,sll,tll}\n"},
			}
			for _, want := range ovsLines[tc.name] {
				if !strings.Contains(out, want) {
					t.Errorf("dump-tables lacks ovs-vswitchd's %q:\n%s", want, out)
				}
			}
			if caps := "capabilities: FLOW_STATS TABLE_STATS PORT_STATS ARP_MATCH_IP\n"; tc.name == "1.1" && !strings.Contains(s.ofctl(t, opts, "show"), caps) {
				t.Errorf("1.1 show lacks %q", caps)
			}

			// add, dump, modify, delete what only this version says.
			s.ofctl(t, opts, "add-flow", tc.flow)
			f := findFlow(parseFlows(t, s.ofctl(t, opts, "dump-flows", "table=1")), tc.match)
			if f == nil || f.priority != 9 || f.actions != tc.actions {
				t.Fatalf("added flow dumped as %+v", f)
			}
			if f := findFlow(parseFlows(t, s.ofctl(t, of13, "dump-flows", "table=1")), tc.match); f == nil {
				t.Errorf("flow added over %s not in 1.3's dump", tc.name)
			}
			s.ofctl(t, opts, "mod-flows", "table=1,"+tc.match+",actions=drop")
			if f := findFlow(parseFlows(t, s.ofctl(t, opts, "dump-flows", "table=1")), tc.match); f == nil || f.actions != "drop" {
				t.Errorf("modified flow dumped as %+v", f)
			}
			s.ofctl(t, opts, "del-flows", "table=1")
			if n := len(parseFlows(t, s.ofctl(t, opts, "dump-flows", "table=1"))); n != 0 {
				t.Errorf("%d flows in table 1 after del-flows", n)
			}

			// packet-out
			for {
				if _, err := s.devs["p2"].Recv(10 * time.Millisecond); err != nil {
					break
				}
			}
			fr := frame(7, 8)
			s.ofctl(t, opts, "packet-out", "CONTROLLER", "output:2", hex.EncodeToString(fr))
			if got, err := s.devs["p2"].Recv(2 * time.Second); err != nil || !bytes.Equal(got, fr) {
				t.Errorf("packet-out: p2 got % x (%v), want % x", got, err, fr)
			}

			// mod-port
			s.ofctl(t, opts, "mod-port", "p2", "down")
			if p := s.b.Ports.Snapshot().ByOF(2); p == nil || !p.Down {
				t.Errorf("mod-port down: port %+v", p)
			}
			s.ofctl(t, opts, "mod-port", "p2", "up")
			if p := s.b.Ports.Snapshot().ByOF(2); p == nil || p.Down {
				t.Errorf("mod-port up: port %+v", p)
			}
		})
	}
	// ovs-ofctl's default hello offers only 1.0; one offering every
	// version must get the highest common one, 1.5.
	if out := s.ofctl(t, []string{"-O", "OpenFlow10,OpenFlow11,OpenFlow12,OpenFlow13,OpenFlow14,OpenFlow15"}, "show"); !strings.Contains(out, "(OF1.5)") {
		t.Errorf("show with every version offered:\n%s", out)
	}
}
