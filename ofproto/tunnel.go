package ofproto

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"golang.org/x/sys/unix"
)

// TunnelConfig is a tunnel port's configuration, Interface.options as
// ovs-vswitchd's netdev-vport reads them. A field's Flow twin says the
// option was "flow": the value comes from the packet's tunnel metadata
// (on receive, any value matches; on send, the flow's tun_* field).
type TunnelConfig struct {
	Type string // datapath.TunnelVXLAN, TunnelGeneve, TunnelGRE, TunnelIP6GRE, TunnelERSPAN, TunnelIP6ERSPAN

	Remote     netip.Addr // remote_ip; invalid with RemoteFlow
	RemoteFlow bool
	Local      netip.Addr // local_ip; invalid when unset or with LocalFlow
	LocalFlow  bool

	InKey, OutKey               uint64
	InKeyFlow, OutKeyFlow       bool
	InKeyPresent, OutKeyPresent bool
	DstPort                     uint16 // UDP port of vxlan and geneve (their default when unset)
	TOS, TTL                    uint8
	TOSInherit, TTLInherit      bool
	Csum, DontFragment          bool
	L3                          bool // packet_type=legacy_l3 (gre, vxlan with GPE): no Ethernet header in the tunnel
	GPE                         bool // exts=gpe (vxlan): VXLAN-GPE, legacy_l3 only in govswitchd
	GBP                         bool // exts=gbp (vxlan): VXLAN Group Based Policy, tun_gbp_id and tun_gbp_flags on the wire

	// EgressMark is egress_pkt_mark, the skb mark an encapsulated packet
	// leaves with (OVS's IPsec setups mark tunnel traffic with it, for
	// an xfrm policy to pick it up); only with EgressMarkSet.
	EgressMark    uint32
	EgressMarkSet bool

	// ERSPAN (erspan and ip6erspan only): the version 1 (type II) or 2
	// (type III) and its fields, sent with every packet; 0 is none
	// configured, as in OVS, and the kernel then drops what it is given.
	// erspan_ver=flow makes every field flow-based.
	ErspanVer, ErspanDir, ErspanHwid                            uint8
	ErspanIdx                                                   uint32
	ErspanVerFlow, ErspanIdxFlow, ErspanDirFlow, ErspanHwidFlow bool

	options string // the options, canonical, for change detection
}

// IsTunnelType reports whether typ is an Interface type ParseTunnelConfig
// takes.
func IsTunnelType(typ string) bool {
	switch typ {
	case datapath.TunnelVXLAN, datapath.TunnelGeneve, datapath.TunnelGRE, datapath.TunnelIP6GRE,
		datapath.TunnelERSPAN, datapath.TunnelIP6ERSPAN:
		return true
	}
	return false
}

// isGREType reports whether tunnel type typ is carried over GRE: its key
// is 32 bits (ERSPAN's session ID rides in it too).
func isGREType(typ string) bool {
	switch typ {
	case datapath.TunnelGRE, datapath.TunnelIP6GRE, datapath.TunnelERSPAN, datapath.TunnelIP6ERSPAN:
		return true
	}
	return false
}

// isERSPANType reports whether tunnel type typ is ERSPAN's, over IPv4 or
// IPv6.
func isERSPANType(typ string) bool {
	return typ == datapath.TunnelERSPAN || typ == datapath.TunnelIP6ERSPAN
}

// isIPv6OnlyType reports whether tunnel type typ runs over IPv6 only.
func isIPv6OnlyType(typ string) bool {
	return typ == datapath.TunnelIP6GRE || typ == datapath.TunnelIP6ERSPAN
}

// TunnelOptionsKey is options in a canonical form: two tunnel ports whose
// keys differ need different configuration.
func TunnelOptionsKey(opts map[string]string) string {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s=%s,", k, opts[k])
	}
	return sb.String()
}

