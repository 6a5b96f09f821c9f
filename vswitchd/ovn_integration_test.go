package vswitchd

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/internal/testbed"
)

// TestIntegrationVMOVNController runs Debian's OVN 23.03 (NB and SB
// ovsdb-servers, ovn-northd, ovn-controller) through the scenarios of
// scripts/ovn/bed.sh, the script scripts/ovn-sandbox runs, first over
// ovs-vswitchd 3.1 and then over govswitchd (this test binary under the
// name ovs-vswitchd, with ovs-vswitchd's command line), in the same boot:
// a logical switch, a router between two switches, allow-related ACLs,
// dnat_and_snat on a gateway router, a load balancer and a second chassis
// (its own govswitchd in a network namespace) over geneve, each checked
// with ping and TCP between namespaces, and OVN's native DHCP and DNS
// (ovn-controller's answers through packet-in2 and resume). For govswitchd every scenario must pass
// as it does for ovs-vswitchd, with the same number of OpenFlow flows and
// groups installed by ovn-controller, and neither govswitchd nor
// ovn-controller may log a WARN or ERR line that ovs-vswitchd's run does
// not have. It also checks what ovn-controller needs of the switch before a
// port comes up: its Geneve option mapped (NXT_TLV_TABLE_MOD), its bundles
// and conntrack zone flushes taken, the Datapath row filled. OVN needs
// conntrack zones, so the vm bed. OVN_SCENARIOS narrows the scenarios (a
// prefix of abcde, then f and g, each optional).
func TestIntegrationVMOVNController(t *testing.T) {
	testbed.RequireVM(t)
	for _, tool := range []string{"ovn-controller", "ovn-northd", "ovn-nbctl", "ovsdb-server", "ovs-vswitchd", "/usr/bin/python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s missing (scripts/install-deps --test installs ovn-central and ovn-host): %v", tool, err)
		}
	}
	scenarios := "abcdefg"
	if s := os.Getenv("OVN_SCENARIOS"); s != "" {
		scenarios = s
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "ovs-vswitchd")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	ovs, err := exec.LookPath("ovs-vswitchd")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	script, err := filepath.Abs("../scripts/ovn/bed.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script, out, "ovs-vswitchd:"+ovs, "govswitchd:"+bin)
	cmd.Env = append(os.Environ(), "SCENARIOS="+scenarios, "WAIT=120")
	log, err := cmd.CombinedOutput()
	t.Logf("scripts/ovn/bed.sh:\n%s", log)
	if err != nil {
		t.Fatalf("scripts/ovn/bed.sh: %v", err)
	}
	read := func(sw, name string) string {
		b, err := os.ReadFile(filepath.Join(out, sw, name))
		if err != nil {
			t.Fatalf("%s %s: %v", sw, name, err)
		}
		return string(b)
	}
	ref, got := ovnResults(read("ovs-vswitchd", "results")), ovnResults(read("govswitchd", "results"))
	for _, s := range scenarios {
		sc := string(s)
		r, ok := ref[sc]
		if !ok || r.result != "pass" {
			t.Fatalf("scenario %s does not pass for ovs-vswitchd, so the bed proves nothing: %+v", sc, r)
		}
		g := got[sc]
		if g.result != "pass" {
			t.Errorf("scenario %s over govswitchd: %s %s (ovs-vswitchd: pass)", sc, g.result, g.detail)
		}
		if g.flows != r.flows || g.groups != r.groups {
			t.Errorf("scenario %s: govswitchd holds %s flows and %s groups, ovs-vswitchd %s and %s",
				sc, g.flows, g.groups, r.flows, r.groups)
		}
	}
	ctl := read("govswitchd", "ovn-controller.log")
	if strings.Contains(scenarios, "f") {
		ctl += read("govswitchd", "hv2/ovn-controller.log")
	}
	for _, bad := range []string{"version negotiation failed", "switch refused to allocate Geneve option",
		"OpenFlow error", "OFPBFC_MSG_UNSUP", "OFPBRC_BAD_SUBTYPE"} {
		if strings.Contains(ctl, bad) {
			t.Errorf("ovn-controller logged %q over govswitchd", bad)
		}
	}
	if extra := newWarnings(read("ovs-vswitchd", "warnings"), read("govswitchd", "warnings")); len(extra) > 0 {
		t.Errorf("WARN/ERR lines of ovn-controller and govswitchd that ovs-vswitchd's run lacks:\n%s", strings.Join(extra, "\n"))
	}
	if tlv := squeezeBlanks(read("govswitchd", "tlv-map")); !strings.Contains(tlv, "\n0x102 0x80 4 tun_metadata0\n") {
		t.Errorf("br-int's TLV map lacks ovn-controller's Geneve option:\n%s", tlv)
	}
	if dp := read("govswitchd", "datapath-table"); !strings.Contains(dp, `ct_zone="true"`) || !strings.Contains(dp, `recirc="true"`) {
		t.Errorf("the Datapath row lacks the kernel datapath's capabilities:\n%s", dp)
	}
}

// ovnResult is one line of bed.sh's results: SWITCH SCENARIO pass|fail
// FLOWS GROUPS METERS SECONDS DETAIL.
type ovnResult struct{ result, flows, groups, meters, detail string }

func ovnResults(s string) map[string]ovnResult {
	m := map[string]ovnResult{}
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) < 7 {
			continue
		}
		r := ovnResult{result: f[2], flows: f[3], groups: f[4], meters: f[5]}
		if len(f) > 7 {
			r.detail = f[7]
		}
		m[f[1]] = r
	}
	return m
}

// logPrefix is what differs between two runs' copies of a log line: the
// switch label, the time and sequence number, the run folder.
var logPrefix = regexp.MustCompile(`^\S+: \S+\|\d+\|`)

// newWarnings returns the lines of got (bed.sh's warnings file) whose
// message ref lacks, each once, but timeval's.
func newWarnings(ref, got string) []string {
	norm := func(l, sw string) string {
		return strings.ReplaceAll(logPrefix.ReplaceAllString(l, ""), "/tmp/ovn/"+sw+"/", "/tmp/ovn/SWITCH/")
	}
	have := map[string]bool{}
	for _, l := range strings.Split(ref, "\n") {
		have[norm(l, "ovs-vswitchd")] = true
	}
	seen := map[string]bool{}
	var extra []string
	for _, l := range strings.Split(got, "\n") {
		n := norm(l, "govswitchd")
		// timeval's lines ("Unreasonably long 1240ms poll interval",
		// with its faults and context switches) say the bed's CPU was
		// slow, whichever process logs them.
		if l == "" || have[n] || seen[n] || strings.Contains(l, "|timeval|") || strings.Contains(l, "|timeval(") {
			continue
		}
		seen[n] = true
		extra = append(extra, l)
	}
	sort.Strings(extra)
	return extra
}

// squeezeBlanks trims each line and folds its runs of blanks into one
// space.
func squeezeBlanks(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
