package vswitchd

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/govswitch/govswitch/ofproto/ipfix"
	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// tunnelRecord is what a record of the tunnel bed's pings says of its
// tunnel: the inner direction ("out": h1's echo requests to the remote
// host, "back": the replies), the record's direction, and the tunnel
// elements (tunneled false for a NotTunneled record).
type tunnelRecord struct {
	inner, dir string
	port       string // the interfaces, " from IN" and " by OUT" for an egress record
	tunneled   bool
	typ, proto uint64
	key        string
	src, dst   netip.Addr
	sport      uint64
	dport      uint64
}

func (r tunnelRecord) String() string {
	if !r.tunneled {
		return r.inner + " " + r.dir + r.port + " not tunneled"
	}
	return fmt.Sprintf("%s %s%s type %d key %s %s>%s proto %d ports %d>%d", r.inner, r.dir, r.port, r.typ, r.key, r.src, r.dst,
		r.proto, r.sport, r.dport)
}

// tunnelRecords reads the ICMP records between 10.1.1.1 and 10.1.1.100.
func (c *ipfixCollector) tunnelRecords() []tunnelRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []tunnelRecord
	for i := range c.recs {
		r := &c.recs[i]
		src, ok1 := r.Get(ipfix.SourceIPv4)
		dst, ok2 := r.Get(ipfix.DestinationIPv4)
		if !ok1 || !ok2 || r.Uint(ipfix.ProtocolIdentifier) != 1 || src[0] != 10 || src[1] != 1 || dst[0] != 10 {
			continue
		}
		tr := tunnelRecord{inner: "out", dir: "ingress"}
		if v, _ := r.Get(ipfix.InterfaceName); len(v) > 0 {
			tr.port = " from " + string(v)
		}
		if src[3] == 100 {
			tr.inner = "back"
		}
		if r.Uint(ipfix.FlowDirection) == ipfix.Egress {
			tr.dir = "egress"
			if v, _ := r.GetN(ipfix.InterfaceName, 1); len(v) > 0 {
				tr.port += " by " + string(v)
			}
		}
		if t, ok := r.Get(ipfix.TunnelType); ok && len(t) == 1 {
			k, _ := r.Get(ipfix.TunnelKey)
			s, _ := r.Get(ipfix.TunnelSourceIPv4)
			d, _ := r.Get(ipfix.TunnelDestinationIPv4)
			tr.tunneled, tr.typ, tr.key = true, uint64(t[0]), fmt.Sprintf("%x", k)
			tr.src, _ = netip.AddrFromSlice(s)
			tr.dst, _ = netip.AddrFromSlice(d)
			tr.proto, tr.sport, tr.dport = r.Uint(ipfix.TunnelProtocol), r.Uint(ipfix.TunnelSourcePort),
				r.Uint(ipfix.TunnelDestinationPort)
		}
		out = append(out, tr)
	}
	return out
}

// ipfixTunnelCase is a tunnel of TestIntegrationIPFIXTunnel and the
// tunnel elements its records carry.
type ipfixTunnelCase struct {
	tunnelCase
	typ   uint64
	key   string // the tunnelKey element, hex
	proto uint64
	dport uint64
}

// ipfixTunnelFlows sample h1's pings (port 1) on egress by the tunnel
// port (2) and the replies on ingress (sampling port the input port).
var ipfixTunnelFlows = []string{
	"priority=10,icmp,in_port=1,actions=sample(probability=65535,collector_set_id=5,obs_domain_id=3,obs_point_id=4,sampling_port=2),output:2",
	"priority=10,icmp,in_port=2,actions=sample(probability=65535,collector_set_id=5,obs_domain_id=3,obs_point_id=5,sampling_port=2),output:1",
}