// ParseTunnelConfig checks the options of an interface name of tunnel type
// typ as ovs-vswitchd's set_tunnel_config does, with its words in the
// error, which goes to Interface.error. Options ovs-vswitchd knows but
// govswitchd does not implement are refused, not ignored.
func ParseTunnelConfig(name, typ string, opts map[string]string) (TunnelConfig, error) {
	c := TunnelConfig{Type: typ, TTL: 64, DontFragment: true, options: TunnelOptionsKey(opts)}
	if !IsTunnelType(typ) {
		return c, fmt.Errorf("%s: tunnel type %q is not supported by govswitchd (vxlan, geneve, gre, ip6gre, erspan and ip6erspan are)", name, typ)
	}
	ipv6 := isIPv6OnlyType(typ)
	erspan := isERSPANType(typ)
	udp := typ == datapath.TunnelVXLAN || typ == datapath.TunnelGeneve
	var keyPresent, keyFlow bool
	var key uint64
	for k, v := range opts {
		var err error
		switch k {
		case "remote_ip":
			if v == "flow" {
				c.RemoteFlow = true
			} else if c.Remote, err = netip.ParseAddr(v); err != nil || c.Remote.Is6() != ipv6 && ipv6 {
				return c, fmt.Errorf("%s: bad %s 'remote_ip'", name, typ)
			}
		case "local_ip":
			if v == "flow" {
				c.LocalFlow = true
			} else if c.Local, err = netip.ParseAddr(v); err != nil {
				return c, fmt.Errorf("%s: bad %s 'local_ip'", name, typ)
			}
		case "key", "in_key", "out_key":
			var val uint64
			flowKey := v == "flow"
			if !flowKey {
				if val, err = strconv.ParseUint(v, 0, 64); err != nil {
					return c, fmt.Errorf("%s: bad %s '%s' %q (a number or flow)", name, typ, k, v)
				}
				if isGREType(typ) {
					val &= 0xffffffff
				} else {
					val &= 0xffffff
				}
			}
			switch k {
			case "key":
				keyPresent, keyFlow, key = true, flowKey, val
			case "in_key":
				c.InKeyPresent, c.InKeyFlow, c.InKey = true, flowKey, val
			case "out_key":
				c.OutKeyPresent, c.OutKeyFlow, c.OutKey = true, flowKey, val
			}
		case "dst_port":
			if !udp {
				return c, fmt.Errorf("%s: %s type does not support 'dst_port' (govswitchd)", name, typ)
			}
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil || n == 0 {
				return c, fmt.Errorf("%s: bad %s 'dst_port' %q", name, typ, v)
			}
			c.DstPort = uint16(n)
		case "tos":
			if v == "inherit" {
				c.TOSInherit = true
			} else if n, err := strconv.ParseUint(v, 0, 8); err == nil && n&3 == 0 {
				c.TOS = uint8(n)
			} else {
				return c, fmt.Errorf("%s: invalid TOS %s", name, v)
			}
		case "ttl":
			if v == "inherit" {
				c.TTLInherit = true
			} else if n, err := strconv.ParseUint(v, 0, 8); err == nil {
				c.TTL = uint8(n)
			} else {
				return c, fmt.Errorf("%s: invalid TTL %s", name, v)
			}
		case "packet_type":
			// Ethernet frames in the tunnel, or, for gre, IP packets
			// (legacy_l3: translation gives them an Ethernet header on
			// the way in and takes it off on the way out, as
			// ovs-vswitchd does). ptap needs packet_type matching.
			// vxlan carries IP packets only with exts=gpe, checked
			// once every option is read.
			switch {
			case v == "legacy_l2":
			case v == "legacy_l3" && (typ == datapath.TunnelGRE || typ == datapath.TunnelVXLAN):
				c.L3 = true
			default:
				return c, fmt.Errorf("%s: %s packet_type=%s is not supported by govswitchd (legacy_l2 is, and legacy_l3 for gre and VXLAN-GPE)", name, typ, v)
			}
		case "exts":
			if typ != datapath.TunnelVXLAN {
				return c, fmt.Errorf("%s: %s argument '%s' is not supported by govswitchd", name, typ, k)
			}
			for _, ext := range strings.Split(v, ",") {
				switch ext {
				case "gpe":
					c.GPE = true
				case "gbp":
					c.GBP = true
				default:
					return c, fmt.Errorf("%s: unknown extension '%s'", name, ext)
				}
			}
		case "erspan_ver", "erspan_idx", "erspan_dir", "erspan_hwid":
			if !erspan {
				return c, fmt.Errorf("%s: %s type does not support '%s' (govswitchd)", name, typ, k)
			}
			if err := c.parseErspanOption(name, k, v); err != nil {
				return c, err
			}
		case "csum":
			if erspan {
				// ovs-vswitchd knows csum only for the types that
				// have one; ERSPAN's GRE header has none.
				return c, fmt.Errorf("%s: %s type does not support 'csum'", name, typ)
			}
			c.Csum = v == "true"
		case "df_default":
			c.DontFragment = v != "false"
		case "egress_pkt_mark":
			// ovs-vswitchd takes strtoul's prefix of anything;
			// govswitchd refuses what is not a 32-bit decimal.
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return c, fmt.Errorf("%s: bad %s 'egress_pkt_mark' %q (a decimal number below 2^32)", name, typ, v)
			}
			c.EgressMark, c.EgressMarkSet = uint32(n), true
		default:
			return c, fmt.Errorf("%s: %s argument '%s' is not supported by govswitchd", name, typ, k)
		}
	}
	if typ == datapath.TunnelVXLAN {
		// As set_tunnel_config: VXLAN carries IP packets only with
		// GPE, and GPE's default packet_type is legacy_l2, which
		// govswitchd does not give a GPE device (Ethernet frames
		// ride in VXLAN without it).
		switch {
		case c.L3 && !c.GPE:
			return c, fmt.Errorf("%s: legacy_l3 configured on VXLAN (without GPE) tunnel that cannot carry L3 traffic", name)
		case c.GPE && !c.L3:
			return c, fmt.Errorf("%s: VXLAN-GPE packet_type=legacy_l2 is not supported by govswitchd (packet_type=legacy_l3 is)", name)
		case c.GPE && c.GBP:
			// The kernel refuses a vxlan device with both.
			return c, fmt.Errorf("%s: vxlan extensions gpe and gbp together are not supported by govswitchd", name)
		}
	}
	if c.L3 && (c.Remote.Is6() || c.Local.Is6()) {
		return c, fmt.Errorf("%s: %s packet_type=legacy_l3 over IPv6 is not supported by govswitchd", name, typ)
	}
	if !c.Remote.IsValid() && !c.RemoteFlow {
		return c, fmt.Errorf("%s: %s type requires valid 'remote_ip' argument", name, typ)
	}
	if c.Remote.IsValid() && c.Local.IsValid() && c.Remote.Is4() != c.Local.Is4() {
		return c, fmt.Errorf("%s: 'remote_ip' and 'local_ip' must be of one address family", name)
	}
	if keyPresent {
		if !c.InKeyPresent {
			c.InKeyPresent, c.InKeyFlow, c.InKey = true, keyFlow, key
		}
		if !c.OutKeyPresent {
			c.OutKeyPresent, c.OutKeyFlow, c.OutKey = true, keyFlow, key
		}
	}
	if udp && c.DstPort == 0 {
		c.DstPort = datapath.TunnelDefaultPort(typ)
	}
	if c.ErspanVerFlow {
		// erspan_ver=flow takes every ERSPAN field from the flow.
		c.ErspanIdxFlow, c.ErspanDirFlow, c.ErspanHwidFlow = true, true, true
	}
	return c, nil
}

