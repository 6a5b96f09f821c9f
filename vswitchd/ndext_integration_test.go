package vswitchd

import (
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// ndExtFlows forward neighbour discovery only when the ND extension
// fields match: a solicitation whose first option is a source link-layer
// address (nd_options_type=1) and a solicited, override advertisement
// (nd_reserved=0x60000000), each way. Rules for other values of the
// fields (which real traffic here never has) must see nothing, every
// other ND message is dropped, and the rest of IPv6 (the pings) is
// forwarded.
var ndExtFlows = []string{
	"priority=100,in_port=1,icmp6,icmp_type=135,icmp_code=0,nd_options_type=1,actions=output:2",
	"priority=100,in_port=2,icmp6,icmp_type=135,icmp_code=0,nd_options_type=1,actions=output:1",
	"priority=100,in_port=1,icmp6,icmp_type=136,icmp_code=0,nd_reserved=0x60000000,actions=output:2",
	"priority=100,in_port=2,icmp6,icmp_type=136,icmp_code=0,nd_reserved=0x60000000,actions=output:1",
	"priority=100,icmp6,icmp_type=135,icmp_code=0,nd_options_type=2,actions=output:1,output:2",
	"priority=100,icmp6,icmp_type=136,icmp_code=0,nd_reserved=0x20000000,actions=output:1,output:2",
	"priority=50,icmp6,icmp_type=135,actions=drop",
	"priority=50,icmp6,icmp_type=136,actions=drop",
	"priority=10,in_port=1,ipv6,actions=output:2",
	"priority=10,in_port=2,ipv6,actions=output:1",
}

// ndExtRun is what one switch did with the ND traffic.
type ndExtRun struct {
	loss    int      // pings lost of 3
	rules   []string // dump-flows lines of the ND rules, n_packets kept, other stats dropped
	ndFlows []string // ovs-dpctl dump-flows lines for ICMPv6 types 135 and 136
	setErr  string   // ovs-ofctl's error for a set_field to nd_options_type
}

var ndExtStatsRE = regexp.MustCompile(`cookie=\S+ |duration=[^,]+, |table=0, |n_bytes=\d+, |idle_age=\d+, `)

// ndExtTraffic pings h2 from h1 over IPv6 (with empty neighbour caches,
// so the pings start with a solicitation and an advertisement each way)
// and reads back the rules, the datapath flows and a refused set_field.
func (b *bed) ndExtTraffic(t *testing.T, ofctl func(args ...string) (string, error), appctl func(args ...string) string) ndExtRun {
	t.Helper()
	var r ndExtRun
	b.h1.Exec("ip", "-6", "neigh", "flush", "dev", "eth0")
	b.h2.Exec("ip", "-6", "neigh", "flush", "dev", "eth0")
	out, _ := b.h1.Exec("ping", "-6", "-c", "3", "-i", "0.3", "-W", "2", "fd00::2")
	t.Logf("ping -6 fd00::2:\n%s", out)
	r.loss = parseLoss(t, out)
	dump, err := ofctl("dump-flows")
	if err != nil {
		t.Fatalf("ovs-ofctl dump-flows: %v\n%s", err, dump)
	}
	for _, l := range strings.Split(dump, "\n") {
		if strings.Contains(l, "nd_") {
			r.rules = append(r.rules, strings.TrimSpace(ndExtStatsRE.ReplaceAllString(l, "")))
		}
	}
	// ovs-vswitchd puts a flow for an ND packet whose megaflow needs the
	// fields it cannot key (a mask without them) and deletes it at the
	// next revalidation, whose translation from the flow's key needs
	// them; govswitchd never puts one. Compare after two revalidations.
	dp, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	t.Logf("ovs-dpctl dump-flows right after the pings:\n%s", dp)
	appctl("revalidator/wait")
	appctl("revalidator/wait")
	dp, _ = exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	t.Logf("ovs-dpctl dump-flows after revalidation:\n%s", dp)
	for _, l := range strings.Split(string(dp), "\n") {
		if strings.Contains(l, "icmpv6(type=135") || strings.Contains(l, "icmpv6(type=136") {
			r.ndFlows = append(r.ndFlows, l)
		}
	}
	out, err = ofctl("add-flow", "priority=200,icmp6,icmp_type=135,actions=set_field:2->nd_options_type,output:2")
	if err == nil {
		t.Errorf("set_field to nd_options_type accepted")
	}
	if i := strings.Index(out, "OFPT_ERROR"); i >= 0 {
		out = out[i:]
	}
	if i := strings.Index(out, "\n"); i >= 0 {
		out = out[:i]
	}
	r.setErr = strings.TrimSpace(out)
	return r
}

// TestIntegrationNDExtensions: matches on nd_reserved and nd_options_type
// against real neighbour discovery, ovs-vswitchd 3.1 then govswitchd in
// one boot. The Linux datapath has no ND extensions, so both switches
// handle the ND packets in userspace (no datapath flow for them once
// revalidated: ovs-vswitchd's stand briefly, govswitchd's never), forward
// exactly those the rules pick, and refuse set_field to the fields with
// OFPBAC_BAD_SET_ARGUMENT.
func TestIntegrationNDExtensions(t *testing.T) {
	b := newBed(t)
	for _, h := range []struct {
		ns   string
		addr string
	}{{"h1", "fd00::1/64"}, {"h2", "fd00::2/64"}} {
		n := b.h1
		if h.ns == "h2" {
			n = b.h2
		}
		for _, args := range [][]string{
			{"sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.eth0.disable_ipv6=0"},
			{"ip", "-6", "addr", "add", h.addr, "dev", "eth0", "nodad"},
		} {
			if out, err := n.Exec(args[0], args[1:]...); err != nil {
				t.Fatalf("%s %v: %v\n%s", h.ns, args, err, out)
			}
		}
	}

	var ovs ndExtRun
	b.withOVSSwitch(t, ndExtFlows, func(o *ovsSwitch) {
		if feat := appctlAt(t, o.ctl, "dpif/show-dp-features", b.name).out; !strings.Contains(feat, "IPv6 ND Extension: No") {
			t.Logf("ovs-vswitchd dpif/show-dp-features:\n%s", feat)
		}
		ovs = b.ndExtTraffic(t, func(args ...string) (string, error) {
			out, err := o.cmd("ovs-ofctl", append(args[:1:1], append([]string{b.name}, args[1:]...)...)...).CombinedOutput()
			return string(out), err
		}, func(args ...string) string { return appctlAt(t, o.ctl, args...).out })
	})
	t.Logf("ovs-vswitchd: %+v", ovs)

	appctl := b.startCt(t)
	b.addFlows(t, ndExtFlows)
	gov := b.ndExtTraffic(t, func(args ...string) (string, error) { return b.ofctlOpts(nil, args...) }, appctl)
	t.Logf("govswitchd: %+v", gov)

	if ovs.loss != 0 || gov.loss != 0 {
		t.Errorf("pings lost: ovs-vswitchd %d, govswitchd %d of 3", ovs.loss, gov.loss)
	}
	// govswitchd never has a datapath flow for a translation that needs
	// the fields. ovs-vswitchd 3.1 here leaves some (a mask without
	// them: a megaflow wider than its translation) until they idle out;
	// logged, not copied.
	if len(gov.ndFlows) != 0 {
		t.Errorf("govswitchd has datapath flows for ND: %q", gov.ndFlows)
	}
	if len(ovs.ndFlows) != 0 {
		t.Logf("ovs-vswitchd's datapath flows for ND (matching neither field): %q", ovs.ndFlows)
	}
	// The rules print back alike; the hit counts depend on when each
	// host probes its neighbour, so only their pattern is compared.
	npRE := regexp.MustCompile(`n_packets=\d+, `)
	strip := func(rules []string) string {
		var s []string
		for _, l := range rules {
			s = append(s, npRE.ReplaceAllString(l, ""))
		}
		sort.Strings(s)
		return strings.Join(s, "\n")
	}
	if strip(gov.rules) != strip(ovs.rules) {
		t.Errorf("ND rules differ:\novs-vswitchd:\n%s\ngovswitchd:\n%s", strings.Join(ovs.rules, "\n"), strings.Join(gov.rules, "\n"))
	}
	for _, sw := range []struct {
		name string
		run  ndExtRun
	}{{"ovs-vswitchd", ovs}, {"govswitchd", gov}} {
		for _, l := range sw.run.rules {
			hit := !strings.Contains(l, "n_packets=0,")
			switch {
			case strings.Contains(l, "nd_options_type=2") || strings.Contains(l, "nd_reserved=536870912"):
				if hit {
					t.Errorf("%s: a rule for a value no packet had matched: %s", sw.name, l)
				}
			case strings.Contains(l, "in_port=1,icmp_type=135") || strings.Contains(l, "in_port=2,icmp_type=136"):
				if !hit {
					t.Errorf("%s: h1's solicitation or h2's advertisement missed its rule: %s", sw.name, l)
				}
			}
		}
	}
	if !strings.Contains(ovs.setErr, "OFPBAC_BAD_SET_ARGUMENT") || gov.setErr != ovs.setErr {
		t.Errorf("set_field to nd_options_type: ovs-vswitchd %q, govswitchd %q", ovs.setErr, gov.setErr)
	}
}