// ipfixTunnelRun puts bridge br with h1's port (OpenFlow 1) and a tunnel
// port (2) on a switch (vsctl, ofctl), exports with bridge IPFIX at rate
// 1 (flowSample false) or collector set 5 and ipfixTunnelFlows, pings the
// remote host and returns the records of the pings, holding them to
// what the tunnel case says, and nfcapd's count of flows to the
// decoder's.
func ipfixTunnelRun(t *testing.T, who string, b *tunnelBed, tc *ipfixTunnelCase, br string, flowSample bool,
	vsctl func(args ...string) string, ofctl func(args ...string) (string, error)) (recs []tunnelRecord, acts []string) {
	t.Helper()
	col, targets := startIPFIXCollectors(t)
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = fmt.Sprintf("%q", tg)
	}
	tun := "tun" + b.v1
	set := append([]string{"set", "Interface", tun, "type=" + tc.kind, "options:remote_ip=" + b.rem, "ofport_request=2"},
		tc.options...)
	vsctl(append([]string{"--may-exist", "add-br", br, "--", "--may-exist", "add-port", br, b.v1, "--", "set", "Interface", b.v1,
		"ofport_request=1", "--", "--may-exist", "add-port", br, tun, "--"}, set...)...)
	ipfixRow := "targets=[" + strings.Join(quoted, ",") + "]"
	// The switch learns the hosts' MACs first: the records are then of
	// forwarding, not of the first packets' floods (to the bridge's own
	// port too, which the switches time differently).
	reach(t, b.h1, b.hr, "10.1.1.100")
	want := map[string]func(r tunnelRecord) bool{
		"back ingress": func(r tunnelRecord) bool {
			return r.tunneled && r.typ == tc.typ && r.key == tc.key && r.src.String() == b.rem &&
				r.dst.String() == b.local && r.proto == tc.proto && r.dport == tc.dport && (tc.dport == 0) == (r.sport == 0)
		},
		"out egress": func(r tunnelRecord) bool {
			return r.tunneled && r.typ == tc.typ && r.key == tc.key && r.src.String() == b.local &&
				r.dst.String() == b.rem && r.proto == tc.proto && r.dport == tc.dport && (tc.dport == 0) == (r.sport == 0)
		},
	}
	if !flowSample {
		vsctl("--", "--id=@i", "create", "IPFIX", ipfixRow, "sampling=1", "obs_domain_id=3", "cache_active_timeout=1",
			"--", "set", "Bridge", br, "ipfix=@i")
		want["out ingress"] = func(r tunnelRecord) bool { return !r.tunneled }
		want["back egress"] = func(r tunnelRecord) bool { return !r.tunneled }
	} else {
		vsctl("clear", "Bridge", br, "ipfix")
		vsctl("--", "--id=@br", "get", "Bridge", br, "--", "--id=@i", "create", "IPFIX", ipfixRow, "cache_active_timeout=1",
			"--", "create", "Flow_Sample_Collector_Set", "id=5", "bridge=@br", "ipfix=@i")
		for _, f := range ipfixTunnelFlows {
			if out, err := ofctl("add-flow", f); err != nil {
				t.Fatalf("%s: ovs-ofctl add-flow %s: %v\n%s", who, f, err, out)
			}
		}
	}
	if loss, _ := reach(t, b.h1, b.hr, "10.1.1.100"); loss != 0 {
		t.Errorf("%s: h1 -> remote: lost %d of 3 pings", who, loss)
	}
	acts = tunnelSampleActions(t)
	t.Logf("%s: sample actions naming the tunnel: %q", who, acts)
	if len(acts) == 0 {
		t.Errorf("%s: no datapath userspace action with tunnel_out_port", who)
	}
	seen := map[string]bool{}
	for deadline := time.Now().Add(20 * time.Second); len(seen) < len(want) && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		recs = col.tunnelRecords()
		for _, r := range recs {
			seen[r.inner+" "+r.dir] = true
		}
	}
	t.Logf("%s: records: %v", who, recs)
	for _, r := range recs {
		if ok := want[r.inner+" "+r.dir]; ok == nil || !ok(r) {
			t.Errorf("%s: record %v: not what ovs-vswitchd sends", who, r)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%s: records of %v, want %d kinds", who, seen, len(want))
	}
	if drops := col.waitNfcapdRead(t); drops != 0 {
		t.Errorf("%s: nfcapd's socket dropped %d messages", who, drops)
	}
	col.stop(t)
	var flows uint64
	col.mu.Lock()
	for i := range col.recs {
		if col.recs[i].Template != ipfix.OptionsTemplateID {
			flows++
		}
	}
	bad := col.bad
	col.mu.Unlock()
	if len(bad) > 0 {
		t.Errorf("%s: %d messages did not decode: %v", who, len(bad), bad[0])
	}
	var nf uint64
	log, _ := os.ReadFile(filepath.Join(col.dir, "nfcapd.log"))
	for _, m := range nfcapdSummary.FindAllStringSubmatch(string(log), -1) {
		var n uint64
		fmt.Sscan(m[1], &n)
		nf += n
	}
	if nf != flows {
		t.Errorf("%s: nfcapd stored %d flows, the decoder read %d", who, nf, flows)
	}
	return recs, acts
}

var (
	userspaceTunOut = regexp.MustCompile(`userspace\([^()]*\([^()]*\),tunnel_out_port=\d+\)`)
	dpctlPorts      = regexp.MustCompile(`(output_port|tunnel_out_port)=\d+`)
)

// tunnelSampleActions are the distinct userspace actions naming a
// tunnel port in the datapath's flows, as ovs-dpctl prints them, the
// netlink pid and the port numbers (each switch numbers its vports)
// cut; an action whose output port is not its tunnel_out_port is kept
// whole, to show.
func tunnelSampleActions(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ovs-dpctl", "dump-flows").CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows: %v\n%s", err, out)
	}
	var acts []string
	for _, a := range userspaceTunOut.FindAllString(string(out), -1) {
		a = dpctlPid.ReplaceAllString(a, "pid=N")
		ports := dpctlPorts.FindAllStringSubmatch(a, -1)
		if len(ports) == 2 && strings.TrimPrefix(ports[0][0], "output_port=") == strings.TrimPrefix(ports[1][0], "tunnel_out_port=") {
			a = dpctlPorts.ReplaceAllString(a, "$1=P")
		}
		acts = append(acts, a)
	}
	slices.Sort(acts)
	return slices.Compact(acts)
}

