package ovsdb

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestParseSFlow(t *testing.T) {
	i := func(v int) *int { return &v }
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name string
		row  SFlow
		want *SFlowConfig
		msg  string
	}{
		{"defaults", SFlow{Targets: []string{"127.0.0.1"}},
			&SFlowConfig{Targets: []string{"127.0.0.1:6343"}, Sampling: 400, Polling: 30, Header: 128}, ""},
		{"all columns", SFlow{Agent: s("eth0"), Targets: []string{"10.0.0.2:7000", "[::1]:6344"}, Sampling: i(1), Polling: i(0), Header: i(64)},
			&SFlowConfig{Agent: "eth0", Targets: []string{"10.0.0.2:7000", "[::1]:6344"}, Sampling: 1, Polling: 0, Header: 64}, ""},
		{"no targets", SFlow{}, nil, "has no targets"},
		{"host name", SFlow{Targets: []string{"collector:6343"}}, nil, `target "collector:6343" is not IP[:PORT]`},
		{"zero sampling", SFlow{Targets: []string{"127.0.0.1"}, Sampling: i(0)}, nil, "sampling 0 is not a rate (1 or more)"},
		{"negative polling", SFlow{Targets: []string{"127.0.0.1"}, Polling: i(-1)}, nil, "polling -1 is not an interval in seconds"},
		{"zero header", SFlow{Targets: []string{"127.0.0.1"}, Header: i(0)}, nil, "header 0 is not a byte count"},
	} {
		got, msg := parseSFlow(&tc.row)
		if msg != tc.msg || !got.Equal(tc.want) {
			t.Errorf("%s: %+v %q, want %+v %q", tc.name, got, msg, tc.want, tc.msg)
		}
	}
}

// TestBuildSampling: a bridge's sFlow row becomes its SFlowConfig, with
// sub-agent ids in bridge order, and the NetFlow row its NetFlowConfig;
// the IPFIX row and the collector set that names it the bridge's
// IPFIXConfig; a reference to a missing IPFIX row is a problem.
func TestBuildSampling(t *testing.T) {
	sf, nf, ipx, seven := "sf", "nf", "ipx", 7
	r := &Rows{Root: &OpenvSwitch{Bridges: []string{"b0", "b1", "b2"}},
		Bridges: map[string]*Bridge{
			"b0": {UUID: "b0", Name: "br0", SFlow: &sf, NetFlow: &nf},
			"b1": {UUID: "b1", Name: "br1", SFlow: &sf, IPFIX: &ipx},
			"b2": {UUID: "b2", Name: "br2", IPFIX: &nf},
		},
		SFlows:   map[string]*SFlow{"sf": {Targets: []string{"127.0.0.1:6343"}}},
		NetFlows: map[string]*NetFlow{"nf": {Targets: []string{"127.0.0.1:2055"}, ActiveTimeout: -5, EngineID: &seven}},
		FSCS:     map[string]*FlowSampleCollectorSet{"f": {ID: 5, Bridge: "b1", IPFIX: &ipx}, "g": {ID: 6, Bridge: "b1"}},
		IPFIXes:  map[string]*IPFIX{"ipx": {Targets: []string{"127.0.0.1"}, Sampling: &seven, OtherConfig: map[string]string{"enable-input-sampling": "true"}}},
	}
	d := Build(r)
	if len(d.Bridges) != 3 || d.Bridges[0].SFlow == nil || d.Bridges[1].SFlow == nil ||
		d.Bridges[0].SFlow.SubID != 0 || d.Bridges[1].SFlow.SubID != 1 {
		t.Fatalf("bridges %+v", d.Bridges)
	}
	want := &NetFlowConfig{Targets: []string{"127.0.0.1:2055"}, EngineType: -1, EngineID: 7}
	if !d.Bridges[0].NetFlow.Equal(want) {
		t.Errorf("NetFlow %+v, want %+v", d.Bridges[0].NetFlow, want)
	}
	ipc := d.Bridges[1].IPFIX
	wantX := IPFIXExporterConfig{Targets: []string{"127.0.0.1:4739"}, Sampling: 7, InputSampling: false, OutputSampling: true, TunnelSampling: true}
	if ipc == nil || ipc.Bridge == nil || !ipc.Bridge.equal(&wantX) || len(ipc.Sets) != 1 || ipc.Sets[0].ID != 5 {
		t.Errorf("IPFIX %+v, want bridge %+v and set 5 (set 6 has no IPFIX row)", ipc, wantX)
	}
	all := strings.Join(d.Problems, "\n")
	for _, want := range []string{"bridge br0: active timeout interval set to negative value", "bridge br2 refers to missing IPFIX row nf"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
}

// sflowFake is a fake switch that runs sFlow.
type sflowFake struct {
	*fakeSwitch
	fail error
}

func (f *sflowFake) SetSFlow(bridge string, c *SFlowConfig) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c == nil {
		f.record("SetSFlow %s off", bridge)
	} else {
		f.record("SetSFlow %s %v %d", bridge, c.Targets, c.Sampling)
	}
	return f.fail
}

// TestReconcilerSFlow: sFlow is applied without rebuilding the bridge,
// once per change, again after a rebuild; a switch that cannot run it
// (or fails to) has the row refused with a warning.
func TestReconcilerSFlow(t *testing.T) {
	f := &sflowFake{fakeSwitch: newFakeSwitch()}
	rec := NewReconciler(f)
	var warns []string
	rec.Logf = func(l slog.Level, format string, args ...any) {
		if l == slog.LevelWarn {
			warns = append(warns, fmt.Sprintf(format, args...))
		}
	}
	sfc := &SFlowConfig{Targets: []string{"127.0.0.1:6343"}, Sampling: 1, Polling: 1, Header: 128}
	br := BridgeConfig{UUID: "b", Name: "br0", FailMode: "standalone", Ports: []PortConfig{local("br0")}, SFlow: sfc}
	rec.Apply(desired(br))
	rec.Apply(desired(br))
	br.FailMode = "secure"
	rec.Apply(desired(br)) // rebuilt: sFlow again
	br.SFlow = nil
	rec.Apply(desired(br))
	var got []string
	for _, c := range f.calls {
		if strings.HasPrefix(c, "SetSFlow") || strings.HasPrefix(c, "Reconfigure") {
			got = append(got, c)
		}
	}
	want := []string{"SetSFlow br0 [127.0.0.1:6343] 1", "ReconfigureBridge br0 secure 0", "SetSFlow br0 [127.0.0.1:6343] 1", "SetSFlow br0 off"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("calls %q, want %q", got, want)
	}

	f.fail = fmt.Errorf("no agent address")
	br.SFlow = sfc
	rec.Apply(desired(br))
	if len(warns) != 1 || !strings.Contains(warns[0], "bridge br0: sFlow: no agent address; not configured") {
		t.Errorf("warnings %q", warns)
	}

	plain := NewReconciler(newFakeSwitch())
	warns = nil
	plain.Logf = rec.Logf
	plain.Apply(desired(br))
	if len(warns) != 1 || !strings.Contains(warns[0], "sFlow is not supported by this switch") {
		t.Errorf("switch without sFlow: warnings %q", warns)
	}
}