// parseErspanOption parses ERSPAN option k=v of interface name into c as
// ovs-vswitchd's set_tunnel_config reads them, with its error words: the
// version 1 or 2 and the direction 0 or 1 in decimal, the 20-bit index and
// the 6-bit hardware ID in hexadecimal (with or without 0x), each of them
// "flow" or a value.
func (c *TunnelConfig) parseErspanOption(name, k, v string) error {
	isFlow := v == "flow"
	hex := func(limit uint64) (uint64, bool) {
		n, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(v, "0x"), "0X"), 16, 32)
		return n, err == nil && n <= limit
	}
	switch k {
	case "erspan_ver":
		c.ErspanVerFlow = isFlow
		if !isFlow {
			if v != "1" && v != "2" {
				return fmt.Errorf("%s: invalid erspan version: %s", name, v)
			}
			c.ErspanVer = v[0] - '0'
		}
	case "erspan_idx":
		c.ErspanIdxFlow = isFlow
		if !isFlow {
			n, ok := hex(0xfffff)
			if !ok {
				return fmt.Errorf("%s: invalid erspan index: %s", name, v)
			}
			c.ErspanIdx = uint32(n)
		}
	case "erspan_dir":
		c.ErspanDirFlow = isFlow
		if !isFlow {
			if v != "0" && v != "1" {
				return fmt.Errorf("%s: invalid erspan direction: %s", name, v)
			}
			c.ErspanDir = v[0] - '0'
		}
	case "erspan_hwid":
		c.ErspanHwidFlow = isFlow
		if !isFlow {
			n, ok := hex(0x3f)
			if !ok {
				return fmt.Errorf("%s: invalid erspan hardware ID: %s", name, v)
			}
			c.ErspanHwid = uint8(n)
		}
	}
	return nil
}

