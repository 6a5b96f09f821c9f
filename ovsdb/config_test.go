package ovsdb

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// rowsOf builds a Rows with one bridge br0 whose ports are given as
// (port name, interfaces).
func rowsOf(root *OpenvSwitch, br *Bridge, ports map[string][]*Interface) *Rows {
	r := &Rows{Root: root, Bridges: map[string]*Bridge{}, Ports: map[string]*Port{},
		Interfaces: map[string]*Interface{}, Controllers: map[string]*Controller{}}
	if br != nil {
		r.Bridges[br.UUID] = br
		root.Bridges = append(root.Bridges, br.UUID)
		for name, ifs := range ports {
			p := &Port{UUID: "p-" + name, Name: name}
			for _, in := range ifs {
				r.Interfaces[in.UUID] = in
				p.Interfaces = append(p.Interfaces, in.UUID)
			}
			r.Ports[p.UUID] = p
			br.Ports = append(br.Ports, p.UUID)
		}
	}
	return r
}

func iface(name, typ string) *Interface { return &Interface{UUID: "i-" + name, Name: name, Type: typ} }

func TestBuild(t *testing.T) {
	cases := []struct {
		name string
		rows func() *Rows
		// check inspects the result; problem, when set, must appear in
		// Problems.
		check   func(t *testing.T, d Desired)
		problem string
	}{
		{
			name: "no root row",
			rows: func() *Rows { return &Rows{} },
			check: func(t *testing.T, d Desired) {
				if len(d.Bridges) != 0 || d.NextCfg != 0 {
					t.Errorf("got %+v", d)
				}
			},
		},
		{
			name: "bridge with local, system and internal ports",
			rows: func() *Rows {
				return rowsOf(&OpenvSwitch{UUID: "root", NextCfg: 7}, &Bridge{UUID: "b0", Name: "br0"},
					map[string][]*Interface{"br0": {iface("br0", "internal")}, "eth1": {iface("eth1", "")},
						"vm0": {iface("vm0", "internal")}})
			},
			check: func(t *testing.T, d Desired) {
				if d.NextCfg != 7 || len(d.Bridges) != 1 {
					t.Fatalf("got %+v", d)
				}
				b := d.Bridges[0]
				if b.FailMode != "standalone" || b.Protocols != nil {
					t.Errorf("bridge %+v", b)
				}
				got := []string{}
				for _, p := range b.Ports {
					got = append(got, p.Name+":"+p.Type+":"+p.Err)
				}
				if want := []string{"br0:internal:", "eth1:system:", "vm0:internal:"}; !reflect.DeepEqual(got, want) {
					t.Errorf("ports %v, want %v", got, want)
				}
				if !b.Ports[0].Local || b.Ports[1].Local {
					t.Errorf("Local flags %v %v", b.Ports[0].Local, b.Ports[1].Local)
				}
			},
		},
		{
			name: "unsupported interface type",
			rows: func() *Rows {
				return rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
					map[string][]*Interface{"vx0": {iface("vx0", "lisp")}})
			},
			check: func(t *testing.T, d Desired) {
				if e := d.Bridges[0].Ports[0].Err; !strings.Contains(e, `"lisp" is not supported`) {
					t.Errorf("Err %q", e)
				}
			},
		},
		{
			// The switch refuses them with the kernel's answer
			// (vswitchd/tunnel_probe.go): they reach it, options and all.
			name: "bareudp and gtpu go to the switch",
			rows: func() *Rows {
				r := rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
					map[string][]*Interface{"bu0": {iface("bu0", "bareudp")}, "gt0": {iface("gt0", "gtpu")}})
				r.Interfaces["i-bu0"].Options = map[string]string{"remote_ip": "10.1.1.2", "dst_port": "6635", "payload_type": "mpls"}
				return r
			},
			check: func(t *testing.T, d Desired) {
				for _, p := range d.Bridges[0].Ports {
					if want := map[string]string{"bu0": "bareudp", "gt0": "gtpu"}[p.Name]; p.Err != "" || p.Type != want {
						t.Errorf("port %s: Err %q Type %q", p.Name, p.Err, p.Type)
					}
					if p.Name == "bu0" && p.Options["payload_type"] != "mpls" {
						t.Errorf("bu0 options %v", p.Options)
					}
				}
			},
		},
		{
			name: "bond",
			rows: func() *Rows {
				return rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
					map[string][]*Interface{"bond0": {iface("a", ""), iface("b", "")}})
			},
			check: func(t *testing.T, d Desired) {
				br := d.Bridges[0]
				for _, p := range br.Ports {
					if p.Err != "" || p.Bond != "bond0" {
						t.Errorf("port %s Err %q Bond %q, want a member of bond0", p.Name, p.Err, p.Bond)
					}
				}
				if len(br.Bonds) != 1 || br.Bonds[0].Name != "bond0" || br.Bonds[0].Mode != "active-backup" ||
					strings.Join(br.Bonds[0].Members, ",") != "a,b" {
					t.Errorf("bonds %+v", br.Bonds)
				}
			},
		},
		{
			name: "bond balance-tcp with LACP",
			rows: func() *Rows {
				r := rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
					map[string][]*Interface{"bond0": {iface("a", ""), iface("b", "")}})
				m, l := "balance-tcp", "active"
				r.Ports["p-bond0"].BondMode, r.Ports["p-bond0"].LACP = &m, &l
				r.Ports["p-bond0"].BondUpdelay, r.Ports["p-bond0"].BondDowndelay = 100, -5
				r.Ports["p-bond0"].OtherConfig = map[string]string{"lacp-time": "FAST", "lacp-system-id": "aa:bb:cc:dd:ee:ff",
					"lacp-system-priority": "70000", "lacp-fallback-ab": "true", "bond-rebalance-interval": "0"}
				for _, in := range r.Interfaces {
					if in.Name == "b" {
						in.OtherConfig = map[string]string{"lacp-port-id": "9", "lacp-port-priority": "3", "lacp-aggregation-key": "x"}
					}
				}
				return r
			},
			check: func(t *testing.T, d Desired) {
				for _, p := range d.Bridges[0].Ports {
					if p.Err != "" || p.Bond != "bond0" {
						t.Errorf("port %s Err %q Bond %q", p.Name, p.Err, p.Bond)
					}
				}
				b := d.Bridges[0].Bonds
				if len(b) != 1 || b[0].LACP == nil {
					t.Fatalf("bonds %+v", b)
				}
				l := b[0].LACP
				want := LACPConfig{Active: true, Fast: true, SysID: [6]byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}, FallbackAB: true,
					Members: map[string]LACPMember{"a": {}, "b": {PortID: 9, PortPriority: 3}}}
				if fmt.Sprint(*l) != fmt.Sprint(want) || b[0].Updelay != 100 || b[0].Downdelay != 0 {
					t.Errorf("lacp %+v updelay %d downdelay %d, want %+v 100 0", *l, b[0].Updelay, b[0].Downdelay, want)
				}
			},
		},
		{
			name: "bond lacp and miimon refused",
			rows: func() *Rows {
				r := rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
					map[string][]*Interface{"bond0": {iface("a", ""), iface("b", "")}, "c": {iface("c", "")}})
				l, bad := "active", "sometimes"
				r.Ports["p-bond0"].LACP = &bad
				r.Ports["p-c"].LACP = &l
				return r
			},
			check: func(t *testing.T, d Desired) {
				for _, p := range d.Bridges[0].Ports {
					if p.Name == "c" {
						// A port of one interface runs LACP as a
						// bundle of one, with no bond (as ovs-vswitchd).
						if p.Err != "" || p.Bond != "" {
							t.Errorf("port c Err %q Bond %q, want neither", p.Err, p.Bond)
						}
						continue
					}
					if want := "unknown LACP mode sometimes"; !strings.Contains(p.Err, want) {
						t.Errorf("port %s Err %q, want %q", p.Name, p.Err, want)
					}
				}
				b := d.Bridges[0].Bonds
				if len(b) != 1 || !b[0].Single || b[0].Name != "c" || fmt.Sprint(b[0].Members) != "[c]" || b[0].LACP == nil || !b[0].LACP.Active {
					t.Errorf("bonds %+v, want c's bundle of one with active LACP", b)
				}
			},
		},
		{
			name: "lacp on one interface with bad settings refused",
			rows: func() *Rows {
				r := rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
					map[string][]*Interface{"c": {iface("c", "")}, "d": {iface("d", "")}})
				bad, off := "sometimes", "off"
				r.Ports["p-c"].LACP = &bad
				r.Ports["p-d"].LACP = &off
				return r
			},
			check: func(t *testing.T, d Desired) {
				for _, p := range d.Bridges[0].Ports {
					want := map[string]string{"c": "unknown LACP mode sometimes", "d": ""}[p.Name]
					if want == "" && p.Err != "" || !strings.Contains(p.Err, want) {
						t.Errorf("port %s Err %q, want %q", p.Name, p.Err, want)
					}
				}
				if b := d.Bridges[0].Bonds; len(b) != 0 {
					t.Errorf("bonds %+v, want none", b)
				}
			},
		},
		{
			name: "bond miimon interval",
			rows: func() *Rows {
				r := rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
					map[string][]*Interface{"bond0": {iface("a", ""), iface("b", "")}, "bond1": {iface("c", ""), iface("d", "")},
						"bond2": {iface("e", ""), iface("f", "")}, "bond3": {iface("g", ""), iface("h", "")}})
				r.Ports["p-bond0"].OtherConfig = map[string]string{"bond-detect-mode": "miimon"}
				r.Ports["p-bond1"].OtherConfig = map[string]string{"bond-detect-mode": "miimon", "bond-miimon-interval": "50"}
				r.Ports["p-bond2"].OtherConfig = map[string]string{"bond-detect-mode": "miimon", "bond-miimon-interval": "350"}
				r.Ports["p-bond3"].OtherConfig = map[string]string{"bond-miimon-interval": "350"}
				return r
			},
			check: func(t *testing.T, d Desired) {
				// As bridge.c and netdev-linux.c: default 200, at
				// least 100, and carrier detection ignores the interval.
				want := map[string]int{"bond0": 200, "bond1": 100, "bond2": 350, "bond3": 0}
				for _, b := range d.Bridges[0].Bonds {
					if b.MiimonInterval != want[b.Name] {
						t.Errorf("bond %s MiimonInterval %d, want %d", b.Name, b.MiimonInterval, want[b.Name])
					}
				}
				if len(d.Bridges[0].Bonds) != 4 {
					t.Errorf("bonds %+v", d.Bridges[0].Bonds)
				}
			},
		},
		{
			name: "bond detect mode unknown refused",
			rows: func() *Rows {
				r := rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
					map[string][]*Interface{"bond0": {iface("a", ""), iface("b", "")}})
				r.Ports["p-bond0"].OtherConfig = map[string]string{"bond-detect-mode": "arpmon"}
				return r
			},
			check: func(t *testing.T, d Desired) {
				for _, p := range d.Bridges[0].Ports {
					if !strings.Contains(p.Err, `bond-detect-mode="arpmon": want carrier or miimon`) {
						t.Errorf("port %s Err %q", p.Name, p.Err)
					}
				}
			},
		},
		{
			name: "bond balance-slb warns of no rebalancing",
			rows: func() *Rows {
				r := rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
					map[string][]*Interface{"bond0": {iface("a", ""), iface("b", "")}})
				m := "balance-slb"
				r.Ports["p-bond0"].BondMode = &m
				r.Ports["p-bond0"].OtherConfig = map[string]string{"bond-hash-basis": "7", "bond-primary": "b"}
				return r
			},
			problem: "balance-slb without learning packets",
			check: func(t *testing.T, d Desired) {
				b := d.Bridges[0].Bonds
				if len(b) != 1 || b[0].Mode != "balance-slb" || b[0].HashBasis != 7 || b[0].Primary != "b" || b[0].RebalanceInterval != 10000 {
					t.Errorf("bonds %+v", b)
				}
			},
		},
		{
			name: "VLAN tag and trunks",
			rows: func() *Rows {
				r := rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0", DatapathTyp: "netdev"},
					map[string][]*Interface{"eth1": {iface("eth1", "")}, "eth2": {iface("eth2", "")}})
				r.Ports["p-eth1"].Tag = ptr(10)
				mode := "native-untagged"
				r.Ports["p-eth2"].VLANMode = &mode
				r.Ports["p-eth2"].Tag = ptr(5)
				r.Ports["p-eth2"].Trunks = []int{30, 20}
				return r
			},
			check: func(t *testing.T, d Desired) {
				ps := d.Bridges[0].Ports
				if want := (VLANConfig{HasTag: true, Tag: 10}); ps[0].Err != "" || !ps[0].VLAN.Equal(&want) {
					t.Errorf("eth1: Err %q VLAN %+v, want %+v", ps[0].Err, ps[0].VLAN, want)
				}
				if want := (VLANConfig{Mode: "native-untagged", HasTag: true, Tag: 5, Trunks: []int{20, 30}}); ps[1].Err != "" || !ps[1].VLAN.Equal(&want) {
					t.Errorf("eth2: Err %q VLAN %+v, want %+v", ps[1].Err, ps[1].VLAN, want)
				}
			},
			problem: `datapath_type "netdev" is not supported`,
		},
		{
			name: "dot1q-tunnel with cvlans and qinq-ethtype",
			rows: func() *Rows {
				r := rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
					map[string][]*Interface{"eth1": {iface("eth1", "")}, "eth2": {iface("eth2", "")}})
				mode := "dot1q-tunnel"
				for _, p := range []string{"p-eth1", "p-eth2"} {
					r.Ports[p].VLANMode = &mode
					r.Ports[p].Tag = ptr(10)
					r.Ports[p].Trunks = []int{5}
					r.Ports[p].CVLANs = []int{200, 100}
				}
				r.Ports["p-eth2"].OtherConfig = map[string]string{"qinq-ethtype": "802.1q"}
				return r
			},
			check: func(t *testing.T, d Desired) {
				ps := d.Bridges[0].Ports
				want := VLANConfig{Mode: "dot1q-tunnel", HasTag: true, Tag: 10, CVLANs: []int{100, 200}}
				if ps[0].Err != "" || !ps[0].VLAN.Equal(&want) {
					t.Errorf("eth1: Err %q VLAN %+v, want %+v", ps[0].Err, ps[0].VLAN, want)
				}
				want.QinQEthtype = "802.1q"
				if ps[1].Err != "" || !ps[1].VLAN.Equal(&want) || ps[1].VLAN.String() != "dot1q-tunnel tag=10 cvlans=100,200 qinq-ethtype=802.1q" {
					t.Errorf("eth2: Err %q VLAN %s, want %s", ps[1].Err, ps[1].VLAN, want)
				}
			},
		},
		{
			name: "a cvlan out of range",
			rows: func() *Rows {
				r := rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
					map[string][]*Interface{"eth1": {iface("eth1", "")}})
				mode := "dot1q-tunnel"
				r.Ports["p-eth1"].VLANMode = &mode
				r.Ports["p-eth1"].CVLANs = []int{4096}
				return r
			},
			check: func(t *testing.T, d Desired) {
				if e := d.Bridges[0].Ports[0].Err; !strings.Contains(e, "cvlan 4096 is not a VLAN ID") {
					t.Errorf("Err %q", e)
				}
			},
		},
		{
			name: "trunks on an access port are ignored",
			rows: func() *Rows {
				r := rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
					map[string][]*Interface{"eth1": {iface("eth1", "")}})
				r.Ports["p-eth1"].Tag = ptr(10)
				r.Ports["p-eth1"].Trunks = []int{20}
				return r
			},
			check: func(t *testing.T, d Desired) {
				p := d.Bridges[0].Ports[0]
				if want := (VLANConfig{HasTag: true, Tag: 10}); p.Err != "" || !p.VLAN.Equal(&want) {
					t.Errorf("Err %q VLAN %+v, want %+v", p.Err, p.VLAN, want)
				}
			},
			problem: "port eth1: ignoring trunks in access mode",
		},
		{
			name: "bridge-named port not internal",
			rows: func() *Rows {
				return rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
					map[string][]*Interface{"br0": {iface("br0", "system")}})
			},
			check: func(t *testing.T, d Desired) {
				if e := d.Bridges[0].Ports[0].Err; !strings.Contains(e, "must be of type internal") {
					t.Errorf("Err %q", e)
				}
			},
		},
		{
			name: "long device name",
			rows: func() *Rows {
				return rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"},
					map[string][]*Interface{"abcdefghijklmnopq": {iface("abcdefghijklmnopq", "")}})
			},
			check: func(t *testing.T, d Desired) {
				if e := d.Bridges[0].Ports[0].Err; !strings.Contains(e, "1 to 15 characters") {
					t.Errorf("Err %q", e)
				}
			},
		},
		{
			name: "settings and knobs",
			rows: func() *Rows {
				root := &OpenvSwitch{UUID: "root", OtherConfig: map[string]string{"flow-limit": "5000",
					"max-idle": "1500", "n-handler-threads": "4", "govswitch-governor": "false", "flow-restore-wait": "true"}}
				br := &Bridge{UUID: "b0", Name: "br0", FailMode: ptr("secure"),
					Protocols:   []string{"OpenFlow13", "OpenFlow10"},
					OtherConfig: map[string]string{"mac-table-size": "99", "mac-aging-time": "12"},
					Controller:  []string{"c2", "c1"}}
				r := rowsOf(root, br, nil)
				r.Controllers["c1"] = &Controller{UUID: "c1", Target: "tcp:1.2.3.4", InactivityProbe: ptr(3000)}
				r.Controllers["c2"] = &Controller{UUID: "c2", Target: "unix:/run/c.sock", MaxBackoff: ptr(2000)}
				return r
			},
			check: func(t *testing.T, d Desired) {
				f := false
				if want := (Global{FlowLimit: 5000, MaxIdle: 1500 * time.Millisecond, Handlers: 4, Governor: &f, VLANLimit: 1,
					FlowRestoreWait: true}); !reflect.DeepEqual(d.Global, want) {
					t.Errorf("global %+v, want %+v", d.Global, want)
				}
				b := d.Bridges[0]
				want := []ControllerConfig{{Target: "tcp:1.2.3.4", ProbeInterval: 3 * time.Second},
					{Target: "unix:/run/c.sock", MaxBackoff: 2 * time.Second}}
				if b.FailMode != "secure" || !reflect.DeepEqual(b.Protocols, []uint8{1, 4}) ||
					b.MACTableSize != 99 || b.MACAging != 12*time.Second || !reflect.DeepEqual(b.Controllers, want) {
					t.Errorf("bridge %+v", b)
				}
				if len(d.Problems) != 0 {
					t.Errorf("problems %q", d.Problems)
				}
			},
		},
		{
			name: "nonsense other_config",
			rows: func() *Rows {
				return rowsOf(&OpenvSwitch{UUID: "root", OtherConfig: map[string]string{"flow-limit": "-3"}},
					&Bridge{UUID: "b0", Name: "br0", OtherConfig: map[string]string{"mac-aging-time": "soon"}}, nil)
			},
			check: func(t *testing.T, d Desired) {
				if d.Global.FlowLimit != 0 || d.Bridges[0].MACAging != 0 || len(d.Problems) != 2 {
					t.Errorf("global %+v aging %v problems %q", d.Global, d.Bridges[0].MACAging, d.Problems)
				}
			},
			problem: `mac-aging-time="soon"`,
		},
		{
			name: "vlan-limit absent is ovs-vswitchd's default, 1",
			rows: func() *Rows {
				return rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0"}, nil)
			},
			check: func(t *testing.T, d Desired) {
				if d.Global.VLANLimit != 1 || len(d.Problems) != 0 {
					t.Errorf("vlan-limit %d, problems %q", d.Global.VLANLimit, d.Problems)
				}
			},
		},
		{
			name: "vlan-limit 0 lifts the limit",
			rows: func() *Rows {
				return rowsOf(&OpenvSwitch{UUID: "root", OtherConfig: map[string]string{"vlan-limit": "0"}},
					&Bridge{UUID: "b0", Name: "br0"}, nil)
			},
			check: func(t *testing.T, d Desired) {
				if d.Global.VLANLimit != 0 || len(d.Problems) != 0 {
					t.Errorf("vlan-limit %d, problems %q", d.Global.VLANLimit, d.Problems)
				}
			},
		},
		{
			name: "vlan-limit not a number",
			rows: func() *Rows {
				return rowsOf(&OpenvSwitch{UUID: "root", OtherConfig: map[string]string{"vlan-limit": "two"}},
					&Bridge{UUID: "b0", Name: "br0"}, nil)
			},
			check: func(t *testing.T, d Desired) {
				if d.Global.VLANLimit != 1 {
					t.Errorf("vlan-limit %d, want the default 1", d.Global.VLANLimit)
				}
			},
			problem: `vlan-limit="two": want a number from 0 up; 1 applies`,
		},
		{
			name: "every protocol of OVS's _ADD_BR",
			rows: func() *Rows {
				return rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0", Protocols: []string{
					"OpenFlow10", "OpenFlow11", "OpenFlow12", "OpenFlow13", "OpenFlow14", "OpenFlow15"}}, nil)
			},
			check: func(t *testing.T, d Desired) {
				if got := d.Bridges[0].Protocols; !slices.Equal(got, []uint8{1, 2, 3, 4, 5, 6}) || len(d.Problems) != 0 {
					t.Errorf("protocols %v, problems %q", got, d.Problems)
				}
			},
		},
		{
			name: "unsupported protocols only",
			rows: func() *Rows {
				return rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "br0", Protocols: []string{"OpenFlow16"}}, nil)
			},
			check: func(t *testing.T, d Desired) {
				if d.Bridges[0].Protocols != nil {
					t.Errorf("protocols %v, want the default", d.Bridges[0].Protocols)
				}
			},
			problem: "OpenFlow16 are not supported",
		},
		{
			name: "dangling references",
			rows: func() *Rows {
				r := rowsOf(&OpenvSwitch{UUID: "root", Bridges: []string{"gone"}}, &Bridge{UUID: "b0", Name: "br0",
					Ports: []string{"nope"}, Controller: []string{"nada"}}, nil)
				return r
			},
			check: func(t *testing.T, d Desired) {
				if len(d.Bridges) != 1 || len(d.Bridges[0].Ports) != 0 || len(d.Problems) != 3 {
					t.Errorf("bridges %+v problems %q", d.Bridges, d.Problems)
				}
			},
			problem: "missing bridge row gone",
		},
		{
			name: "bad bridge name",
			rows: func() *Rows {
				return rowsOf(&OpenvSwitch{UUID: "root"}, &Bridge{UUID: "b0", Name: "a-very-long-bridge-name"}, nil)
			},
			check: func(t *testing.T, d Desired) {
				if len(d.Bridges) != 0 {
					t.Errorf("bridges %+v", d.Bridges)
				}
			},
			problem: "1 to 15 characters",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Build(c.rows())
			c.check(t, d)
			if c.problem != "" && !strings.Contains(strings.Join(d.Problems, "\n"), c.problem) {
				t.Errorf("problems %q lack %q", d.Problems, c.problem)
			}
		})
	}
}

// TestBuildPortOnTwoBridges: a port listed by two bridges is used on the
// first (by the root's order) and reported.
func TestBuildPortOnTwoBridges(t *testing.T) {
	root := &OpenvSwitch{UUID: "root", Bridges: []string{"b0", "b1"}}
	in := iface("eth1", "")
	p := &Port{UUID: "p1", Name: "eth1", Interfaces: []string{in.UUID}}
	r := &Rows{Root: root,
		Bridges:    map[string]*Bridge{"b0": {UUID: "b0", Name: "br0", Ports: []string{"p1"}}, "b1": {UUID: "b1", Name: "br1", Ports: []string{"p1"}}},
		Ports:      map[string]*Port{"p1": p},
		Interfaces: map[string]*Interface{in.UUID: in}, Controllers: map[string]*Controller{}}
	d := Build(r)
	if len(d.Bridges) != 2 || len(d.Bridges[0].Ports) != 1 || len(d.Bridges[1].Ports) != 0 {
		t.Fatalf("bridges %+v", d.Bridges)
	}
	if !strings.Contains(strings.Join(d.Problems, "\n"), "port eth1 is on bridges br0 and br1") {
		t.Errorf("problems %q", d.Problems)
	}
}
