package vswitchd

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDpifAndBridgeCommands: ofproto/list, dpif/dump-flows (plain, -m,
// --names), bridge/dump-flows, dpif/show-dp-features, set-dp-features
// and fdb/stats-*, in ovs-vswitchd's shapes (captured from ovs-vswitchd
// 3.1 in the bed), on the in-memory datapath.
func TestDpifAndBridgeCommands(t *testing.T) {
	s := startSwitch(t, nil, t.TempDir())
	defer s.d.Stop()
	s.p1.Send(tcpFrame(macA, macB, 1, 80))
	expectFrame(t, s.p2, tcpFrame(macA, macB, 1, 80))
	// Let the flow be installed before dumping.
	deadline := time.Now().Add(2 * time.Second)
	for s.appctl(t, "dpif/dump-flows", "br0") == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	q := regexp.QuoteMeta
	tests := []struct {
		args []string
		want []string // regexps
	}{
		{[]string{"ofproto/list"}, []string{`^br0\n$`}},
		{[]string{"dpif/dump-flows", "br0"}, []string{`(?m)^recirc_id\(0\),in_port\(2\),eth\(src=02:00:00:00:00:0a,dst=02:00:00:00:00:0b\),eth_type\(0x0800\),ipv4\(frag=no\), packets:\d+, bytes:\d+, used:\S+, actions:1,3$`}},
		{[]string{"dpif/dump-flows", "--names", "br0"}, []string{`(?m)^recirc_id\(0\),in_port\(p1\),.*, actions:br0,p2$`}},
		{[]string{"dpif/dump-flows", "-m", "br0"}, []string{`(?m)^ufid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12} recirc_id\(0\),in_port\(p1\),.*, actions:br0,p2$`}},
		{[]string{"bridge/dump-flows", "br0"}, []string{`^duration=\d+s, n_packets=\d+, n_bytes=\d+, priority=0,actions=NORMAL\n$`}},
		{[]string{"dpif/show-dp-features", "br0"}, []string{`(?m)^Ufid: Yes\nConntrack clear: No\nMax VLAN headers: 2\nRecirc: No\nCT state: No\nCT zone: Yes\nCT mark: No\nCT label: No\nCT state NAT: No$`}},
		{[]string{"dpif/set-dp-features", "br0"}, []string{`(?m)^` + q(`ufid (Ufid) : [run time]:true, [boot time]:true`) + `$`,
			`(?m)^` + q(`max_vlan_headers (Max VLAN headers) : [run time]:2, [boot time]:2`) + `$`}},
		{[]string{"fdb/stats-show", "br0"}, []string{`^Statistics for bridge "br0":\n` +
			q(`  Current/maximum MAC entries in the table: 1/8192`) + `\n` +
			q(`  Current static MAC entries in the table : 0`) + `\n` +
			q(`  Total number of learned MAC entries     : 1`) + `\n` +
			q(`  Total number of expired MAC entries     : 0`) + `\n` +
			q(`  Total number of evicted MAC entries     : 0`) + `\n` +
			q(`  Total number of port moved MAC entries  : 0`) + `\n$`}},
		{[]string{"fdb/stats-clear", "br0"}, []string{`^statistics successfully cleared\n$`}},
		{[]string{"fdb/stats-show", "br0"}, []string{`(?m)entries in the table: 1/8192$`, `(?m)learned MAC entries     : 0$`}},
		// Truncation turned off at run time, as OVS's truncate test does.
		{[]string{"dpif/set-dp-features", "br0", "trunc", "false"}, []string{`^$`}},
		{[]string{"dpif/show-dp-features", "br0"}, []string{`(?m)^Truncate action: No$`}},
		{[]string{"dpif/set-dp-features", "br0", "trunc"}, []string{`^` + q(`trunc (Truncate action) : [run time]:false, [boot time]:`) + `(true|false)\n$`}},
		{[]string{"dpif/set-dp-features", "br0", "trunc", "maybe"}, []string{`^Boolean value expected`}},
	}
	for _, tt := range tests {
		out := s.appctl(t, tt.args[0], tt.args[1:]...)
		for _, re := range tt.want {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("%v: output does not match %q:\n%s", tt.args, re, out)
			}
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"dpif/dump-flows", "nosuch"}, "no such bridge"},
		{[]string{"dpif/dump-flows", "-x", "br0"}, "unknown option -x"},
		{[]string{"dpif/set-dp-features", "br0", "ufid", "false"}, "cannot change ufid at run time"},
		{[]string{"dpif/set-dp-features", "br0", "nosuch", "true"}, `unknown feature "nosuch"`},
		{[]string{"bridge/dump-flows", "nosuch"}, "nosuch: unknown bridge"},
		{[]string{"fdb/stats-show", "nosuch"}, "no such bridge"},
	} {
		_, err := s.d.ctl.Run(tt.args[0], tt.args[1:])
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
	}
}

func TestNameActionPorts(t *testing.T) {
	names := map[uint32]string{1: "p1", 2: "p2", 0: "br0"}
	tests := []struct{ in, want string }{
		{"2,0", "p2,br0"},
		{"drop", "drop"},
		{"push_vlan(vid=10,pcp=0),1", "push_vlan(vid=10,pcp=0),p1"},
		{"clone(2),7", "clone(2),7"},
	}
	for _, tt := range tests {
		if got := nameActionPorts(tt.in, names); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := namePorts("recirc_id(0),in_port(2),eth()", names); got != "recirc_id(0),in_port(p2),eth()" {
		t.Errorf("namePorts: %q", got)
	}
}