// kinds are the distinct records, the UDP source port (the tunnel
// device's choice) cut.
func kinds(recs []tunnelRecord) []string {
	var out []string
	for _, r := range recs {
		if r.sport != 0 {
			r.sport = 1
		}
		out = append(out, r.String())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestIntegrationIPFIXTunnel: a bridge with a host and a vxlan (then gre)
// port to a Linux tunnel device in another namespace exports the pings
// across the tunnel to nfdump's nfcapd and a decoder, first with bridge
// IPFIX at rate 1 (enable-tunnel-sampling by default), then with a
// collector set and sample actions (egress by the tunnel port, ingress
// from it): the replies' ingress records from the tunnel port carry the
// Tunneled template and the packet's tunnel (the remote's outer
// addresses, the VNI or GRE key in the type's length, UDP and port 4789
// for vxlan); the requests' egress records on the tunnel port carry the
// tunnel the kernel reports for the userspace action's tunnel_out_port
// (the route's source address, the UDP source port the device chose);
// the host port's records are NotTunneled; nfcapd takes them all.
// ovs-vswitchd 3.1, first in the same boot, is held to the same checks,
// and govswitchd's records are of the same kinds as its.
func TestIntegrationIPFIXTunnel(t *testing.T) {
	testbed.Require(t)
	t.Cleanup(func() { (kernelProviderForTest{}).deleteShared(t) })
	for _, tc := range []ipfixTunnelCase{
		{tunnelCases[0], ipfix.TunnelVXLAN, "000064", 17, 4789},
		{tunnelCase{kind: "gre", linkArg: []string{"type", "gretap", "key", "102"}, options: []string{"options:key=102"},
			vport: "gre_sys"}, ipfix.TunnelGRE, "00000066", 47, 0},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			b := newTunnelBed(t, tc.tunnelCase)
			br := "br" + b.v1

			o := startOVS(t)
			ovsMgmt := filepath.Join(o.dir, br+".mgmt")
			ovsVsctl := func(args ...string) string { return o.must(t, "ovs-vsctl", args...) }
			ovsOfctl := func(args ...string) (string, error) { return ofctlAt(ovsMgmt, args...) }
			ovsBr, ovsBrActs := ipfixTunnelRun(t, "ovs-vswitchd", b, &tc, br, false, ovsVsctl, ovsOfctl)
			ovsFS, ovsFSActs := ipfixTunnelRun(t, "ovs-vswitchd flow sample", b, &tc, br, true, ovsVsctl, ovsOfctl)
			if r := appctlAt(t, o.ctl, "exit", "--cleanup"); r.code != 0 {
				t.Fatalf("ovs-vswitchd exit --cleanup: %d %s", r.code, r.err)
			}
			for deadline := time.Now().Add(5 * time.Second); linkExists(br) || linkExists(tc.vport); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("ovs-vswitchd's exit --cleanup left %s or %s for 5 s", br, tc.vport)
				}
			}

			srv := ovsdbtest.Start(t)
			rundir := t.TempDir()
			d, err := NewForOVSDB(Config{Datapath: "system", Rundir: rundir, Pidfile: "-", Handlers: 1,
				Unixctl: filepath.Join(rundir, "gov.ctl")}, nil, testLog{t})
			if err != nil {
				t.Fatal(err)
			}
			stop := runOVSDB(t, d, srv.Remote, 15*time.Second)
			defer (kernelProviderForTest{}).deleteShared(t)
			defer stop()
			vsctl := func(args ...string) string {
				t.Helper()
				out, err := srv.Vsctl(15*time.Second, args...)
				if err != nil {
					t.Fatalf("ovs-vsctl %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return out
			}
			govMgmt := filepath.Join(rundir, br+".mgmt")
			ofctl := func(args ...string) (string, error) { return ofctlAt(govMgmt, args...) }
			govBr, govBrActs := ipfixTunnelRun(t, "govswitchd", b, &tc, br, false, vsctl, ofctl)
			govFS, govFSActs := ipfixTunnelRun(t, "govswitchd flow sample", b, &tc, br, true, vsctl, ofctl)
			defer vsctl("del-br", br)
			for _, c := range []struct {
				phase            string
				ovs, gov         []tunnelRecord
				ovsActs, govActs []string
			}{{"bridge IPFIX", ovsBr, govBr, ovsBrActs, govBrActs}, {"flow sample", ovsFS, govFS, ovsFSActs, govFSActs}} {
				if o, g := kinds(c.ovs), kinds(c.gov); !slices.Equal(o, g) {
					t.Errorf("%s: records\novs-vswitchd %q\ngovswitchd   %q", c.phase, o, g)
				}
				if !slices.Equal(c.ovsActs, c.govActs) {
					t.Errorf("%s: datapath sample actions\novs-vswitchd %q\ngovswitchd   %q", c.phase, c.ovsActs, c.govActs)
				}
			}
		})
	}
}