// tunnelPort is what a tunnel port carries besides Port: its
// configuration. The datapath port (Port.DPPort) is the vport the
// datapath's tunnels of the type and UDP port share.
type tunnelPort struct {
	cfg TunnelConfig
}

// IsTunnel reports whether p is a tunnel port.
func (p *Port) IsTunnel() bool { return p.tunnel != nil }

// TunnelConfig returns a tunnel port's configuration (ok false for other
// ports).
func (p *Port) TunnelConfig() (TunnelConfig, bool) {
	if p.tunnel == nil {
		return TunnelConfig{}, false
	}
	return p.tunnel.cfg, true
}

// TunnelOptions is the canonical form of a tunnel port's options
// (TunnelOptionsKey), "" for other ports.
func (p *Port) TunnelOptions() string {
	if p.tunnel == nil {
		return ""
	}
	return p.tunnel.cfg.options
}

// ownsVport reports whether p has a datapath port of its own: not a patch
// port (none) nor a tunnel port (a shared one).
func (p *Port) ownsVport() bool { return p.Type != PortTypePatch && p.tunnel == nil }

// AddTunnelPort adds tunnel port name with configuration cfg (from
// ParseTunnelConfig) as OpenFlow port ofport (the next free number when
// 0). Its datapath port is the vport of cfg's type and UDP port that all
// tunnels of the datapath share, made with the port's first user and
// deleted with its last (see datapath.TunnelVporter).
func (b *Bridge) AddTunnelPort(name string, cfg TunnelConfig, ofport uint32, v PortVLAN) (Port, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Ports.byName(name) != nil {
		return Port{}, fmt.Errorf("port %s already exists on bridge %s", name, b.Name)
	}
	bk := b.Backer
	bk.mu.Lock()
	defer bk.mu.Unlock()
	if err := bk.tunnelClash(name, &cfg); err != nil {
		return Port{}, err
	}
	kind := cfg.vportKind()
	vp, err := bk.tunnelVport(kind, cfg.DstPort)
	if err != nil {
		return Port{}, fmt.Errorf("%s: %w", name, err)
	}
	p := Port{OFPort: ofport, DPPort: vp.PortNo, Name: name, Type: cfg.Type, VLAN: v, HWAddr: patchMAC("tunnel:" + name),
		tunnel: &tunnelPort{cfg: cfg}}
	if p.OFPort == 0 {
		p.OFPort = b.Ports.NextOFPort()
	}
	if err := b.Ports.Add(p); err != nil {
		bk.releaseTunnelVport(vp.PortNo)
		return Port{}, err
	}
	bk.portsChanged()
	b.Tables.Invalidate()
	if b.OnPortEvent != nil {
		b.OnPortEvent(PortEvent{Reason: 0, Port: p})
	}
	return p, nil
}

// vportKind is the datapath tunnel kind of c's shared vport: its type's,
// or the L3 kind of gre and VXLAN-GPE, whose devices differ.
func (c *TunnelConfig) vportKind() string {
	switch {
	case c.L3 && c.Type == datapath.TunnelGRE:
		return datapath.TunnelGREL3
	case c.GPE:
		return datapath.TunnelVXLANGPE
	case c.GBP:
		return datapath.TunnelVXLANGBP
	}
	return c.Type
}

// tunnelVport returns the shared vport of tunnels of kind on dstPort, made
// now if the datapath lacks it. The caller holds bk.mu.
func (bk *Backer) tunnelVport(kind string, dstPort uint16) (datapath.Vport, error) {
	if tv, ok := bk.DP.(datapath.TunnelVporter); ok {
		return tv.AddTunnelVport(kind, dstPort)
	}
	name := datapath.TunnelVportName(kind, dstPort)
	if vp, err := bk.DP.Vport(name); err == nil {
		return vp, nil
	}
	lt := datapath.TunnelLegacyType(kind)
	switch kind {
	case datapath.TunnelGREL3:
		// The in-memory datapath's GRE and VXLAN vports carry what
		// the actions give them, with an Ethernet header or without.
		lt = datapath.VportGRE
	case datapath.TunnelVXLANGPE, datapath.TunnelVXLANGBP:
		lt = datapath.VportVXLAN
	}
	if lt == 0 {
		return datapath.Vport{}, fmt.Errorf("tunnel type %s: datapath %s has no vport type for it: %w", kind, bk.DP.Name(), datapath.ErrNotSupported)
	}
	return bk.DP.AddVport(datapath.VportSpec{Name: name, Type: lt, DstPort: dstPort})
}

