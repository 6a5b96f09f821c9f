package vswitchd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/conntrack"
	"github.com/govswitch/govswitch/datapath"
	"golang.org/x/sys/unix"
)

const udpKey = "in_port(1),eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),eth_type(0x0800)," +
	"ipv4(src=10.0.0.1,dst=10.0.0.9,proto=17,tos=0,ttl=64,frag=no),udp(src=1,dst=2)"

// TestDpctlFlowCommands: dpctl/add-flow, mod-flow and del-flow write the
// datapath's flow table, with ovs-vswitchd's errors (captured from
// ovs-vswitchd 3.1 in the bed) for a duplicate, a missing flow and bad
// syntax.
func TestDpctlFlowCommands(t *testing.T) {
	s := startSwitch(t, nil, t.TempDir())
	defer s.d.Stop()
	run := func(cmd string, args ...string) (string, error) { return s.d.ctl.Run(cmd, args) }
	dump := func() string { return s.appctl(t, "dpctl/dump-flows") }

	// The revalidator deletes datapath flows it has no ukey for, as
	// ovs-vswitchd's does, so a pass that falls between two of these
	// commands takes the flow away (a loaded machine, -race): the sequence
	// is tried again from the start, and its failures count only when a
	// try ran without the flow vanishing.
	var errs []string
	for try := 0; try < 5; try++ {
		errs = errs[:0]
		vanished := false
		check := func(ok bool, format string, args ...any) {
			if !ok {
				errs = append(errs, fmt.Sprintf(format, args...))
			}
		}
		run("dpctl/del-flows")
		if _, err := run("dpctl/add-flow", udpKey, "2"); err != nil {
			t.Fatal(err)
		}
		got := dump()
		vanished = vanished || !strings.Contains(got, "udp(src=1,dst=2)")
		check(strings.Contains(got, "udp(src=1,dst=2), packets:0, bytes:0, used:never, actions:2\n"), "added flow not dumped:\n%s", got)
		_, err := run("dpctl/add-flow", udpKey, "2")
		vanished = vanished || err == nil
		check(err != nil && err.Error() == "updating flow table (File exists)", "duplicate add: %v", err)
		_, err = run("dpctl/mod-flow", "dummy@ovs-system", udpKey, "1,push_vlan(vid=10,pcp=0),2")
		vanished = vanished || err != nil && strings.Contains(err.Error(), "No such file")
		check(err == nil, "mod-flow: %v", err)
		got = dump()
		vanished = vanished || !strings.Contains(got, "udp(src=1,dst=2)")
		check(strings.Contains(got, "actions:1,push_vlan(vid=10,pcp=0),2\n"), "modified actions not dumped:\n%s", got)
		out, err := run("dpctl/del-flow", "-s", udpKey)
		vanished = vanished || err != nil && strings.Contains(err.Error(), "No such file")
		check(err == nil && out == "packets:0, bytes:0, used:never\n", "del-flow -s: %q, %v", out, err)
		if !vanished {
			break
		}
		t.Logf("try %d: a revalidator pass deleted the flow midway; again", try)
	}
	for _, e := range errs {
		t.Error(e)
	}
	if got := dump(); strings.Contains(got, "udp(src=1,dst=2)") {
		t.Errorf("deleted flow still dumped:\n%s", got)
	}
	if _, err := run("dpctl/mod-flow", udpKey, "2"); err == nil || err.Error() != "updating flow table (No such file or directory)" {
		t.Errorf("mod of a missing flow: %v", err)
	}
	if _, err := run("dpctl/mod-flow", "--may-create", udpKey, "2"); err != nil {
		t.Errorf("mod --may-create: %v", err)
	}
	if _, err := run("dpctl/del-flows"); err != nil {
		t.Fatal(err)
	}
	if got := dump(); got != "" {
		t.Errorf("flows after del-flows:\n%s", got)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"dpctl/add-flow", "garbage((", "1"}, "parsing flow key ("},
		{[]string{"dpctl/add-flow", "in_port(1),eth_type(0x0800)", "frob"}, "parsing actions ("},
		{[]string{"dpctl/add-flow", "nosuch@dp", udpKey, "1"}, "no datapath nosuch@dp"},
		{[]string{"dpctl/add-flow", "-x", udpKey, "1"}, "unknown option -x"},
		{[]string{"dpctl/del-flow", udpKey}, "deleting flow (No such file or directory)"},
		{[]string{"dpctl/del-flow", "ufid:1234"}, "want ufid:"},
	} {
		_, err := run(tt.args[0], tt.args[1:]...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
	}
}

func TestParseUFID(t *testing.T) {
	u := datapath.UFID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	text := strings.TrimPrefix(u.String(), "ufid:")
	got, err := parseUFID(text)
	if err != nil || got != u {
		t.Errorf("parseUFID(%q) = %v, %v; want %v", text, got, err, u)
	}
	for _, bad := range []string{"", "1-2-3-4-5", "zzzzzzzz-0000-0000-0000-000000000000", "00000000-0000-0000-0000-0000000000000"} {
		if _, err := parseUFID(bad); err == nil {
			t.Errorf("parseUFID(%q) accepted", bad)
		}
	}
}

// FuzzParseUFID: parseUFID never panics, and what it accepts prints back
// as the same text.
func FuzzParseUFID(f *testing.F) {
	f.Add("928f47f8-575a-4753-85a9-d140da77784d")
	f.Add("00000000-0000-0000-0000-000000000000")
	f.Fuzz(func(t *testing.T, s string) {
		u, err := parseUFID(s)
		if err != nil {
			return
		}
		if got := u.String(); got != "ufid:"+strings.ToLower(s) {
			t.Fatalf("%q parsed to %s", s, got)
		}
	})
}

func TestCtStatsText(t *testing.T) {
	tcp := conntrack.Entry{Orig: conntrack.Tuple{Proto: unix.IPPROTO_TCP}, TCPState: 3, HasTCPState: true}
	udp := conntrack.Entry{Orig: conntrack.Tuple{Proto: unix.IPPROTO_UDP}}
	if got, want := ctStats(nil, false), "Connections Stats:\n    Total: 0\n"; got != want {
		t.Errorf("empty: %q, want %q (ovs-vswitchd's)", got, want)
	}
	want := "Connections Stats:\n    Total: 3\n  TCP: 2\n    Conn per TCP states:\n\t  [ESTABLISHED]=2\n  UDP: 1\n"
	if got := ctStats([]conntrack.Entry{tcp, udp, tcp}, true); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
