package ovsdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// startMonitor runs a Monitor of sw against srv until the test ends.
func startMonitor(t *testing.T, srv *ovsdbtest.Server, sw Switch) {
	t.Helper()
	m := NewMonitor(sw, srv.Remote)
	m.Refresh = 200 * time.Millisecond
	var mu sync.Mutex
	m.Logf = func(_ slog.Level, format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		t.Logf("monitor: "+format, args...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Monitor.Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Monitor.Run did not return after cancel")
		}
		mu.Lock()
		m.Logf = nil
		mu.Unlock()
	})
}

// vsctl runs ovs-vsctl and fails the test if it takes longer than limit
// (a hung ovs-vsctl is the bug these tests exist to catch).
func vsctl(t *testing.T, srv *ovsdbtest.Server, limit time.Duration, args ...string) (string, error) {
	t.Helper()
	start := time.Now()
	out, err := srv.Vsctl(limit, args...)
	if el := time.Since(start); el > limit {
		t.Fatalf("ovs-vsctl %s took %v (limit %v): %s", strings.Join(args, " "), el, limit, out)
	}
	if strings.Contains(out, "timed out") || strings.Contains(out, "alarm") {
		t.Fatalf("ovs-vsctl %s timed out waiting for the switch: %s", strings.Join(args, " "), out)
	}
	return out, err
}

