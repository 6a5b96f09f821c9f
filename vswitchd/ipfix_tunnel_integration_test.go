package vswitchd

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
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
	tunneled   bool
	typ, proto uint64
	key        string
	src, dst   netip.Addr
	sport      uint64
	dport      uint64
}

func (r tunnelRecord) String() string {
	if !r.tunneled {
		return r.inner + " " + r.dir + " not tunneled"
	}
	return fmt.Sprintf("%s %s type %d key %s %s>%s proto %d ports %d>%d", r.inner, r.dir, r.typ, r.key, r.src, r.dst,
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
		if src[3] == 100 {
			tr.inner = "back"
		}
		if r.Uint(ipfix.FlowDirection) == ipfix.Egress {
			tr.dir = "egress"
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

// TestIntegrationIPFIXTunnel: a govswitchd bridge with a host and a vxlan
// (then gre) port to a Linux tunnel device in another namespace, with
// bridge IPFIX at rate 1 (enable-tunnel-sampling by default), exports
// the pings across the tunnel to nfdump's nfcapd and a decoder as
// ovs-vswitchd would: the replies' ingress records from the tunnel port
// with the Tunneled template and the packet's tunnel (the remote's outer
// addresses, the VNI or GRE key in the type's length, UDP and port 4789
// for vxlan); the requests' egress records on the tunnel port with the
// tunnel the kernel reports for the userspace action's
// tunnel_out_port (the route's source address, the UDP source port the
// device chose); the records of the host's port NotTunneled. nfcapd takes
// them all.
func TestIntegrationIPFIXTunnel(t *testing.T) {
	testbed.Require(t)
	t.Cleanup(func() { (kernelProviderForTest{}).deleteShared(t) })
	srv := ovsdbtest.Start(t)
	rundir := t.TempDir()
	d, err := NewForOVSDB(Config{Datapath: "system", Rundir: rundir, Pidfile: "-", Handlers: 1,
		Unixctl: filepath.Join(rundir, "gov.ctl")}, nil, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	defer runOVSDB(t, d, srv.Remote, 15*time.Second)()
	vsctl := func(args ...string) string {
		t.Helper()
		out, err := srv.Vsctl(15*time.Second, args...)
		if err != nil {
			t.Fatalf("ovs-vsctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	for _, tc := range []struct {
		tunnelCase
		typ   uint64
		key   string
		proto uint64
		dport uint64
	}{
		{tunnelCases[0], ipfix.TunnelVXLAN, "000064", 17, 4789},
		{tunnelCase{kind: "gre", linkArg: []string{"type", "gretap", "key", "102"}, options: []string{"options:key=102"},
			vport: "gre_sys"}, ipfix.TunnelGRE, "00000066", 47, 0},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			b := newTunnelBed(t, tc.tunnelCase)
			col, targets := startIPFIXCollectors(t)
			br := "br" + b.v1
			set := append([]string{"set", "Interface", "tun" + b.v1, "type=" + tc.kind, "options:remote_ip=" + b.rem}, tc.options...)
			vsctl(append([]string{"add-br", br, "--", "add-port", br, b.v1, "--", "add-port", br, "tun" + b.v1, "--"}, set...)...)
			defer vsctl("del-br", br)
			quoted := make([]string, len(targets))
			for i, tg := range targets {
				quoted[i] = fmt.Sprintf("%q", tg)
			}
			vsctl("--", "--id=@i", "create", "IPFIX", "targets=["+strings.Join(quoted, ",")+"]", "sampling=1",
				"obs_domain_id=3", "cache_active_timeout=1", "--", "set", "Bridge", br, "ipfix=@i")
			if loss, _ := reach(t, b.h1, b.hr, "10.1.1.100"); loss != 0 {
				t.Errorf("h1 -> remote: lost %d of 3 pings", loss)
			}
			want := map[string]func(r tunnelRecord) bool{
				"back ingress": func(r tunnelRecord) bool {
					return r.tunneled && r.typ == tc.typ && r.key == tc.key && r.src.String() == b.rem &&
						r.dst.String() == b.local && r.proto == tc.proto && r.dport == tc.dport && (tc.dport == 0) == (r.sport == 0)
				},
				"out egress": func(r tunnelRecord) bool {
					return r.tunneled && r.typ == tc.typ && r.key == tc.key && r.src.String() == b.local &&
						r.dst.String() == b.rem && r.proto == tc.proto && r.dport == tc.dport && (tc.dport == 0) == (r.sport == 0)
				},
				"out ingress": func(r tunnelRecord) bool { return !r.tunneled },
				"back egress": func(r tunnelRecord) bool { return !r.tunneled },
			}
			var recs []tunnelRecord
			seen := map[string]bool{}
			for deadline := time.Now().Add(20 * time.Second); len(seen) < len(want) && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				recs = col.tunnelRecords()
				for _, r := range recs {
					seen[r.inner+" "+r.dir] = true
				}
			}
			t.Logf("records: %v", recs)
			for _, r := range recs {
				if ok := want[r.inner+" "+r.dir]; !ok(r) {
					t.Errorf("record %v: not what ovs-vswitchd sends", r)
				}
			}
			if len(seen) != len(want) {
				t.Errorf("records of %v, want the requests' and replies' ingress and egress", seen)
			}
			if drops := col.waitNfcapdRead(t); drops != 0 {
				t.Errorf("nfcapd's socket dropped %d messages", drops)
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
				t.Errorf("%d messages did not decode: %v", len(bad), bad[0])
			}
			var nf uint64
			log, _ := os.ReadFile(filepath.Join(col.dir, "nfcapd.log"))
			for _, m := range nfcapdSummary.FindAllStringSubmatch(string(log), -1) {
				var n uint64
				fmt.Sscan(m[1], &n)
				nf += n
			}
			if nf != flows {
				t.Errorf("nfcapd stored %d flows, the decoder read %d", nf, flows)
			}
		})
	}
}
