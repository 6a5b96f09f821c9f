package ofproto

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// expFieldFlows (the last, with encap, from OpenFlow 1.3 on) name the ERSPAN and NSH experimenter fields in move,
// load, push/pop and output_reg, as ovs-ofctl writes them (8-byte field
// headers; a load is a masked set_field, NXAST_REG_LOAD2 before 1.5).
var expFieldFlows = []string{
	"table=1,ip,actions=move:reg0[0..5]->tun_erspan_hwid[],move:tun_erspan_idx[]->reg1[0..19],move:tun_erspan_ver[]->reg2[4..7]," +
		"push:tun_erspan_idx[],pop:tun_erspan_hwid[0..5],load:1->tun_erspan_ver[],load:0x55->tun_erspan_idx[],output:tun_erspan_idx[0..15]",
	"table=2,dl_type=0x894f,actions=move:nsh_c1[]->reg0[],push:nsh_spi[],pop:reg1[0..23],output:nsh_c2[0..15]",
	"table=3,ip,actions=encap(nsh),move:reg0[]->nsh_c1[],move:reg1[0..23]->nsh_spi[],push:reg2[],pop:nsh_c4[],load:3->nsh_si[],encap(ethernet),output:2",
}

// TestOfctlExpFieldActions adds the flows with the real ovs-ofctl in
// OpenFlow 1.0, 1.3 and 1.5, and dump-flows prints them back as
// ovs-ofctl's own parse-flows does. A move or pop into an NSH field of a
// packet that has its NSH header already is refused (the kernel takes no
// set(nsh)), with an OFPBAC_BAD_* error (BAD_TYPE in 1.0, whose set_field
// errors it is).
func TestOfctlExpFieldActions(t *testing.T) {
	needTool(t, "ovs-ofctl")
	parsed := regexp.MustCompile(`FLOW_MOD (?:\(OF1\.[0-9]\) )?\(xid=0x[0-9a-f]+\): ADD (?:table:(\d+) )?(.*)$`)
	for _, opts := range [][]string{nil, {"-O", "OpenFlow13"}, {"-O", "OpenFlow15"}} {
		t.Run(strings.Join(append([]string{"OpenFlow10"}, opts...), " "), func(t *testing.T) {
			s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
			flows := expFieldFlows
			if opts == nil {
				flows = flows[:2] // encap is OpenFlow 1.3's
			}
			file := filepath.Join(t.TempDir(), "flows.txt")
			if err := os.WriteFile(file, []byte(strings.Join(flows, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			s.ofctl(t, opts, "add-flows", file)
			ref, err := exec.Command("ovs-ofctl", append(append([]string{}, opts...), "parse-flows", file)...).Output()
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}
			for _, line := range strings.Split(string(ref), "\n") {
				if m := parsed.FindStringSubmatch(line); m != nil {
					want["table="+m[1]+","+m[2]] = true
				}
			}
			dumped := parseFlows(t, s.ofctl(t, opts, "dump-flows"))
			if len(dumped) != len(want) || len(want) != len(flows) {
				t.Fatalf("dumped %d flows, parse-flows %d, want %d:\n%s", len(dumped), len(want), len(flows), ref)
			}
			for _, f := range dumped {
				text := "table=" + strconv.Itoa(f.table) + "," + f.match + " actions=" + f.actions
				if !want[text] {
					t.Errorf("dumped %q, which ovs-ofctl's own parse-flows does not print (%v)", text, want)
				}
				if !strings.Contains(f.actions, "NXOXM_") {
					t.Errorf("dumped %q names no experimenter field", text)
				}
			}
			for _, flow := range []string{
				"dl_type=0x894f,actions=move:reg0[]->nsh_c1[]",
				"dl_type=0x894f,actions=pop:nsh_c3[]",
			} {
				out, err := s.ofctlErr(opts, "add-flow", flow)
				if err == nil || !strings.Contains(err.Error()+out, "OFPBAC_BAD_") {
					t.Errorf("add-flow %s: %v\n%s", flow, err, out)
				}
			}
		})
	}
}
