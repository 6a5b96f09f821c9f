package vswitchd

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDpctlDumpFlowsOptions: dpctl/dump-flows takes ovs-vswitchd's -m,
// --names, --no-names and a datapath (OVS's IGMP test reads
// "dpctl/dump-flows --names"), and refuses what it does not know.
func TestDpctlDumpFlowsOptions(t *testing.T) {
	s := startSwitch(t, nil, t.TempDir())
	defer s.d.Stop()
	s.p1.Send(tcpFrame(macA, macB, 1, 80))
	expectFrame(t, s.p2, tcpFrame(macA, macB, 1, 80))
	deadline := time.Now().Add(2 * time.Second)
	for s.appctl(t, "dpctl/dump-flows") == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, tt := range []struct {
		args []string
		want string // regexp
	}{
		// One datapath, ovs-system: port 1 is br0's internal port, p1 and
		// p2 follow.
		{nil, `(?m)^recirc_id\(0\),in_port\(2\),.*, actions:1,3$`},
		{[]string{"--names"}, `(?m)^recirc_id\(0\),in_port\(p1\),.*, actions:br0,p2$`},
		{[]string{"-m"}, `(?m)^ufid:[0-9a-f-]{36}, recirc_id\(0\),in_port\(p1\),.*, actions:br0,p2$`},
		{[]string{"-m", "--no-names"}, `(?m)^ufid:[0-9a-f-]{36}, recirc_id\(0\),in_port\(2\),.*, actions:1,3$`},
		{[]string{"--names", "ovs-system"}, `(?m)^recirc_id\(0\),in_port\(p1\),`},
		{[]string{"system@ovs-system"}, `(?m)^recirc_id\(0\),in_port\(2\),`},
		{[]string{"br0"}, `^$`}, // a bridge is not a datapath
		{[]string{"nosuch"}, `^$`},
	} {
		out := s.appctl(t, "dpctl/dump-flows", tt.args...)
		if !regexp.MustCompile(tt.want).MatchString(out) {
			t.Errorf("dpctl/dump-flows %v: output does not match %q:\n%s", tt.args, tt.want, out)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-x"}, "unknown option -x"},
		{[]string{"type=ovs"}, "not supported by govswitchd"},
		{[]string{"br0", "br1"}, "one datapath at most"},
	} {
		_, err := s.d.ctl.Run("dpctl/dump-flows", tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("dpctl/dump-flows %v: error %v, want %q", tt.args, err, tt.want)
		}
	}
}