func mustVsctl(t *testing.T, srv *ovsdbtest.Server, args ...string) string {
	t.Helper()
	out, err := vsctl(t, srv, 5*time.Second, args...)
	if err != nil {
		t.Fatalf("ovs-vsctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func TestMonitorDrivenByVsctl(t *testing.T) {
	srv := ovsdbtest.Start(t)
	sw := newFakeSwitch("eth1", "eth2", "eth3")
	startMonitor(t, srv, sw)

	mustVsctl(t, srv, "add-br", "br0")
	if got := sw.state()["br0"]; !reflect.DeepEqual(got, []string{"br0:65534"}) {
		t.Fatalf("after add-br: ports %v", got)
	}
	if got := mustVsctl(t, srv, "get", "Interface", "br0", "ofport"); got != "65534" {
		t.Errorf("br0 ofport = %q, want 65534", got)
	}
	// The datapath id is the bridge's address, which with no port to
	// take one from is made from the Bridge row's UUID, as in OVS.
	uuid := mustVsctl(t, srv, "get", "Bridge", "br0", "_uuid")
	mac := uuidAddress(uuid)
	if want := fmt.Sprintf(`"0000%x"`, []byte(mac)); mustVsctl(t, srv, "get", "Bridge", "br0", "datapath_id") != want {
		t.Errorf("datapath_id = %s, want %s (from _uuid %s)", mustVsctl(t, srv, "get", "Bridge", "br0", "datapath_id"), want, uuid)
	}
	mustVsctl(t, srv, "set", "Bridge", "br0", `other_config:hwaddr="00:11:22:33:44:55"`)
	if got := mustVsctl(t, srv, "get", "Bridge", "br0", "datapath_id"); got != `"0000001122334455"` {
		t.Errorf("with hwaddr 00:11:22:33:44:55: datapath_id = %s", got)
	}
	mustVsctl(t, srv, "set", "Bridge", "br0", "other_config:datapath-id=0x1234")
	if got := mustVsctl(t, srv, "get", "Bridge", "br0", "datapath_id"); got != `"0000000000001234"` {
		t.Errorf("with datapath-id 0x1234: datapath_id = %s", got)
	}
	mustVsctl(t, srv, "remove", "Bridge", "br0", "other_config", "hwaddr", "datapath-id")

	steps := []struct {
		name    string
		args    []string
		wantErr string // substring of ovs-vsctl's output when it reports an error
		want    map[string][]string
	}{
		{name: "add-port", args: []string{"add-port", "br0", "eth1"},
			want: map[string][]string{"br0": {"br0:65534", "eth1:1"}}},
		{name: "add-port ofport_request", args: []string{"add-port", "br0", "eth2", "--", "set", "Interface", "eth2", "ofport_request=7"},
			want: map[string][]string{"br0": {"br0:65534", "eth1:1", "eth2:7"}}},
		{name: "add-port missing device", args: []string{"add-port", "br0", "nodev0"},
			wantErr: "Error detected while setting up 'nodev0'",
			want:    map[string][]string{"br0": {"br0:65534", "eth1:1", "eth2:7"}}},
		{name: "unsupported type", args: []string{"add-port", "br0", "vx9", "--", "set", "Interface", "vx9", "type=stt"},
			wantErr: "Error detected while setting up 'vx9'",
			want:    map[string][]string{"br0": {"br0:65534", "eth1:1", "eth2:7"}}},
		{name: "dot1q-tunnel refused", args: []string{"add-port", "br0", "eth3", "vlan_mode=dot1q-tunnel", "tag=10"},
			wantErr: "vlan_mode dot1q-tunnel (802.1ad/QinQ) is not supported",
			want:    map[string][]string{"br0": {"br0:65534", "eth1:1", "eth2:7"}}},
		{name: "dot1q-tunnel cleared", args: []string{"clear", "Port", "eth3", "vlan_mode"},
			want: map[string][]string{"br0": {"br0:65534", "eth1:1", "eth2:7", "eth3:2"}}},
		{name: "del-port eth3", args: []string{"del-port", "br0", "eth3"},
			want: map[string][]string{"br0": {"br0:65534", "eth1:1", "eth2:7"}}},
		{name: "change ofport_request re-adds", args: []string{"set", "Interface", "eth1", "ofport_request=5"},
			want: map[string][]string{"br0": {"br0:65534", "eth1:5", "eth2:7"}}},
		{name: "del-port", args: []string{"del-port", "br0", "eth2"},
			want: map[string][]string{"br0": {"br0:65534", "eth1:5"}}},
		{name: "second bridge", args: []string{"add-br", "br1", "--", "add-port", "br1", "eth3"},
			want: map[string][]string{"br0": {"br0:65534", "eth1:5"}, "br1": {"br1:65534", "eth3:1"}}},
		{name: "del-br", args: []string{"del-br", "br1"},
			want: map[string][]string{"br0": {"br0:65534", "eth1:5"}}},
		{name: "bad other_config is ignored", args: []string{"set", "Open_vSwitch", ".", "other_config:flow-limit=lots"},
			want: map[string][]string{"br0": {"br0:65534", "eth1:5"}}},
		// Columns the models lack (external_ids) change too, with
		// next_cfg; ovs-vsctl waits for them like for any other.
		{name: "column outside the models", args: []string{"set", "Open_vSwitch", ".", "external_ids:system-id=abc"},
			want: map[string][]string{"br0": {"br0:65534", "eth1:5"}}},
		{name: "bridge external_ids", args: []string{"br-set-external-id", "br0", "k", "v"},
			want: map[string][]string{"br0": {"br0:65534", "eth1:5"}}},
	}
	for _, st := range steps {
		out, err := vsctl(t, srv, 5*time.Second, st.args...)
		if st.wantErr == "" && err != nil {
			t.Fatalf("%s: ovs-vsctl: %v\n%s", st.name, err, out)
		}
		if st.wantErr != "" && !strings.Contains(out, st.wantErr) {
			t.Errorf("%s: ovs-vsctl output %q does not contain %q (err %v)", st.name, out, st.wantErr, err)
		}
		if got := sw.state(); !reflect.DeepEqual(got, st.want) {
			t.Errorf("%s: switch has %v, want %v", st.name, got, st.want)
		}
	}

	// The failed interfaces carry ofport -1 and the reason.
	if got := mustVsctl(t, srv, "get", "Interface", "nodev0", "ofport"); got != "-1" {
		t.Errorf("nodev0 ofport = %s, want -1", got)
	}
	if got := mustVsctl(t, srv, "get", "Interface", "nodev0", "error"); got != `"could not open network device nodev0 (No such device)"` {
		t.Errorf("nodev0 error = %s", got)
	}
	// show lists the ofports we wrote? ovs-vsctl show prints ports and errors.
	show := mustVsctl(t, srv, "show")
	for _, want := range []string{`Bridge br0`, `Port eth1`, `error: "could not open network device nodev0 (No such device)"`} {
		if !strings.Contains(show, want) {
			t.Errorf("ovs-vsctl show lacks %q:\n%s", want, show)
		}
	}
	// A device that appears later is picked up on the next reconfiguration.
	sw.mu.Lock()
	sw.devices["nodev0"] = true
	sw.mu.Unlock()
	mustVsctl(t, srv, "set", "Bridge", "br0", "other_config:hwaddr=00:00:00:00:00:01")
	if got := mustVsctl(t, srv, "get", "Interface", "nodev0", "ofport"); got == "-1" {
		t.Errorf("nodev0 still ofport -1 after the device appeared")
	}
}

func TestMonitorBridgeSettings(t *testing.T) {
	srv := ovsdbtest.Start(t)
	sw := newFakeSwitch()
	startMonitor(t, srv, sw)
	mustVsctl(t, srv, "add-br", "br0")
	cases := []struct {
		name  string
		args  []string
		check func(c BridgeConfig) error
	}{
		{"set-fail-mode secure", []string{"set-fail-mode", "br0", "secure"}, func(c BridgeConfig) error {
			if c.FailMode != "secure" {
				return fmt.Errorf("fail mode %q", c.FailMode)
			}
			return nil
		}},
		{"set-controller", []string{"set-controller", "br0", "tcp:127.0.0.1:6653", "unix:/tmp/x.sock"}, func(c BridgeConfig) error {
			if len(c.Controllers) != 2 || c.Controllers[0].Target != "tcp:127.0.0.1:6653" || c.Controllers[1].Target != "unix:/tmp/x.sock" {
				return fmt.Errorf("controllers %+v", c.Controllers)
			}
			return nil
		}},
		{"protocols", []string{"set", "Bridge", "br0", "protocols=OpenFlow13,OpenFlow10"}, func(c BridgeConfig) error {
			if !reflect.DeepEqual(c.Protocols, []uint8{1, 4}) {
				return fmt.Errorf("protocols %v", c.Protocols)
			}
			return nil
		}},
		{"mac knobs", []string{"set", "Bridge", "br0", "other_config:mac-table-size=100", "other_config:mac-aging-time=30"}, func(c BridgeConfig) error {
			if c.MACTableSize != 100 || c.MACAging != 30*time.Second {
				return fmt.Errorf("mac table %d aging %v", c.MACTableSize, c.MACAging)
			}
			return nil
		}},
		{"del-controller", []string{"del-controller", "br0"}, func(c BridgeConfig) error {
			if len(c.Controllers) != 0 {
				return fmt.Errorf("controllers %+v", c.Controllers)
			}
			return nil
		}},
		{"del-fail-mode", []string{"del-fail-mode", "br0"}, func(c BridgeConfig) error {
			if c.FailMode != "standalone" {
				return fmt.Errorf("fail mode %q", c.FailMode)
			}
			return nil
		}},
	}
	for _, tc := range cases {
		mustVsctl(t, srv, tc.args...)
		c, ok := sw.bridgeCfg("br0")
		if !ok {
			t.Fatalf("%s: bridge gone", tc.name)
		}
		if err := tc.check(c); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	mustVsctl(t, srv, "set", "Open_vSwitch", ".", "other_config:flow-limit=5000", "other_config:govswitch-governor=true",
		"other_config:max-idle=2500", "other_config:n-handler-threads=3")
	sw.mu.Lock()
	g := sw.global
	sw.mu.Unlock()
	if g.FlowLimit != 5000 || g.Governor == nil || !*g.Governor || g.MaxIdle != 2500*time.Millisecond || g.Handlers != 3 {
		t.Errorf("global %+v", g)
	}
}

func TestMonitorBridgeFailure(t *testing.T) {
	srv := ovsdbtest.Start(t)
	sw := newFakeSwitch("eth1")
	sw.failAdd["brx"] = errors.New("datapath: no module")
	startMonitor(t, srv, sw)
	out, _ := vsctl(t, srv, 5*time.Second, "add-br", "brx")
	if !strings.Contains(out, "Error detected while setting up 'brx'") {
		t.Errorf("add-br of a failing bridge: ovs-vsctl said %q", out)
	}
	// It is retried on the next change, and works once the cause is gone.
	sw.mu.Lock()
	delete(sw.failAdd, "brx")
	sw.mu.Unlock()
	mustVsctl(t, srv, "add-port", "brx", "eth1")
	if got := sw.state()["brx"]; !reflect.DeepEqual(got, []string{"brx:65534", "eth1:1"}) {
		t.Errorf("brx ports %v", got)
	}
}

// TestMonitorServerRestart: the monitor reconnects after ovsdb-server
// restarts, and ovs-vsctl keeps working without hanging.
func TestMonitorServerRestart(t *testing.T) {
	srv := ovsdbtest.Start(t)
	sw := newFakeSwitch("eth1")
	startMonitor(t, srv, sw)
	mustVsctl(t, srv, "add-br", "br0")
	srv.Restart()
	if _, err := vsctl(t, srv, 10*time.Second, "add-port", "br0", "eth1"); err != nil {
		t.Fatalf("add-port after a server restart: %v", err)
	}
	if got := sw.state()["br0"]; !reflect.DeepEqual(got, []string{"br0:65534", "eth1:1"}) {
		t.Errorf("br0 ports %v", got)
	}
}

func TestMonitorConnectFails(t *testing.T) {
	m := NewMonitor(newFakeSwitch(), "unix:"+t.TempDir()+"/none.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := m.Run(ctx); err == nil || !strings.Contains(err.Error(), "connect") {
		t.Errorf("Run against no server: %v, want a connect error", err)
	}
}

// TestMonitorLeavesNoGoroutines: Run's return stops the client's
// goroutines (connection, cache, reconnect) too.
func TestMonitorLeavesNoGoroutines(t *testing.T) {
	srv := ovsdbtest.Start(t)
	before := runtime.NumGoroutine()
	m := NewMonitor(newFakeSwitch("eth1"), srv.Remote)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	mustVsctl(t, srv, "add-br", "br0", "--", "add-port", "br0", "eth1")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before Run, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