// releaseTunnelVport deletes shared tunnel vport portNo when no tunnel
// port of any bridge uses it any more. The caller holds bk.mu and has
// published the set without the port that let it go.
func (bk *Backer) releaseTunnelVport(portNo uint32) error {
	if len(bk.set.Load().tunnels[portNo]) > 0 {
		return nil
	}
	vps, err := bk.DP.Vports()
	if err != nil {
		return err
	}
	for _, vp := range vps {
		if vp.PortNo != portNo {
			continue
		}
		if tv, ok := bk.DP.(datapath.TunnelVporter); ok {
			err = tv.DeleteTunnelVport(vp)
		} else {
			err = bk.DP.DeleteVport(portNo)
		}
		if errors.Is(err, unix.ENODEV) {
			err = nil
		}
		return err
	}
	return nil
}

// tunnelClash refuses a tunnel port that would receive the same packets as
// one the datapath already has, as ovs-vswitchd's tnl_port_add refuses a
// duplicate. The caller holds bk.mu.
func (bk *Backer) tunnelClash(name string, cfg *TunnelConfig) error {
	for _, ends := range bk.set.Load().tunnels {
		for _, e := range ends {
			o := &e.p.tunnel.cfg
			if o.Type == cfg.Type && o.L3 != cfg.L3 && cfg.Type == datapath.TunnelGRE {
				// One gre_sys vport: a gretap or a gre device.
				return fmt.Errorf("%s: %s ports with packet_type legacy_l2 and legacy_l3 (port '%s') cannot share a datapath in govswitchd", name, cfg.Type, e.p.Name)
			}
			if o.Type == cfg.Type && o.GPE != cfg.GPE && o.DstPort == cfg.DstPort {
				// One vxlan_sys_PORT vport: a vxlan device in
				// GPE mode or not.
				return fmt.Errorf("%s: vxlan ports with and without exts=gpe (port '%s') cannot share UDP port %d in govswitchd", name, e.p.Name, cfg.DstPort)
			}
			if o.Type == cfg.Type && o.GBP != cfg.GBP && o.DstPort == cfg.DstPort {
				// One vxlan_sys_PORT vport, with IFLA_VXLAN_GBP or
				// without: ovs-vswitchd's words.
				return fmt.Errorf("%s: VXLAN-GBP, and non-VXLAN-GBP tunnels can't be configured on the same dst_port", name)
			}
			if o.Type == cfg.Type && o.DstPort == cfg.DstPort && o.Remote == cfg.Remote && o.RemoteFlow == cfg.RemoteFlow &&
				o.Local == cfg.Local && o.LocalFlow == cfg.LocalFlow && o.InKey == cfg.InKey && o.InKeyFlow == cfg.InKeyFlow {
				return fmt.Errorf("%s: attempting to add tunnel port with same config as port '%s'", name, e.p.Name)
			}
		}
	}
	return nil
}

// tunnelEnd is a tunnel port and its bridge, in the backer set's tunnels
// (by datapath port).
type tunnelEnd = patchEnd

// tunnelMatchKey is what a tunnel port receives, with the fields it takes
// any value of ("flow", or no local_ip) zero and flagged: a packet's
// candidates are its own fields with each subset of them wildcarded.
type tunnelMatchKey struct {
	port          uint32
	id            uint64
	remote, local [16]byte
	v6            bool
	anyID, anyRem bool
	anyLoc        bool
}

// indexTunnels fills s.tunnelMatch from s.tunnels. A port whose key
// another port already holds (tunnelClash refuses them) keeps the first.
func (s *backerSet) indexTunnels() {
	if len(s.tunnels) == 0 {
		return
	}
	s.tunnelMatch = map[tunnelMatchKey]*tunnelEnd{}
	for portNo, ends := range s.tunnels {
		for i := range ends {
			c := &ends[i].p.tunnel.cfg
			k := tunnelMatchKey{port: portNo, anyID: c.InKeyFlow, anyRem: c.RemoteFlow, anyLoc: c.LocalFlow || !c.Local.IsValid()}
			if !k.anyID {
				k.id = c.InKey
			}
			if !k.anyRem {
				k.remote, k.v6 = c.Remote.As16(), c.Remote.Is6()
				if c.Remote.Is4() {
					k.remote = [16]byte{}
					a := c.Remote.As4()
					copy(k.remote[:], a[:])
				}
			}
			if !k.anyLoc {
				k.local = c.Local.As16()
				if c.Local.Is4() {
					k.local = [16]byte{}
					a := c.Local.As4()
					copy(k.local[:], a[:])
				}
			}
			if k.anyRem && k.anyLoc {
				// The family matters only through an address.
			} else if k.anyRem {
				k.v6 = c.Local.Is6()
			}
			if _, dup := s.tunnelMatch[k]; !dup {
				s.tunnelMatch[k] = &ends[i]
			}
		}
	}
}

