package ovsdb

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
)

func desired(bridges ...BridgeConfig) *Desired { return &Desired{NextCfg: 1, Bridges: bridges} }

func port(name string, req uint32) PortConfig {
	return PortConfig{PortUUID: "p-" + name, IfaceUUID: "i-" + name, Name: name, Type: "system", OFPortRequest: req}
}

func local(name string) PortConfig {
	return PortConfig{PortUUID: "p-" + name, IfaceUUID: "i-" + name, Name: name, Type: "internal", Local: true}
}

func TestReconcilerApply(t *testing.T) {
	cases := []struct {
		name      string
		steps     []*Desired
		wantState map[string][]string
		wantIface map[string]int // ofport by interface UUID after the last step
		wantErr   map[string]string
	}{
		{
			name: "swap requested ofports in one pass",
			steps: []*Desired{
				desired(BridgeConfig{UUID: "b", Name: "br0", FailMode: "standalone",
					Ports: []PortConfig{local("br0"), port("a", 5), port("b", 7)}}),
				desired(BridgeConfig{UUID: "b", Name: "br0", FailMode: "standalone",
					Ports: []PortConfig{local("br0"), port("a", 7), port("b", 5)}}),
			},
			wantState: map[string][]string{"br0": {"a:7", "b:5", "br0:65534"}},
			wantIface: map[string]int{"i-a": 7, "i-b": 5, "i-br0": 65534},
		},
		{
			name: "a port the database dropped is removed, one it never had stays out",
			steps: []*Desired{
				desired(BridgeConfig{UUID: "b", Name: "br0", FailMode: "standalone",
					Ports: []PortConfig{local("br0"), port("a", 0), port("b", 0)}}),
				desired(BridgeConfig{UUID: "b", Name: "br0", FailMode: "standalone",
					Ports: []PortConfig{local("br0"), port("b", 0)}}),
			},
			wantState: map[string][]string{"br0": {"b:2", "br0:65534"}},
			wantIface: map[string]int{"i-b": 2, "i-br0": 65534},
		},
		{
			name: "missing device and bad row",
			steps: []*Desired{
				desired(BridgeConfig{UUID: "b", Name: "br0", FailMode: "standalone",
					Ports: []PortConfig{local("br0"), port("gone", 0),
						{PortUUID: "p-x", IfaceUUID: "i-x", Name: "x", Err: "bad row"}}}),
			},
			wantState: map[string][]string{"br0": {"br0:65534"}},
			wantIface: map[string]int{"i-gone": -1, "i-x": -1, "i-br0": 65534},
			wantErr:   map[string]string{"i-gone": "could not open network device gone (No such device)", "i-x": "bad row"},
		},
		{
			name: "bridge removed",
			steps: []*Desired{
				desired(BridgeConfig{UUID: "b", Name: "br0", Ports: []PortConfig{local("br0")}},
					BridgeConfig{UUID: "c", Name: "br1", Ports: []PortConfig{local("br1")}}),
				desired(BridgeConfig{UUID: "c", Name: "br1", Ports: []PortConfig{local("br1")}}),
			},
			wantState: map[string][]string{"br1": {"br1:65534"}},
			wantIface: map[string]int{"i-br1": 65534},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sw := newFakeSwitch("a", "b")
			r := NewReconciler(sw)
			var ifaces map[string]ifaceStatus
			for _, d := range c.steps {
				ifaces, _ = r.Apply(d)
			}
			if got := sw.state(); !reflect.DeepEqual(got, c.wantState) {
				t.Errorf("switch %v, want %v", got, c.wantState)
			}
			got := map[string]int{}
			for k, v := range ifaces {
				got[k] = v.ofport
				if want := c.wantErr[k]; v.err != want {
					t.Errorf("%s: error %q, want %q", k, v.err, want)
				}
			}
			if !reflect.DeepEqual(got, c.wantIface) {
				t.Errorf("ofports %v, want %v", got, c.wantIface)
			}
		})
	}
}

// TestReconcilerRetriesFailedBridge: a bridge that failed to start marks
// its interfaces, and a later pass starts it.
func TestReconcilerRetriesFailedBridge(t *testing.T) {
	sw := newFakeSwitch("a")
	sw.failAdd["br0"] = errors.New("no datapath module")
	var logs []string
	r := NewReconciler(sw)
	r.Logf = func(l slog.Level, f string, a ...any) { logs = append(logs, l.String()+" "+fmt.Sprintf(f, a...)) }
	d := desired(BridgeConfig{UUID: "b", Name: "br0", Ports: []PortConfig{local("br0"), port("a", 0)}})
	ifaces, dpids := r.Apply(d)
	if st := ifaces["i-a"]; st.ofport != -1 || !strings.Contains(st.err, "no datapath module") {
		t.Errorf("interface a: %+v", st)
	}
	if len(dpids) != 0 {
		t.Errorf("datapath ids of a failed bridge: %v", dpids)
	}
	r.Apply(d) // the same failure is not logged again
	n := len(logs)
	delete(sw.failAdd, "br0")
	ifaces, dpids = r.Apply(d)
	if st := ifaces["i-a"]; st.ofport != 1 || st.err != "" {
		t.Errorf("interface a after the retry: %+v", st)
	}
	if dpids["b"] == 0 {
		t.Errorf("no datapath id after the retry")
	}
	if n != 1 || !strings.Contains(logs[0], "ERROR bridge br0: no datapath module") {
		t.Errorf("log after two failing passes: %q, want the bridge's failure once", logs[:n])
	}
}

// TestReconcilerPortVLAN: a VLAN change on a running port is applied in
// place (no DeletePort/AddPort), and logged.
func TestReconcilerPortVLAN(t *testing.T) {
	sw := newFakeSwitch("a")
	r := NewReconciler(sw)
	var logs []string
	r.Logf = func(_ slog.Level, format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }
	withVLAN := func(v VLANConfig) *Desired {
		p := port("a", 0)
		p.VLAN = v
		return desired(BridgeConfig{UUID: "b", Name: "br0", Ports: []PortConfig{local("br0"), p}})
	}
	r.Apply(withVLAN(VLANConfig{}))
	sw.calls = nil
	r.Apply(withVLAN(VLANConfig{HasTag: true, Tag: 10}))
	r.Apply(withVLAN(VLANConfig{HasTag: true, Tag: 10}))
	want := []string{"SetPortVLAN br0 a access tag=10"}
	if !reflect.DeepEqual(sw.calls, want) {
		t.Errorf("calls %q, want %q", sw.calls, want)
	}
	if !strings.Contains(strings.Join(logs, "\n"), "bridge br0: port a: VLAN access tag=10") {
		t.Errorf("logs lack the VLAN change:\n%s", strings.Join(logs, "\n"))
	}
}
