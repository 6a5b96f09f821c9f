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
// gets ovs-vswitchd's error and exit status 2. TestIntegrationAppctl runs
// the same against the kernel datapath in the bed.
func TestOvsAppctlCommands(t *testing.T) {
	rundir := t.TempDir()
	s := startSwitch(t, nil, rundir, "--governor")
	defer s.d.Stop()
	f := tcpFrame(macA, macB, 1, 80)
	s.p1.Send(f)
	s.p2.Recv(2 * time.Second)
	checkAppctl(t, s.d, rundir, "br0", "dummy", "p1")
}

// checkAppctl drives every listed command through the real ovs-appctl
// against d (found through rundir's pidfile), after a frame from
// 02:00:00:00:00:0a to ...:0b has entered bridge br on its port 1, named
// port1. dpType is how dpif/show names the datapath type.
func checkAppctl(t *testing.T, d *Daemon, rundir, br, dpType, port1 string) {
	appctl, err := exec.LookPath("ovs-appctl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ovs-appctl not installed; CI must install openvswitch-common")
		}
		t.Skip("ovs-appctl not installed")
	}
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
	q := regexp.QuoteMeta
	trace := "in_port(2),eth(src=02:00:00:00:00:0a,dst=02:00:00:00:00:0b),eth_type(0x0800)," +
		"ipv4(src=10.0.0.1,dst=10.0.0.2,proto=6,tos=0,ttl=64,frag=no),tcp(src=1,dst=80)"
	tests := []struct {
		args []string
		want []string // regexps the output must match (multiline)
	}{
		{[]string{"list-commands"}, []string{`^The available commands are:`, `(?m)^  dpif/show `, `(?m)^  ofproto/trace `}},
		{[]string{"version"}, []string{`^govswitchd \(govswitch\) `}},
		{[]string{"dpif/show"}, []string{`(?m)^` + q(dpType+"@ovs-system") + `: hit:\d+ missed:\d+$`, `(?m)^  ` + q(br) + `:$`,
			`(?m)^    ` + q(port1) + ` 1/2: \(system\)$`}},
		{[]string{"dpctl/show"}, []string{`(?m)^  lookups: hit:\d+ missed:\d+ lost:\d+$`, `(?m)^  flows: \d+$`, `(?m)^  port 2: ` + q(port1) + `$`}},
		{[]string{"dpctl/dump-flows"}, []string{`(?m)in_port\(2\).*packets:\d+, bytes:\d+, used:\S+, actions:`}},
		{[]string{"dpif/dump-flows", br}, []string{`(?m)^recirc_id\(0\),in_port\(2\),eth\(src=02:00:00:00:00:0a,dst=02:00:00:00:00:0b\),eth_type\(0x0800\),ipv4\(frag=no\), packets:\d+, bytes:\d+, used:\S+, actions:`}},
		{[]string{"fdb/show", br}, []string{`^ port  VLAN  MAC                Age\n`, `(?m)^    1     0  02:00:00:00:00:0a +\d+$`}},
		{[]string{"upcall/show"}, []string{`(?m)^  flows         : \(current \d+\) \(avg \d+\) \(max \d+\) \(limit \d+\)$`,
			`(?m)^  dump duration : \d+ms$`, `(?m)^  ufid enabled : true$`}},
		{[]string{"upcall/set-flow-limit", "5000"}, []string{`set flow_limit to 5000`}},
		{[]string{"coverage/show"}, []string{`^Event coverage, avg rate over last: 5 seconds, last minute, last hour,  hash=`,
			`(?m)^upcall_received +\d+\.\d/sec +\d+\.\d{3}/sec +\d+\.\d{4}/sec   total: \d+$`, `(?m)^\d+ events never hit$`}},
		{[]string{"memory/show"}, []string{`handlers:\d+ ports:\d+ revalidators:\d+ rules:\d+ udpif keys:\d+`}},
		{[]string{"governor/show"}, []string{`(?m)^  handler 0: mode auto`}},
		{[]string{"ofproto/trace", br, trace}, []string{`(?m)^Flow: tcp,in_port=1,vlan_tci=0x0000,dl_src=02:00:00:00:00:0a,dl_dst=02:00:00:00:00:0b,nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_tos=0,nw_ecn=0,nw_ttl=64,nw_frag=no,tp_src=1,tp_dst=80,tcp_flags=0$`, `(?m)^ 0\. priority 0\n    NORMAL$`,
			// 0b has sent nothing, so NORMAL floods: to the other port(s) and LOCAL.
			`(?m)^Megaflow: recirc_id=0,eth,ip,in_port=1,dl_src=02:00:00:00:00:0a,dl_dst=02:00:00:00:00:0b,nw_frag=no$`, `(?m)^Datapath actions: 1,3$`}},
		{[]string{"ofproto/list"}, []string{`^` + q(br) + `\n$`}},
		{[]string{"bridge/dump-flows", br}, []string{`(?m)^duration=\d+s, n_packets=\d+, n_bytes=\d+, priority=0,actions=NORMAL$`}},
		{[]string{"fdb/stats-show", br}, []string{`(?m)^  Total number of learned MAC entries     : [1-9]\d*$`}},
		{[]string{"dpif/show-dp-features", br}, []string{`(?m)^Ufid: Yes$`, `(?m)^CT zone: (Yes|No)$`}},
		{[]string{"ofproto/trace", br, "in_port=" + port1 + ",dl_src=02:00:00:00:00:0a,dl_dst=02:00:00:00:00:0b"}, []string{`(?m)^Datapath actions: 1,3$`}},
		{[]string{"fdb/flush"}, []string{`table successfully flushed`}},
		{[]string{"upcall/disable-megaflows"}, []string{`megaflows disabled`}},
		{[]string{"upcall/enable-megaflows"}, []string{`megaflows enabled`}},
		{[]string{"revalidator/wait"}, nil},
		{[]string{"revalidator/purge"}, nil},
		{[]string{"vlog/set", "ANY:ANY:dbg"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:1], " "), func(t *testing.T) {
			out, errOut, code := run(tt.args...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", tt.args, code, errOut)
			}
			for _, re := range tt.want {
				if !regexp.MustCompile(re).MatchString(out) {
					t.Errorf("%v: output does not match %q:\n%s", tt.args, re, out)
				}
			}
		})
	}
	if _, errOut, code := run("mdb/show", br); code != 2 || !strings.HasPrefix(errOut, "multicast snooping is disabled") {
		t.Errorf("mdb/show without snooping: exit %d, stderr %q", code, errOut)
	}
	if out, errOut, code := run("mdb/flush"); code != 0 || out != "table successfully flushed\n" {
		t.Errorf("mdb/flush: exit %d, %q %q", code, out, errOut)
	}
	if _, errOut, code := run("no/such"); code != 2 ||
		!strings.Contains(errOut, `"no/such" is not a valid command (use "list-commands" to see a list of valid commands)`) {
		t.Errorf("unknown command: exit %d, stderr %q", code, errOut)
	}
	if _, _, code := run("ofproto/trace", br, "garbage(("); code != 2 {
		t.Errorf("a bad trace flow should fail with exit 2, got %d", code)
	}
	if _, errOut, code := run("exit"); code != 0 {
		t.Fatalf("exit: %d %s", code, errOut)
	}
	select {
	case <-d.exit:
	case <-time.After(2 * time.Second):
		t.Errorf("ovs-appctl exit did not ask the daemon to stop")
	}
}
