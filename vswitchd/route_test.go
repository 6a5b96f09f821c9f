package vswitchd

import (
	"net/netip"
	"strings"
	"testing"
)

func TestRouteText(t *testing.T) {
	tests := []struct {
		r    route
		want string
		prio int
	}{
		{route{prefix: netip.MustParsePrefix("127.0.0.1/32"), dev: "lo", src: netip.MustParseAddr("127.0.0.1"), local: true},
			"Cached: 127.0.0.1/32 dev lo SRC 127.0.0.1 local", 32 + 96 + 64},
		{route{prefix: netip.MustParsePrefix("fe80::/64"), dev: "p1", src: netip.MustParseAddr("fe80::885c:5aff:fe2d:f98c")},
			"Cached: fe80::/64 dev p1 SRC fe80::885c:5aff:fe2d:f98c", 64},
		{route{prefix: netip.MustParsePrefix("10.1.0.0/16"), dev: "br0", gw: netip.MustParseAddr("10.0.0.254"),
			src: netip.MustParseAddr("10.0.0.1"), mark: 7, user: true},
			"User: 10.1.0.0/16 MARK 7 dev br0 GW 10.0.0.254 SRC 10.0.0.1", 16 + 96 + 32},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
		if got := tt.r.priority(); got != tt.prio {
			t.Errorf("%s: priority %d, want %d", tt.want, got, tt.prio)
		}
	}
}

// TestRouteCommands runs ovs/route/* against this host's own routes (read
// over rtnetlink) and a route on lo, with ovs-vswitchd's replies.
func TestRouteCommands(t *testing.T) {
	if _, err := sourceAddr("lo", netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Skipf("lo has no 127.0.0.1 here: %v", err)
	}
	s := startSwitch(t, nil, t.TempDir())
	defer s.d.Stop()
	run := func(args ...string) (string, error) { return s.d.ctl.Run(args[0], args[1:]) }
	show := s.appctl(t, "ovs/route/show")
	if !strings.HasPrefix(show, "Route Table:\n") || !strings.Contains(show, "\nCached: 127.0.0.1/32 dev lo SRC 127.0.0.1 local\n") {
		t.Errorf("ovs/route/show lacks lo's local route:\n%s", show)
	}
	if out, err := run("ovs/route/add", "127.1.0.0/16", "lo", "pkt_mark=5"); err != nil || out != "OK\n" {
		t.Fatalf("add: %q %v", out, err)
	}
	if show := s.appctl(t, "ovs/route/show"); !strings.Contains(show, "\nUser: 127.1.0.0/16 MARK 5 dev lo SRC 127.0.0.1\n") {
		t.Errorf("user route not shown:\n%s", show)
	}
	if out, err := run("ovs/route/lookup", "127.1.2.3", "pkt_mark=5"); err != nil || out != "src 127.0.0.1\ngateway ::\ndev lo\n" {
		t.Errorf("lookup: %q %v", out, err)
	}
	if _, err := run("ovs/route/lookup", "127.1.2.3", "pkt_mark=6"); err == nil || err.Error() != "Not found" {
		t.Errorf("lookup under another mark: %v, want Not found", err)
	}
	if out, err := run("ovs/route/del", "127.1.0.0/16", "pkt_mark=5"); err != nil || out != "OK\n" {
		t.Errorf("del: %q %v", out, err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"ovs/route/del", "127.1.0.0/16", "pkt_mark=5"}, "Not found"},
		{[]string{"ovs/route/add", "10.99.0.0/16", "lo"}, "Error while inserting route."},
		{[]string{"ovs/route/add", "10.99.0.0/16", "nosuchdev0"}, "Error while inserting route."},
		{[]string{"ovs/route/add", "bogus", "lo"}, "Invalid parameters"},
		{[]string{"ovs/route/add", "10.99.0.0/16", "lo", "frob"}, "Invalid pkt_mark or gateway"},
		{[]string{"ovs/route/add", "fd00::/8", "lo", "frob"}, "Invalid pkt_mark or IPv6 gateway"},
		{[]string{"ovs/route/add", "10.99.0.0/16", "lo", "127.0.0.2", "mark=1"}, "Invalid pkt_mark"},
		{[]string{"ovs/route/lookup", "127.0.0.0/8"}, "Invalid parameters"},
		{[]string{"ovs/route/lookup", "127.0.0.1", "pkt_mark=x"}, "Invalid pkt_mark"},
	} {
		_, err := run(tt.args...)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
	}
}

func FuzzParseRoutePrefix(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8", "1.2.3.4", "fe80::/64", "::1", "300.1.1.1/8", "1.2.3.4/33"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := parseRoutePrefix(s)
		if ok && (!p.IsValid() || p != p.Masked()) {
			t.Fatalf("%q: accepted as %v, not a masked prefix", s, p)
		}
	})
}

// TestDisableSystemRoute: with --disable-system-route the kernel's routes
// stay out of the table; ovs/route/add's are still in it.
func TestDisableSystemRoute(t *testing.T) {
	if _, err := sourceAddr("lo", netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Skipf("lo has no 127.0.0.1 here: %v", err)
	}
	s := startSwitch(t, nil, t.TempDir(), "--disable-system-route")
	defer s.d.Stop()
	if show := s.appctl(t, "ovs/route/show"); show != "Route Table:\n" {
		t.Errorf("ovs/route/show with --disable-system-route:\n%s", show)
	}
	if out, err := s.d.ctl.Run("ovs/route/add", []string{"127.1.0.0/16", "lo"}); err != nil || out != "OK\n" {
		t.Fatalf("add: %q %v", out, err)
	}
	if show := s.appctl(t, "ovs/route/show"); show != "Route Table:\nUser: 127.1.0.0/16 dev lo SRC 127.0.0.1\n" {
		t.Errorf("ovs/route/show after add:\n%s", show)
	}
	if _, err := s.d.ctl.Run("ovs/route/lookup", []string{"127.0.0.1"}); err == nil || err.Error() != "Not found" {
		t.Errorf("lookup of a kernel-only route: %v, want Not found", err)
	}
}
