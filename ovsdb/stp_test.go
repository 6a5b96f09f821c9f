package ovsdb

import (
	"strings"
	"testing"
	"time"
)

func stpRows(br *Bridge, ports ...*Port) *Rows {
	r := &Rows{Bridges: map[string]*Bridge{br.UUID: br}, Ports: map[string]*Port{}, Interfaces: map[string]*Interface{}}
	for _, p := range ports {
		br.Ports = append(br.Ports, p.UUID)
		r.Ports[p.UUID] = p
		for _, iu := range p.Interfaces {
			r.Interfaces[iu] = &Interface{UUID: iu, Name: strings.TrimPrefix(iu, "i-")}
		}
	}
	return r
}

func stpPort(name string, oc map[string]string, ifaces ...string) *Port {
	if len(ifaces) == 0 {
		ifaces = []string{"i-" + name}
	}
	return &Port{UUID: "p-" + name, Name: name, Interfaces: ifaces, OtherConfig: oc}
}

func TestBuildSTP(t *testing.T) {
	br := &Bridge{UUID: "b", Name: "br0", STPEnable: true, OtherConfig: map[string]string{"stp-system-id": "00:00:00:00:00:01",
		"stp-priority": "4096", "stp-hello-time": "1", "stp-max-age": "6", "stp-forward-delay": "4"}}
	r := stpRows(br, stpPort("p2", map[string]string{"stp-path-cost": "19", "stp-port-priority": "0x10"}), stpPort("p1", nil),
		stpPort("off", map[string]string{"stp-enable": "false"}), stpPort("bond0", nil, "i-m1", "i-m2"))
	var problems []string
	c := buildSTP(br, r, nil, &problems)
	if c == nil {
		t.Fatalf("no STP: %v", problems)
	}
	want := STPConfig{SystemID: 1, Priority: 4096, HelloTime: time.Millisecond, MaxAge: 6 * time.Second, ForwardDelay: 4 * time.Second,
		Ports: []STPPortConfig{{Name: "p1", Num: 1, Priority: 128}, {Name: "p2", Num: 2, Priority: 16, PathCost: 19, HasPathCost: true}}}
	if !c.Equal(&want) {
		t.Errorf("got %+v\nwant %+v", *c, want)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "cannot enable STP on bonds") {
		t.Errorf("problems %q", problems)
	}

	// Port numbers: all or none.
	problems = nil
	br2 := &Bridge{UUID: "b2", Name: "br1", STPEnable: true}
	r = stpRows(br2, stpPort("a", map[string]string{"stp-port-num": "5"}), stpPort("b", nil))
	if c := buildSTP(br2, r, nil, &problems); c != nil || len(problems) != 1 || !strings.Contains(problems[0], "all STP port IDs or none") {
		t.Errorf("mixed numbering: %+v %q", c, problems)
	}

	// With RSTP too, RSTP wins, with a warning (rstp.go).
	problems = nil
	br3 := &Bridge{UUID: "b3", Name: "br2", STPEnable: true, RSTPEnable: true}
	if c := buildSTP(br3, stpRows(br3), nil, &problems); c != nil || len(problems) != 1 || !strings.Contains(problems[0], "mutually exclusive but both are configured; enabling RSTP") {
		t.Errorf("rstp: %+v %q", c, problems)
	}
	if c := buildRSTP(br3, stpRows(br3), nil, &problems); c == nil {
		t.Error("rstp_enable and stp_enable: no RSTP")
	}
}

func FuzzBuildSTP(f *testing.F) {
	f.Add("00:00:00:00:00:01", "4096", "1", "6", "4", "1", "19", "0x80")
	f.Add("zz", "-1", "x", "999999999999", "0", "256", "70000", "0777")
	f.Fuzz(func(t *testing.T, sysid, prio, hello, maxAge, fwd, num, cost, pprio string) {
		br := &Bridge{UUID: "b", Name: "br0", STPEnable: true, OtherConfig: map[string]string{"stp-system-id": sysid,
			"stp-priority": prio, "stp-hello-time": hello, "stp-max-age": maxAge, "stp-forward-delay": fwd}}
		r := stpRows(br, stpPort("p1", map[string]string{"stp-port-num": num, "stp-path-cost": cost, "stp-port-priority": pprio}))
		var problems []string
		if c := buildSTP(br, r, nil, &problems); c != nil {
			for _, p := range c.Ports {
				if p.Num < 1 || p.Num > 255 {
					t.Fatalf("port number %d", p.Num)
				}
			}
		}
	})
}
