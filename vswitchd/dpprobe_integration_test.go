package vswitchd

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log destination the test reads while the daemon writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var vlanProbeRE = regexp.MustCompile(`\|ofproto_dpif\|INFO\|system@\S+: VLAN header stack length probed as (\d+)\n`)

// TestIntegrationVLANProbe: ovs-vswitchd and govswitchd probe the same
// kernel for how many VLAN headers it matches, log it alike (module
// ofproto_dpif, INFO: the line OVS's OVS_CHECK_8021AD reads), and report
// it alike in dpif/show-dp-features.
func TestIntegrationVLANProbe(t *testing.T) {
	b := newBed(t)
	o := startOVS(t)
	o.must(t, "ovs-vsctl", "add-br", b.name)
	ovsFeatures := appctlAt(t, o.ctl, "dpif/show-dp-features", b.name)
	var ovsLog []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ovsLog, _ = os.ReadFile(filepath.Join(o.dir, "ovs-vswitchd.log"))
		if vlanProbeRE.Match(ovsLog) || time.Now().After(deadline) {
			break
		}
	}
	ovsN := vlanProbeRE.FindSubmatch(ovsLog)
	if ovsN == nil {
		t.Fatalf("ovs-vswitchd logged no VLAN probe:\n%s", ovsLog)
	}
	o.must(t, "ovs-vsctl", "del-br", b.name)

	cfg, _, _, err := ParseArgs(b.args())
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	d, err := New(cfg, nil, &log)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	govN := vlanProbeRE.FindStringSubmatch(log.String())
	if govN == nil {
		t.Fatalf("govswitchd logged no VLAN probe:\n%s", log.String())
	}
	if string(ovsN[1]) != govN[1] || govN[1] != "2" {
		t.Errorf("VLAN header stack length: ovs-vswitchd %s, govswitchd %s; Linux 6.1 matches 2", ovsN[1], govN[1])
	}
	if n := len(vlanProbeRE.FindAllString(log.String(), -1)); n != 1 {
		t.Errorf("govswitchd logged the probe %d times, want once (OVS_CHECK_8021AD reads one number)", n)
	}
	govFeatures := appctlAt(t, d.ctl.Addr(), "dpif/show-dp-features", b.name)
	line := regexp.MustCompile(`(?m)^Max VLAN headers: \d+$`)
	if o, g := line.FindString(ovsFeatures.out), line.FindString(govFeatures.out); o == "" || o != g {
		t.Errorf("dpif/show-dp-features: ovs-vswitchd %q, govswitchd %q:\n%s\n%s", o, g, ovsFeatures.out, govFeatures.out)
	}
}
