package vswitchd

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// geneveMDRun is what one switch did in TestIntegrationTunnelGeneveMetadata.
type geneveMDRun struct {
	loss    int
	ofFlows []string // ovs-ofctl dump-flows, statistics cut
	dpFlows []string // ovs-dpctl dump-flows of the ICMP megaflows, statistics cut
	tlv     string   // ovs-ofctl dump-tlv-map
}

// TestIntegrationTunnelGeneveMetadata: a Geneve option in both directions
// between a bridge and a Linux geneve device in external mode whose route
// adds option {class=0x102,type=0x80} 0xa. The bridge maps that option to
// tun_metadata0 (add-tlv-map), lets from the tunnel only ICMP whose
// tun_metadata0 is 0xa, and sets tun_metadata0=0xb on what it sends. The
// same steps run against ovs-vswitchd 3.1 and govswitchd in one boot; the
// pings, ovs-ofctl dump-flows and dump-tlv-map, and the megaflows that
// ovs-dpctl reads from the kernel (with the options matched and set) must
// agree.
func TestIntegrationTunnelGeneveMetadata(t *testing.T) {
	testbed.Require(t)
	b := newTunnelBed(t, tunnelCase{kind: "geneve", linkArg: []string{"type", "geneve", "id", "0"}})
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// The remote end: a collect-metadata geneve device whose route to h1
	// carries the option, and static neighbours (no ARP over the tunnel).
	hr := func(args ...string) string {
		return run(append([]string{"ip", "netns", "exec", b.hr.Name}, args...)...)
	}
	hr("ip", "link", "del", "tun0")
	hr("ip", "link", "add", "tun0", "type", "geneve", "external")
	hr("ip", "addr", "add", "10.1.1.100/24", "dev", "tun0")
	hr("ip", "link", "set", "tun0", "up")
	// iproute2 reads the class and type as C numbers (0102 would be octal).
	hr("ip", "route", "add", "10.1.1.1/32", "encap", "ip", "id", "0", "dst", b.local, "geneve_opts", "258:128:0000000a", "dev", "tun0")
	h1MAC := strings.TrimSpace(run("ip", "netns", "exec", b.h1.Name, "cat", "/sys/class/net/eth0/address"))
	tunMAC := strings.TrimSpace(hr("cat", "/sys/class/net/tun0/address"))
	hr("ip", "neigh", "replace", "10.1.1.1", "lladdr", h1MAC, "dev", "tun0")
	run("ip", "netns", "exec", b.h1.Name, "ip", "neigh", "replace", "10.1.1.100", "lladdr", tunMAC, "dev", "eth0")

	br, gnv := "br"+b.v1, "gnv"+b.v1
	flows := []string{
		"in_port=2,icmp,tun_metadata0=0xa,actions=output:1",
		"in_port=1,icmp,actions=set_field:0xb->tun_metadata0,output:2",
	}
	steps := func(who string, vsctl func(args ...string) string, ofctl func(args ...string) string) geneveMDRun {
		t.Helper()
		vsctl("add-br", br, "--", "set", "Bridge", br, "fail_mode=secure",
			"--", "add-port", br, b.v1, "--", "set", "Interface", b.v1, "ofport_request=1",
			"--", "add-port", br, gnv, "--", "set", "Interface", gnv, "type=geneve", "ofport_request=2", "options:remote_ip="+b.rem)
		if e := strings.TrimSpace(vsctl("get", "Interface", gnv, "error")); e != "[]" {
			t.Fatalf("%s: Interface error %s", who, e)
		}
		ofctl("add-tlv-map", br, "{class=0x0102,type=0x80,len=4}->tun_metadata0")
		for _, f := range flows {
			ofctl("add-flow", br, f)
		}
		var r geneveMDRun
		for deadline := time.Now().Add(20 * time.Second); ; {
			out, _ := b.h1.Exec("ping", "-c", "1", "-W", "1", "10.1.1.100")
			if parseLoss(t, out) == 0 || time.Now().After(deadline) {
				break
			}
		}
		out, _ := b.h1.Exec("ping", "-c", "3", "-i", "0.2", "-W", "2", "10.1.1.100")
		r.loss = parseLoss(t, out)
		r.ofFlows = ofFlowLines(ofctl("dump-flows", br))
		// The mapping table; the header's option space is 256 bytes
		// in ovs-vswitchd, flow.TunMetadataSpace in govswitchd.
		tlv := ofctl("dump-tlv-map", br)
		r.tlv = tlv[strings.Index(tlv, "mapping table"):]
		dump, _ := exec.Command("ovs-dpctl", "dump-flows").CombinedOutput()
		t.Logf("%s: ovs-dpctl dump-flows:\n%s", who, dump)
		// The two switches number h1's datapath port, and the shared
		// geneve vport, differently; so does one datapath after another
		// test's ports came and went.
		h1, tun := dpPort(t, b.v1), dpPort(t, "genev_sys_6081")
		for _, l := range flowLinesNoStats(string(dump)) {
			if strings.Contains(l, "eth_type(0x0800)") {
				l = strings.ReplaceAll(l, "in_port("+h1+")", "in_port(h1)")
				l = strings.ReplaceAll(l, "in_port("+tun+")", "in_port(gnv)")
				if strings.HasSuffix(l, "actions:"+h1) {
					l = strings.TrimSuffix(l, h1) + "h1"
				}
				if strings.HasSuffix(l, ")),"+tun) {
					l = strings.TrimSuffix(l, tun) + "gnv"
				}
				r.dpFlows = append(r.dpFlows, macRE.ReplaceAllString(l, "MAC"))
			}
		}
		vsctl("del-br", br)
		return r
	}

	// ovs-vswitchd 3.1.
	o := startOVS(t)
	ovs := steps("ovs-vswitchd", func(args ...string) string { return o.must(t, "ovs-vsctl", args...) },
		func(args ...string) string {
			args[1] = "unix:" + filepath.Join(o.dir, args[1]+".mgmt")
			return o.must(t, "ovs-ofctl", args...)
		})
	if r := appctlAt(t, o.ctl, "exit", "--cleanup"); r.code != 0 {
		t.Fatalf("ovs-vswitchd exit --cleanup: %d %s", r.code, r.err)
	}
	for deadline := time.Now().Add(10 * time.Second); linkExists("genev_sys_6081"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("ovs-vswitchd's exit --cleanup left genev_sys_6081")
		}
	}

	// govswitchd.
	t.Cleanup(func() { (kernelProviderForTest{}).deleteShared(t) })
	srv := ovsdbtest.Start(t)
	rundir := t.TempDir()
	d, err := NewForOVSDB(Config{Datapath: "system", Rundir: rundir, Pidfile: "-", Handlers: 1, Unixctl: filepath.Join(rundir, "gov.ctl")}, nil, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	defer runOVSDB(t, d, srv.Remote, 15*time.Second)()
	gov := steps("govswitchd", func(args ...string) string {
		t.Helper()
		out, err := srv.Vsctl(15*time.Second, args...)
		if err != nil {
			t.Fatalf("ovs-vsctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}, func(args ...string) string {
		t.Helper()
		args[1] = "unix:" + filepath.Join(rundir, args[1]+".mgmt")
		out, err := exec.Command("ovs-ofctl", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ovs-ofctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	})

	for _, r := range []struct {
		who string
		r   geneveMDRun
	}{{"ovs-vswitchd", ovs}, {"govswitchd", gov}} {
		if r.r.loss != 0 {
			t.Errorf("%s: h1 lost %d of 3 pings to the geneve host", r.who, r.r.loss)
		}
	}
	if fmt.Sprint(ovs.ofFlows) != fmt.Sprint(gov.ofFlows) {
		t.Errorf("dump-flows differ:\novs-vswitchd %q\ngovswitchd   %q", ovs.ofFlows, gov.ofFlows)
	}
	if ovs.tlv != gov.tlv {
		t.Errorf("dump-tlv-map differs:\novs-vswitchd %s\ngovswitchd   %s", ovs.tlv, gov.tlv)
	}
	want := []string{"geneve({class=0x102,type=0x80,len=4,0xa})", "geneve({class=0x102,type=0x80,len=4,0xb})"}
	for _, r := range []struct {
		who   string
		flows []string
	}{{"ovs-vswitchd", ovs.dpFlows}, {"govswitchd", gov.dpFlows}} {
		all := strings.Join(r.flows, "\n")
		for _, w := range want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: no megaflow with %s:\n%s", r.who, w, all)
			}
		}
	}
	if fmt.Sprint(ovs.dpFlows) != fmt.Sprint(gov.dpFlows) {
		t.Errorf("megaflows differ:\novs-vswitchd %q\ngovswitchd   %q", ovs.dpFlows, gov.dpFlows)
	}
}

var (
	ofStatsRE = regexp.MustCompile(`(cookie|duration|n_packets|n_bytes|idle_age|hard_age)=[^ ,]*,? ?`)
	macRE     = regexp.MustCompile(`([0-9a-f]{2}:){5}[0-9a-f]{2}`)
)

// ofFlowLines is an ovs-ofctl dump-flows' flows without their statistics,
// sorted.
func ofFlowLines(dump string) []string {
	var out []string
	for _, l := range strings.Split(dump, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "NXST_FLOW") && !strings.HasPrefix(l, "OFPST_FLOW") {
			out = append(out, ofStatsRE.ReplaceAllString(l, ""))
		}
	}
	sort.Strings(out)
	return out
}
