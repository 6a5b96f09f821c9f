package openflow

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// extCaptures are the ovs-ofctl 3.1 sessions behind the clone,
// check_pkt_larger, truncate (output_trunc) and MPLS action codecs,
// recorded as TestOvsOfctl records its own (OFCTL_RECORD=1).
var extCaptures = []capture{
	{"clone-actions-of10", []string{"add-flow", "SW",
		"ip,actions=clone(mod_dl_dst:50:54:00:00:00:0a,set_field:192.168.3.3->ip_dst),output:2," +
			"clone(clone(output:3),controller),output(port=2,max_len=100),check_pkt_larger(200)->NXM_NX_REG0[0]"}},
	{"clone-actions-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"ip,actions=clone(mod_dl_dst:50:54:00:00:00:0a,set_field:192.168.3.3->ip_dst),output:2," +
			"clone(),output(port=4,max_len=65535),check_pkt_larger(1500)->NXM_NX_REG1[5],clone(ct(commit),output:3)"}},
	{"mpls-actions-of10", []string{"add-flow", "SW",
		"ip,actions=push_mpls:0x8847,set_mpls_label:3,set_mpls_tc:2,set_mpls_ttl:9,dec_mpls_ttl,pop_mpls:0x0800,output:1"}},
	{"mpls-actions-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"ip,actions=push_mpls:0x8848,set_mpls_label:3,set_mpls_tc:2,set_mpls_ttl:9,dec_mpls_ttl,set_field:5->mpls_label,set_field:3->mpls_tc,pop_mpls:0x0800,output:1"}},
	{"mpls-match-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"mpls,mpls_label=3,mpls_tc=1,mpls_bos=1,actions=pop_mpls:0x0800,output:1"}},
	{"encap-mpls-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"ip,actions=encap(mpls),set_mpls_label:2,encap(ethernet),set_field:00:00:00:00:00:02->dl_dst,output:1"}},
	{"decap-mpls-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"mpls,actions=decap(),decap(packet_type(ns=0,type=0x800)),output:1"}},
	{"nsh-match-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"dl_type=0x894f,nsh_flags=1,nsh_ttl=3,nsh_mdtype=1,nsh_np=3,nsh_spi=0x100,nsh_si=3,nsh_c1=0x5/0xff,nsh_c2=2,nsh_c3=3,nsh_c4=0x4/0xf,actions=decap(),decap(),output:1"}},
	{"nsh-match-of10", []string{"add-flow", "SW",
		"dl_type=0x894f,nsh_spi=0x100,nsh_si=3,nsh_c1=0x11223344,actions=output:1"}},
	{"nsh-encap-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"ip,actions=encap(nsh(md_type=1)),set_field:0x1234->nsh_spi,set_field:0x11223344->nsh_c1,set_field:7->nsh_ttl," +
			"set_field:1->nsh_flags,set_field:4->nsh_si,set_field:0x5->nsh_c4,encap(ethernet),output:1"}},
	{"nsh-encap-md2-of13", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"ip,actions=encap(nsh(md_type=2,tlv(0x1000,10,0x12345678),tlv(0x2000,20,0xfedcba9876543210))),encap(ethernet),output:1"}},
}

// TestOvsOfctlExtCaptures records (OFCTL_RECORD=1) or checks the
// captures: every message decodes and re-encodes to ovs-ofctl's bytes.
func TestOvsOfctlExtCaptures(t *testing.T) {
	recordOrCheckCaptures(t, extCaptures)
}

// TestExtCaptureMeaning checks what the recorded actions decode to.
func TestExtCaptureMeaning(t *testing.T) {
	fm := func(name string) *FlowMod {
		t.Helper()
		for _, raw := range readCapture(t, name) {
			m, err := Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			if f, ok := m.(*FlowMod); ok {
				return f
			}
		}
		t.Fatalf("%s: no flow mod", name)
		return nil
	}
	a := fm("clone-actions-of10").Instructions.Apply
	if len(a) != 5 || a[0].Type != ActClone || len(a[0].Nested) != 2 || a[0].Nested[0].Field != FieldEthDst ||
		a[0].Nested[1].Field != FieldIPv4Dst || a[1].Type != ActOutput || a[2].Type != ActClone ||
		a[2].Nested[0].Type != ActClone || a[2].Nested[0].Nested[0].Port != 3 ||
		a[2].Nested[1].Port != PortController {
		t.Errorf("clone-actions-of10: %+v", a)
	}
	if a[3].Type != ActOutputTrunc || a[3].Port != 2 || a[3].TruncLen != 100 {
		t.Errorf("output_trunc: %+v", a[3])
	}
	if a[4].Type != ActCheckPktLarger || a[4].MaxLen != 200 || a[4].Field != FieldReg0 || a[4].Ofs != 0 {
		t.Errorf("check_pkt_larger: %+v", a[4])
	}
	a = fm("clone-actions-of13").Instructions.Apply
	if len(a) != 6 || a[2].Type != ActClone || a[2].Nested == nil || len(a[2].Nested) != 0 ||
		a[3].TruncLen != 65535 || a[3].Port != 4 || a[4].Field != FieldReg1 || a[4].Ofs != 5 || a[4].MaxLen != 1500 ||
		a[5].Type != ActClone || a[5].Nested[0].Type != ActCT {
		t.Errorf("clone-actions-of13: %+v", a)
	}
	a = fm("mpls-actions-of10").Instructions.Apply
	want := []Action{{Type: ActPushMPLS, EthType: 0x8847}, {Type: ActSetMPLSLabel, Load: 3},
		{Type: ActSetMPLSTC, VLANPCP: 2}, {Type: ActSetMPLSTTL, TTL: 9}, {Type: ActDecMPLSTTL},
		{Type: ActPopMPLS, EthType: 0x0800}, Output(1, 0)}
	if !actionsEqual(a, want) {
		t.Errorf("mpls-actions-of10:\n got %+v\nwant %+v", a, want)
	}
	a = fm("encap-mpls-of13").Instructions.Apply
	if len(a) != 5 || a[0].Type != ActEncap || uint32(a[0].Load) != PacketTypeMPLS || a[2].Type != ActEncap ||
		uint32(a[2].Load) != PacketTypeEthernet || a[1].Type != ActSetField || a[1].Field != FieldMPLSLabel {
		t.Errorf("encap-mpls-of13: %+v", a)
	}
	a = fm("nsh-encap-of13").Instructions.Apply
	if len(a) != 9 || a[0].Type != ActEncap || uint32(a[0].Load) != PacketTypeNSH || a[0].NSHMDType != 1 ||
		len(a[0].Data) != 0 || a[1].Field != FieldNSHSPI || u32(a[1].Value[:]) != 0x1234 ||
		a[2].Field != FieldNSHC1 || a[3].Field != FieldNSHTTL || a[3].Value[0] != 7 || a[4].Field != FieldNSHFlags ||
		a[5].Field != FieldNSHSI || a[6].Field != FieldNSHC4 || a[7].Type != ActEncap {
		t.Errorf("nsh-encap-of13: %+v", a)
	}
	a = fm("nsh-encap-md2-of13").Instructions.Apply
	if len(a) != 3 || a[0].Type != ActEncap || a[0].NSHMDType != 2 ||
		fmt.Sprintf("%x", a[0].Data) != "10000a041234567820001408fedcba9876543210" {
		t.Errorf("nsh-encap-md2-of13: %+v", a)
	}
	m := fm("nsh-match-of13").Match
	if m.Key.EthType != 0x894f || m.Key.NSH.Flags != 1 || m.Key.NSH.TTL != 3 || m.Key.NSH.MDType != 1 ||
		m.Key.NSH.NP != 3 || m.Key.NSH.SPI != 0x100 || m.Mask.NSH.SPI != 0xffffff || m.Key.NSH.SI != 3 ||
		m.Key.NSH.C != [4]uint32{5, 2, 3, 4} || m.Mask.NSH.C != [4]uint32{0xff, ^uint32(0), ^uint32(0), 0xf} {
		t.Errorf("nsh-match-of13: %s", &m)
	}
	if s := fm("nsh-match-of10").Match.String(); s != "eth_type=0x894f,nsh_spi=0x100,nsh_si=3,nsh_c1=0x11223344" {
		t.Errorf("nsh-match-of10: %s", s)
	}
	a = fm("decap-mpls-of13").Instructions.Apply
	if len(a) != 3 || a[0].Type != ActDecap || uint32(a[0].Load) != PacketTypeNextProto ||
		a[1].Type != ActDecap || a[1].Load != 0x800 {
		t.Errorf("decap-mpls-of13: %+v", a)
	}
}

// TestExtOvsOfctlDump serves the recorded flows back to the real
// ovs-ofctl as flow stats, in the version each was recorded in: what it
// prints must be what it prints for the same text (parse-flow), since
// ovs-vswitchd answers with the bytes ovs-ofctl sent.
func TestExtOvsOfctlDump(t *testing.T) {
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		t.Skip("ovs-ofctl not installed")
	}
	parsed := regexp.MustCompile(`FLOW_MOD (?:\(OF1\.[0-9]\) )?\(xid=0x[0-9a-f]+\): ADD (?:table:(\d+) )?(.*)$`)
	for _, c := range extCaptures {
		t.Run(c.name, func(t *testing.T) {
			s := newFakeSwitch(t)
			var opts []string
			if c.args[0] == "-O" {
				opts = c.args[:2]
			}
			flowText := c.args[len(c.args)-1]
			s.mu.Lock()
			for _, raw := range readCapture(t, c.name) {
				m, err := Decode(raw)
				if err != nil {
					t.Fatal(err)
				}
				if fm, ok := m.(*FlowMod); ok {
					var fs FlowStats
					fs.Priority, fs.Match, fs.Instructions = fm.Priority, fm.Match, fm.Instructions
					s.flows = append(s.flows, fs)
				}
			}
			s.mu.Unlock()
			out := s.ofctl(t, append(opts, "dump-flows", "SW")...)
			s.take(t)
			ref, err := exec.Command("ovs-ofctl", append(opts, "parse-flow", flowText)...).Output()
			if err != nil {
				t.Fatal(err)
			}
			var want string
			for _, line := range strings.Split(string(ref), "\n") {
				if m := parsed.FindStringSubmatch(line); m != nil {
					want = m[2]
				}
			}
			var got string
			for _, line := range strings.Split(out, "\n") {
				if i := strings.Index(line, "n_bytes=0, "); i >= 0 {
					got = line[i+len("n_bytes=0, "):]
				}
			}
			if want == "" || got != want {
				t.Errorf("dump-flows:\n got %s\nwant %s\n(%s)", got, want, out)
			}
		})
	}
}
