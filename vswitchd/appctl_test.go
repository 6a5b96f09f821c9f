package vswitchd

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestOvsAppctlCommands runs the real ovs-appctl, with no -t, against the
// daemon on the in-memory datapath: every command issue #8 lists answers,
// the shapes scripts parse match ovs-vswitchd's, and an unknown command
// gets ovs-vswitchd's error and exit status 2.
func TestOvsAppctlCommands(t *testing.T) {
	appctl, err := exec.LookPath("ovs-appctl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ovs-appctl not installed; CI must install openvswitch-common")
		}
		t.Skip("ovs-appctl not installed")
	}
	rundir := t.TempDir()
	s := startSwitch(t, nil, rundir, "--governor")
	defer s.d.Stop()
	f := tcpFrame(macA, macB, 1, 80)
	s.p1.Send(f)
	s.p2.Recv(2 * time.Second)

	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(appctl, args...)
		cmd.Env = append(os.Environ(), "OVS_RUNDIR="+rundir)
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return so.String(), se.String(), code
	}
	trace := "in_port(1),eth(src=02:00:00:00:00:0a,dst=02:00:00:00:00:0b),eth_type(0x0800)," +
		"ipv4(src=10.0.0.1,dst=10.0.0.2,proto=6,tos=0,ttl=64,frag=no),tcp(src=1,dst=80)"
	tests := []struct {
		args []string
		want []string // regexps the output must match (multiline)
	}{
		{[]string{"list-commands"}, []string{`^The available commands are:`, `(?m)^  dpif/show `, `(?m)^  ofproto/trace `}},
		{[]string{"version"}, []string{`^govswitchd \(govswitch\) `}},
		{[]string{"dpif/show"}, []string{`(?m)^dummy@br0: hit:\d+ missed:\d+$`, `(?m)^  br0:$`, `(?m)^    p1 1/1: \(system\)$`}},
		{[]string{"dpctl/show"}, []string{`(?m)^  lookups: hit:\d+ missed:\d+ lost:\d+$`, `(?m)^  flows: \d+$`, `(?m)^  port 1: p1$`}},
		{[]string{"dpctl/dump-flows"}, []string{`(?m)in_port\(1\).*packets:\d+, bytes:\d+, used:\S+, actions:2`}},
		{[]string{"fdb/show", "br0"}, []string{`^ port  VLAN  MAC                Age\n`, `(?m)^    1     0  02:00:00:00:00:0a +\d+$`}},
		{[]string{"upcall/show"}, []string{`(?m)^  flows         : \(current \d+\) \(avg \d+\) \(max \d+\) \(limit \d+\)$`,
			`(?m)^  dump duration : \d+ms$`, `(?m)^  ufid enabled : true$`}},
		{[]string{"upcall/set-flow-limit", "5000"}, []string{`set flow_limit to 5000`}},
		{[]string{"coverage/show"}, []string{`^Event coverage, avg rate over last: 5 seconds, last minute, last hour,  hash=`,
			`(?m)^upcall_received +\d+\.\d/sec +\d+\.\d{3}/sec +\d+\.\d{4}/sec   total: \d+$`, `(?m)^\d+ events never hit$`}},
		{[]string{"memory/show"}, []string{`handlers:\d+ ports:\d+ revalidators:\d+ rules:\d+ udpif keys:\d+`}},
		{[]string{"governor/show"}, []string{`(?m)^  handler 0: mode auto`}},
		{[]string{"ofproto/trace", "br0", trace}, []string{`(?m)^Flow: `, `(?m)^ 0\. priority 0\n    NORMAL$`,
			// B has sent nothing, so NORMAL floods: to p2 and LOCAL.
			`(?m)^Megaflow: .*eth\(src=02:00:00:00:00:0a,dst=02:00:00:00:00:0b\)`, `(?m)^Datapath actions: 2,0$`}},
		{[]string{"fdb/flush"}, []string{`table successfully flushed`}},
		{[]string{"upcall/disable-megaflows"}, []string{`megaflows disabled`}},
		{[]string{"upcall/enable-megaflows"}, []string{`megaflows enabled`}},
		{[]string{"revalidator/wait"}, nil},
		{[]string{"revalidator/purge"}, nil},
		{[]string{"vlog/set", "ANY:ANY:dbg"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, code := run(tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, re := range tt.want {
				if !regexp.MustCompile(re).MatchString(out) {
					t.Errorf("output does not match %q:\n%s", re, out)
				}
			}
		})
	}
	if _, errOut, code := run("no/such"); code != 2 ||
		!strings.Contains(errOut, `"no/such" is not a valid command (use "list-commands" to see a list of valid commands)`) {
		t.Errorf("unknown command: exit %d, stderr %q", code, errOut)
	}
	if _, _, code := run("ofproto/trace", "br0", "garbage(("); code != 2 {
		t.Errorf("a bad trace flow should fail with exit 2, got %d", code)
	}
	if _, errOut, code := run("exit"); code != 0 {
		t.Fatalf("exit: %d %s", code, errOut)
	}
	select {
	case <-s.d.exit:
	case <-time.After(2 * time.Second):
		t.Errorf("ovs-appctl exit did not ask the daemon to stop")
	}
}
