package vswitchd

import (
	"reflect"
	"testing"
)

// TestOVNBedResults: the parsing TestIntegrationVMOVNController compares
// the two switches' runs with.
func TestOVNBedResults(t *testing.T) {
	r := ovnResults("govswitchd a pass 141 0 0 25s \ngovswitchd b fail 443 0 0 39s ping-vm1-vm3;\n")
	if r["a"] != (ovnResult{result: "pass", flows: "141", groups: "0", meters: "0"}) ||
		r["b"] != (ovnResult{result: "fail", flows: "443", groups: "0", meters: "0", detail: "ping-vm1-vm3;"}) {
		t.Errorf("results: %+v", r)
	}
	ref := "ovs-vswitchd: 2026-12-02T06:36:28.439Z|00011|rconn|WARN|unix:/tmp/ovn/ovs-vswitchd/br-int.mgmt: connection failed (No such file or directory)\n"
	got := "govswitchd: 2026-12-02T07:01:02.000Z|00015|rconn|WARN|unix:/tmp/ovn/govswitchd/br-int.mgmt: connection failed (No such file or directory)\n" +
		"govswitchd: 2026-12-02T07:01:03.000Z|00020|vconn|WARN|flow mod refused\n" +
		"govswitchd: 2026-12-02T07:01:04.000Z|00021|vconn|WARN|flow mod refused\n" +
		"govswitchd: 2026-12-02T07:23:19.819Z|00027|timeval|WARN|Unreasonably long 1240ms poll interval (607ms user, 430ms system)\n"
	want := []string{"govswitchd: 2026-12-02T07:01:03.000Z|00020|vconn|WARN|flow mod refused"}
	if extra := newWarnings(ref, got); !reflect.DeepEqual(extra, want) {
		t.Errorf("new warnings %q, want %q", extra, want)
	}
}
