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
		if typ == "ip6gre" && c.Remote.IsValid() && !c.Remote.Is6() {
			t.Fatalf("ip6gre with an IPv4 remote: %+v", c)
		}
	})
}
