package ovsdb

import (
	"strings"
	"testing"
)

func TestBuildRSTP(t *testing.T) {
	br := &Bridge{UUID: "b", Name: "br0", RSTPEnable: true, OtherConfig: map[string]string{"rstp-address": "00:00:00:00:00:01",
		"rstp-priority": "4096", "rstp-max-age": "6", "rstp-forward-delay": "4", "rstp-force-protocol-version": "0"}}
	r := stpRows(br,
		stpPort("p2", map[string]string{"rstp-path-cost": "19", "rstp-port-priority": "0x10", "rstp-port-num": "7",
			"rstp-port-admin-edge": "true"}),
		stpPort("p1", map[string]string{"rstp-port-mcheck": "true"}),
		stpPort("off", map[string]string{"rstp-enable": "false"}),
		stpPort("down", map[string]string{"rstp-admin-port-state": "false", "rstp-port-auto-edge": "false"}),
		stpPort("bad", map[string]string{"rstp-port-num": "4096"}),
		stpPort("bond0", nil, "i-m1", "i-m2"))
	var problems []string
	c := buildRSTP(br, r, nil, &problems)
	if c == nil {
		t.Fatalf("no RSTP: %v", problems)
	}
	want := RSTPConfig{Address: 1, Priority: 4096, MaxAge: 6, ForwardDelay: 4, Ports: []RSTPPortConfig{
		{Name: "down", Priority: 128, AdminDown: true},
		{Name: "p1", Priority: 128, AutoEdge: true, MCheck: true},
		{Name: "p2", Num: 7, Priority: 16, PathCost: 19, HasPathCost: true, AdminEdge: true, AutoEdge: true},
	}}
	if !c.Equal(&want) {
		t.Errorf("got %+v\nwant %+v", *c, want)
	}
	joined := strings.Join(problems, "\n")
	for _, w := range []string{"rstp-force-protocol-version=0 is not supported", "port bad: invalid rstp-port-num",
		"port bond0: cannot enable RSTP on bonds"} {
		if !strings.Contains(joined, w) {
			t.Errorf("no problem %q in %q", w, problems)
		}
	}
	if len(problems) != 3 {
		t.Errorf("problems %q", problems)
	}
	// Defaults, as ovs-vswitchd's.
	br2 := &Bridge{UUID: "b2", Name: "br1", RSTPEnable: true}
	problems = nil
	if c := buildRSTP(br2, stpRows(br2), nil, &problems); c == nil || c.Priority != 32768 || c.MaxAge != 20 ||
		c.ForwardDelay != 15 || len(problems) != 0 {
		t.Errorf("defaults %+v %q", c, problems)
	}
	if c := buildRSTP(&Bridge{Name: "x"}, stpRows(&Bridge{}), nil, &problems); c != nil {
		t.Error("RSTP without rstp_enable")
	}
}