// tunnelReceiver finds the tunnel port a packet from shared tunnel vport
// key.InPort with tunnel metadata key.Tunnel arrived on, as ovs-vswitchd's
// tnl_find: an exact match on the key, remote and local addresses before
// one that takes any ("flow") for them, in that order of weight. It is
// at most eight map lookups, and does not allocate. Nil when none
// matches: the packet is dropped.
func (s *backerSet) tunnelReceiver(key *flow.Key) *tunnelEnd {
	if s.tunnelMatch == nil {
		return nil
	}
	t := &key.Tunnel
	v6 := t.IPv6Src != [16]byte{} || t.IPv6Dst != [16]byte{}
	var remote, local [16]byte
	if v6 {
		remote, local = t.IPv6Src, t.IPv6Dst
	} else {
		copy(remote[:], t.IPv4Src[:])
		copy(local[:], t.IPv4Dst[:])
	}
	// Scores 7 (all exact) down to 0: key 4, remote 2, local 1.
	for score := 7; score >= 0; score-- {
		k := tunnelMatchKey{port: key.InPort, anyID: score&4 == 0, anyRem: score&2 == 0, anyLoc: score&1 == 0}
		if !k.anyID {
			k.id = t.ID
		}
		if !k.anyRem {
			k.remote = remote
		}
		if !k.anyLoc {
			k.local = local
		}
		if !k.anyRem || !k.anyLoc {
			k.v6 = v6
		}
		if e := s.tunnelMatch[k]; e != nil {
			return e
		}
	}
	return nil
}

// TunnelVportKind is the tunnel type (vxlan, geneve, gre, ip6gre, erspan,
// ip6erspan; VXLAN-GPE's is vxlan too, as ovs-vswitchd names it) of
// datapath port portNo when it is a shared tunnel vport with a tunnel port
// on it, "" otherwise.
func (bk *Backer) TunnelVportKind(portNo uint32) string {
	if ends := bk.set.Load().tunnels[portNo]; len(ends) > 0 {
		return ends[0].p.tunnel.cfg.Type
	}
	return ""
}

// TunnelVport is a shared tunnel vport as tnl/ports/show lists it.
type TunnelVport struct {
	PortNo  uint32 // the datapath port
	Name    string // the vport's name (vxlan_sys_4789, gre_sys, ...)
	Type    string // the tunnel type of its ports (TunnelVportKind)
	L3      bool   // its ports carry packets without an Ethernet header
	DstPort uint16 // the UDP port of vxlan and geneve, 0 for the GRE types
	Users   int    // how many tunnel ports, of every bridge, share it
}

// TunnelVports lists the datapath's shared tunnel vports that tunnel ports
// use, by port number. It reads the datapath's vports for their names; a
// vport it cannot find there (deleted behind govswitchd's back) is named
// as govswitchd would have named it.
func (bk *Backer) TunnelVports() ([]TunnelVport, error) {
	tunnels := bk.set.Load().tunnels
	if len(tunnels) == 0 {
		return nil, nil
	}
	vps, err := bk.DP.Vports()
	if err != nil {
		return nil, err
	}
	names := make(map[uint32]string, len(vps))
	for _, vp := range vps {
		names[vp.PortNo] = vp.Name
	}
	out := make([]TunnelVport, 0, len(tunnels))
	for portNo, ends := range tunnels {
		if len(ends) == 0 {
			continue
		}
		c := &ends[0].p.tunnel.cfg
		tv := TunnelVport{PortNo: portNo, Name: names[portNo], Type: c.Type, L3: c.L3, DstPort: c.DstPort, Users: len(ends)}
		if tv.Name == "" {
			tv.Name = datapath.TunnelVportName(c.vportKind(), c.DstPort)
		}
		out = append(out, tv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PortNo < out[j].PortNo })
	return out, nil
}
