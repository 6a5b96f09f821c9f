package ofproto

import (
	"strings"
	"testing"
)

// FuzzParseTunnelConfig: Interface options from the database never panic
// the parser, and a configuration it accepts has a destination.
func FuzzParseTunnelConfig(f *testing.F) {
	f.Add("vxlan", "remote_ip=10.0.0.1,key=100,dst_port=4790")
	f.Add("geneve", "remote_ip=flow,key=flow,local_ip=flow,tos=inherit,ttl=inherit")
	f.Add("gre", "remote_ip=10.0.0.1,in_key=5,out_key=flow,csum=true,df_default=false")
	f.Add("ip6gre", "remote_ip=fc00::1,local_ip=fc00::2,packet_type=legacy_l2")
	f.Add("vxlan", "remote_ip=1.2.3.4,key=0xffffffffffffffffff,tos=0x100")
	f.Add("erspan", "remote_ip=1.2.3.4")
	f.Add("vxlan", "remote_ip=1.2.3.4,exts=gpe,packet_type=legacy_l3,dst_port=4790")
	f.Add("vxlan", "remote_ip=1.2.3.4,key=100,exts=gbp")
	f.Add("vxlan", "remote_ip=1.2.3.4,exts=gbp,gpe,packet_type=legacy_l3")
	f.Add("erspan", "remote_ip=1.2.3.4,key=1,erspan_ver=1,erspan_idx=0x7")
	f.Add("ip6erspan", "remote_ip=fc00::1,key=121,erspan_ver=2,erspan_dir=0,erspan_hwid=0x7")
	f.Add("ip6erspan", "remote_ip=fc00::1,erspan_ver=flow,erspan_hwid=3f")
	f.Fuzz(func(t *testing.T, typ, opts string) {
		m := map[string]string{}
		for _, kv := range strings.Split(opts, ",") {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		c, err := ParseTunnelConfig("t0", typ, m)
		if err != nil {
			return
		}
		if !c.RemoteFlow && !c.Remote.IsValid() {
			t.Fatalf("accepted %q %q without a destination: %+v", typ, opts, c)
		}
		if (typ == "ip6gre" || typ == "ip6erspan") && c.Remote.IsValid() && !c.Remote.Is6() {
			t.Fatalf("%s with an IPv4 remote: %+v", typ, c)
		}
		if c.ErspanVer > 2 || c.ErspanDir > 1 || c.ErspanHwid > 0x3f || c.ErspanIdx > 0xfffff {
			t.Fatalf("ERSPAN fields out of range: %+v", c)
		}
		if c.ErspanVerFlow && !(c.ErspanIdxFlow && c.ErspanDirFlow && c.ErspanHwidFlow) {
			t.Fatalf("erspan_ver=flow with a fixed field: %+v", c)
		}
	})
}
