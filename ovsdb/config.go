package ovsdb

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Global holds the Open_vSwitch.other_config knobs govswitchd honours.
// A zero field means the key is absent: the daemon keeps its own setting.
type Global struct {
	FlowLimit    int           // flow-limit
	MaxIdle      time.Duration // max-idle (milliseconds in the database)
	Handlers     int           // n-handler-threads
	Revalidators int           // n-revalidator-threads
	// Governor is govswitch-governor: nil when absent, else true or false.
	Governor *bool
	// VLANLimit is vlan-limit, how many VLAN headers flows see (0: as
	// many as the datapath parses). Unlike the other fields it is never
	// "absent": Build gives ovs-vswitchd's default, 1, for a database
	// without it.
	VLANLimit int
	// FlowRestoreWait is flow-restore-wait=true: hold the datapath's
	// flows and upcalls until it is false (vswitchd/flowrestore.go).
	FlowRestoreWait bool
}

// BridgeConfig is one bridge as the database asks for it.
type BridgeConfig struct {
	UUID     string
	Name     string
	FailMode string // "standalone" or "secure"
	// Protocols are the OpenFlow wire versions allowed (1 = 1.0, 4 = 1.3, 5 = 1.4, 6 = 1.5);
	// nil means the switch's default.
	Protocols   []uint8
	Controllers []ControllerConfig
	// MACTableSize and MACAging come from other_config mac-table-size and
	// mac-aging-time (seconds); zero means the daemon's default.
	MACTableSize int
	MACAging     time.Duration
	Ports        []PortConfig // by name
	// Bonds are the Ports with several Interfaces (bond.go), by name.
	Bonds []BondConfig
	// Mirrors are the bridge's Mirror rows (mirror.go), by name.
	Mirrors []MirrorConfig
	// SFlow is the bridge's sFlow, nil without (sample.go). The
	// reconciler applies it apart from the other settings, without
	// rebuilding the bridge.
	SFlow *SFlowConfig
	// NetFlow is the bridge's NetFlow, nil without, applied likewise.
	NetFlow *NetFlowConfig
	// IPFIX is the bridge's IPFIX and collector sets (ipfix.go), nil
	// without, applied likewise.
	IPFIX *IPFIXConfig
	// HWAddr is other_config:hwaddr and DatapathID other_config:datapath-id
	// (nil and 0 when unset or unusable): see bridgeaddr.go. They, and
	// Runtime's settings, are applied apart from the others, without
	// rebuilding the bridge.
	HWAddr     net.HardwareAddr
	DatapathID uint64
	// Runtime holds other_config forward-bpdu, dp-desc and dp-sn; the
	// reconciler fills in its address and datapath id.
	Runtime BridgeRuntime
	// STP is the bridge's spanning tree, nil without (stp.go), applied
	// after the ports.
	STP *STPConfig
	// RSTP is its rapid spanning tree, nil without (rstp.go), applied
	// after STP. At most one of the two is set.
	RSTP *RSTPConfig
}

// ControllerConfig is one Controller row of a bridge.
type ControllerConfig struct {
	Target string
	// ProbeInterval and MaxBackoff are inactivity_probe and max_backoff;
	// zero means the default.
	ProbeInterval time.Duration
	MaxBackoff    time.Duration
}

// PortConfig is one Port row with its (single) Interface.
type PortConfig struct {
	PortUUID  string
	IfaceUUID string
	Name      string // the interface's name, which is the device's
	Type      string // "system", "internal" or "patch"
	// Peer is a patch port's options:peer, the patch port of another
	// bridge that it is joined to.
	Peer string
	// Options are a tunnel interface's options (vxlan, geneve, gre,
	// ip6gre, erspan, ip6erspan), which the switch checks when it adds the port; Tunnel is
	// their canonical text (sorted key=value pairs), by which a change
	// is seen.
	Options map[string]string
	Tunnel  string
	// OFPortRequest is ofport_request, 0 when unset.
	OFPortRequest uint32
	// OFPortHint is the ofport the database holds from an earlier run
	// (0 when none): a port added without a request takes it back when
	// it is free, so that OpenFlow numbers survive a restart.
	OFPortHint uint32
	// Local marks the bridge's own internal interface (named as the
	// bridge): the datapath's port 0, which the bridge creates itself.
	Local bool
	// VLAN is the Port's tag, trunks and vlan_mode, checked.
	VLAN VLANConfig
	// Bond is the name of the bond (the Port) the interface is a member
	// of, "" for a Port of one Interface.
	Bond string
	// Err, when set, says why the row cannot be configured; the switch is
	// not asked to add the port, and Err goes to Interface.error.
	Err string
}

// VLANConfig is a Port's VLAN columns as the database holds them, checked
// by Build: Mode is "" (unset) or one of trunk, access, native-tagged,
// native-untagged, dot1q-tunnel; Tag (0-4095) is set when HasTag is;
// Trunks are VLAN IDs 0-4095, sorted, empty for all. A dot1q-tunnel port
// also has CVLANs (cvlans: the customer VLANs it admits, sorted, empty
// for all) and QinQEthtype (other_config:qinq-ethtype, "802.1q" or ""
// for 802.1ad); other modes leave both empty. The zero value is no VLAN
// setting at all: a trunk of every VLAN.
type VLANConfig struct {
	Mode        string
	HasTag      bool
	Tag         int
	Trunks      []int
	CVLANs      []int
	QinQEthtype string
	// PriorityTags is other_config:priority-tags as given (any mode).
	PriorityTags string
}

// Equal reports whether v and w are the same columns.
func (v *VLANConfig) Equal(w *VLANConfig) bool {
	return v.Mode == w.Mode && v.HasTag == w.HasTag && v.Tag == w.Tag && v.QinQEthtype == w.QinQEthtype &&
		v.PriorityTags == w.PriorityTags &&
		slices.Equal(v.Trunks, w.Trunks) && slices.Equal(v.CVLANs, w.CVLANs)
}

// String describes the columns for logs: "access tag=10", "trunk
// trunks=10,20".
func (v VLANConfig) String() string {
	mode := v.Mode
	if mode == "" {
		mode = "trunk"
		if v.HasTag {
			mode = "access"
		}
	}
	s := mode
	if v.HasTag && mode != "trunk" {
		s += " tag=" + strconv.Itoa(v.Tag)
	}
	if len(v.Trunks) > 0 {
		ts := make([]string, len(v.Trunks))
		for i, t := range v.Trunks {
			ts[i] = strconv.Itoa(t)
		}
		s += " trunks=" + strings.Join(ts, ",")
	}
	if len(v.CVLANs) > 0 {
		cs := make([]string, len(v.CVLANs))
		for i, c := range v.CVLANs {
			cs[i] = strconv.Itoa(c)
		}
		s += " cvlans=" + strings.Join(cs, ",")
	}
	if v.QinQEthtype != "" {
		s += " qinq-ethtype=" + v.QinQEthtype
	}
	if v.PriorityTags != "" {
		s += " priority-tags=" + v.PriorityTags
	}
	return s
}

// parseVLAN checks a Port's VLAN columns. errMsg, when not empty, is the
// interface's error; warn is a problem the port runs despite.
func parseVLAN(p *Port) (v VLANConfig, errMsg, warn string) {
	if p.VLANMode != nil {
		v.Mode = *p.VLANMode
	}
	v.PriorityTags = p.OtherConfig["priority-tags"]
	switch v.Mode {
	case "", "trunk", "access", "native-tagged", "native-untagged", "dot1q-tunnel":
	default:
		return v, fmt.Sprintf("port %s: vlan_mode %q is not one of trunk, access, native-tagged, native-untagged, dot1q-tunnel", p.Name, v.Mode), ""
	}
	if p.Tag != nil {
		if *p.Tag < 0 || *p.Tag > 4095 {
			return v, fmt.Sprintf("port %s: tag %d is not a VLAN ID (0 to 4095)", p.Name, *p.Tag), ""
		}
		v.HasTag, v.Tag = true, *p.Tag
	}
	for _, t := range p.Trunks {
		if t < 0 || t > 4095 {
			return v, fmt.Sprintf("port %s: trunk %d is not a VLAN ID (0 to 4095)", p.Name, t), ""
		}
	}
	if v.Mode == "dot1q-tunnel" {
		// Only a dot1q-tunnel port reads cvlans and qinq-ethtype, and
		// it has no trunks (ofproto-dpif's bundle_set).
		for _, c := range p.CVLANs {
			if c < 0 || c > 4095 {
				return v, fmt.Sprintf("port %s: cvlan %d is not a VLAN ID (0 to 4095)", p.Name, c), ""
			}
		}
		v.CVLANs = append([]int(nil), p.CVLANs...)
		sort.Ints(v.CVLANs)
		if p.OtherConfig["qinq-ethtype"] == "802.1q" {
			v.QinQEthtype = "802.1q"
		}
		return v, "", ""
	}
	if len(p.Trunks) > 0 && (v.Mode == "access" || v.Mode == "" && v.HasTag) {
		// As ovs-vswitchd: the port runs as an access port, and the log
		// says the trunks are ignored.
		return v, "", fmt.Sprintf("port %s: ignoring trunks in access mode", p.Name)
	}
	v.Trunks = append([]int(nil), p.Trunks...)
	sort.Ints(v.Trunks)
	return v, "", ""
}

// settingsEqual reports whether a and b ask for the same bridge-level
// settings (everything but the ports).
func settingsEqual(a, b *BridgeConfig) bool {
	if a.Name != b.Name || a.FailMode != b.FailMode || a.MACTableSize != b.MACTableSize || a.MACAging != b.MACAging {
		return false
	}
	if len(a.Protocols) != len(b.Protocols) || len(a.Controllers) != len(b.Controllers) {
		return false
	}
	for i := range a.Protocols {
		if a.Protocols[i] != b.Protocols[i] {
			return false
		}
	}
	for i := range a.Controllers {
		if a.Controllers[i] != b.Controllers[i] {
			return false
		}
	}
	return true
}

// Desired is the configuration the database asks for.
type Desired struct {
	NextCfg int
	Global  Global
	Bridges []BridgeConfig // by name
	// CTZoneTimeouts are the system datapath's zones with a timeout
	// policy: zone -> CT_Timeout_Policy timeouts (seconds).
	CTZoneTimeouts map[uint16]map[string]uint32
	// QoS is each interface's egress QoS (by interface name), for the
	// ports of one interface that have a QoS row.
	QoS map[string]QoSConfig
	// Policing is each interface's ingress policing (by name), for those
	// with a rate.
	Policing map[string]Policing
	// Problems are configuration mistakes that are not about one
	// interface (those go to PortConfig.Err): a bad other_config value, a
	// dangling reference, a port on two bridges. The caller logs them.
	Problems []string
}

// Rows is a consistent copy of the tables, keyed by UUID.
type Rows struct {
	Root        *OpenvSwitch
	Bridges     map[string]*Bridge
	Ports       map[string]*Port
	Interfaces  map[string]*Interface
	Controllers map[string]*Controller
	Datapaths   map[string]*Datapath
	CTZones     map[string]*CTZone
	CTTimeouts  map[string]*CTTimeoutPolicy
	QoS         map[string]*QoS
	Queues      map[string]*Queue
	Mirrors     map[string]*Mirror // nil: none
	// Sampling rows (sample.go); nil maps are empty.
	SFlows   map[string]*SFlow
	NetFlows map[string]*NetFlow
	FSCS     map[string]*FlowSampleCollectorSet
	IPFIXes  map[string]*IPFIX
}

// Build turns the rows into the desired configuration. It never fails:
// rows it cannot use are reported in Problems or PortConfig.Err. A nil
// Root (the database not yet initialised by ovs-vsctl init) gives an
// empty configuration.
func Build(r *Rows) Desired {
	var d Desired
	if r.Root == nil {
		return d
	}
	d.NextCfg = r.Root.NextCfg
	d.Global = parseGlobal(r.Root.OtherConfig, &d.Problems)
	warnUnsupportedConfig(r, &d.Problems)
	d.CTZoneTimeouts = buildCTZones(r, &d.Problems)
	d.QoS = buildQoS(r, &d.Problems)
	d.Policing = buildPolicing(r)
	portOwner := map[string]string{}  // port name -> bridge
	ifaceOwner := map[string]string{} // interface name -> bridge/port
	sflowSubID := 0
	for _, bu := range r.Root.Bridges {
		br := r.Bridges[bu]
		if br == nil {
			d.Problems = append(d.Problems, fmt.Sprintf("Open_vSwitch refers to missing bridge row %s", bu))
			continue
		}
		bc := BridgeConfig{UUID: br.UUID, Name: br.Name, FailMode: "standalone"}
		if br.Name == "" || len(br.Name) > 15 {
			d.Problems = append(d.Problems, fmt.Sprintf("bridge %q: a bridge name is 1 to 15 characters (it names a datapath and a device); ignored", br.Name))
			continue
		}
		if br.FailMode != nil && *br.FailMode == "secure" {
			bc.FailMode = "secure"
		}
		switch br.DatapathTyp {
		case "", "system":
		default:
			d.Problems = append(d.Problems, fmt.Sprintf("bridge %s: datapath_type %q is not supported; it runs on the kernel datapath (system)", br.Name, br.DatapathTyp))
		}
		bc.Protocols = parseProtocols(br.Name, br.Protocols, &d.Problems)
		parseBridgeAddress(br.OtherConfig, &bc, &d.Problems)
		parseBridgeRuntime(br.OtherConfig, &bc, &d.Problems)
		parseMcast(r, br, &bc, &d.Problems) // mcast.go
		parseSampling(r, br, &bc, &sflowSubID, &d.Problems)
		bc.MACTableSize = parseInt(br.OtherConfig, "mac-table-size", 1, 1<<24, "bridge "+br.Name, &d.Problems)
		if s := parseInt(br.OtherConfig, "mac-aging-time", 1, 1<<30, "bridge "+br.Name, &d.Problems); s > 0 {
			bc.MACAging = time.Duration(s) * time.Second
		}
		for _, cu := range br.Controller {
			c := r.Controllers[cu]
			if c == nil {
				d.Problems = append(d.Problems, fmt.Sprintf("bridge %s refers to missing controller row %s", br.Name, cu))
				continue
			}
			cc := ControllerConfig{Target: c.Target}
			if c.InactivityProbe != nil && *c.InactivityProbe > 0 {
				cc.ProbeInterval = time.Duration(*c.InactivityProbe) * time.Millisecond
			}
			if c.MaxBackoff != nil && *c.MaxBackoff > 0 {
				cc.MaxBackoff = time.Duration(*c.MaxBackoff) * time.Millisecond
			}
			bc.Controllers = append(bc.Controllers, cc)
		}
		sort.Slice(bc.Controllers, func(i, j int) bool { return bc.Controllers[i].Target < bc.Controllers[j].Target })
		for _, pu := range br.Ports {
			p := r.Ports[pu]
			if p == nil {
				d.Problems = append(d.Problems, fmt.Sprintf("bridge %s refers to missing port row %s", br.Name, pu))
				continue
			}
			if other, dup := portOwner[p.Name]; dup {
				d.Problems = append(d.Problems, fmt.Sprintf("port %s is on bridges %s and %s; ignored on %s", p.Name, other, br.Name, br.Name))
				continue
			}
			portOwner[p.Name] = br.Name
			bond, bondErr := bondOf(p, r.Interfaces, &d.Problems)
			if bond != nil && bondErr == "" {
				bc.Bonds = append(bc.Bonds, *bond)
			}
			for i, iu := range p.Interfaces {
				in := r.Interfaces[iu]
				if in == nil {
					d.Problems = append(d.Problems, fmt.Sprintf("port %s refers to missing interface row %s", p.Name, iu))
					continue
				}
				pc := PortConfig{PortUUID: p.UUID, IfaceUUID: in.UUID, Name: in.Name}
				pc.Type, pc.Err = ifaceType(in.Type)
				if pc.Type == "patch" {
					pc.Peer, pc.Err = patchPeer(in.Name, in.Options)
				}
				if isTunnelType(pc.Type) {
					pc.Options, pc.Tunnel = in.Options, tunnelOptionsText(in.Options)
				}
				if isProbedTunnelType(pc.Type) {
					pc.Options = in.Options
				}
				if in.OfportRequest != nil && *in.OfportRequest > 0 && *in.OfportRequest < 0xff00 {
					pc.OFPortRequest = uint32(*in.OfportRequest)
				}
				if in.Ofport != nil && *in.Ofport > 0 && *in.Ofport < 0xff00 {
					pc.OFPortHint = uint32(*in.Ofport)
				}
				vlan, vlanErr, vlanWarn := parseVLAN(p)
				pc.VLAN = vlan
				if vlanWarn != "" && i == 0 {
					d.Problems = append(d.Problems, vlanWarn)
				}
				switch {
				case pc.Err != "":
				case vlanErr != "":
					pc.Err = vlanErr
				case bondErr != "":
					pc.Err = bondErr
				case in.Name == "" || len(in.Name) > 15:
					pc.Err = fmt.Sprintf("could not open network device %q (a device name is 1 to 15 characters)", in.Name)
				case bond != nil && !bond.Single:
					pc.Bond = p.Name
				case in.Name != p.Name:
					pc.Err = fmt.Sprintf("interface %s of port %s: govswitchd needs a port and its interface to have one name", in.Name, p.Name)
				case in.Name == br.Name:
					if pc.Type != "internal" {
						pc.Err = fmt.Sprintf("interface %s is named as its bridge, so it must be of type internal", in.Name)
					}
					pc.Local = true
				}
				if owner, dup := ifaceOwner[in.Name]; dup && i == 0 {
					pc.Err = fmt.Sprintf("interface %s is already on %s", in.Name, owner)
				}
				ifaceOwner[in.Name] = br.Name + "/" + p.Name
				bc.Ports = append(bc.Ports, pc)
			}
		}
		sort.Slice(bc.Ports, func(i, j int) bool { return bc.Ports[i].Name < bc.Ports[j].Name })
		sort.Slice(bc.Bonds, func(i, j int) bool { return bc.Bonds[i].Name < bc.Bonds[j].Name })
		bc.Mirrors = buildMirrors(br, r, &d.Problems)       // mirror.go
		bc.STP = buildSTP(br, r, bc.Mirrors, &d.Problems)   // stp.go
		bc.RSTP = buildRSTP(br, r, bc.Mirrors, &d.Problems) // rstp.go
		d.Bridges = append(d.Bridges, bc)
	}
	sort.Slice(d.Bridges, func(i, j int) bool { return d.Bridges[i].Name < d.Bridges[j].Name })
	return d
}

// ifaceType maps Interface.type to a datapath port type, or an error for
// the interface.
func ifaceType(t string) (typ, errMsg string) {
	switch t {
	case "", "system", "tap":
		return "system", ""
	case "internal":
		return "internal", ""
	case "patch":
		return "patch", ""
	case "bareudp", "gtpu":
		// Not carried: the switch refuses them with what the kernel
		// says of them, as ovs-vswitchd meets it (config_tunnel.go).
		return t, ""
	}
	if isTunnelType(t) {
		return t, ""
	}
	return "", fmt.Sprintf("interface type %q is not supported by govswitchd (system, internal, patch, vxlan, geneve, gre, ip6gre, erspan and ip6erspan are)", t)
}

// patchPeer checks a patch interface's options as ovs-vswitchd's patch
// netdev does, with its words for the interface's error: one option,
// peer, naming another interface.
func patchPeer(name string, opts map[string]string) (peer, errMsg string) {
	peer, ok := opts["peer"]
	switch {
	case !ok || peer == "":
		return "", name + ": patch type requires valid 'peer' argument"
	case len(opts) > 1:
		return "", name + ": patch type takes only a 'peer' argument"
	case peer == name:
		return "", name + ": patch peer must not be self"
	}
	return peer, ""
}

// parseProtocols maps Bridge.protocols to OpenFlow wire versions. Versions
// the switch does not speak are reported and left out; if none is left,
// the default (nil) applies.
func parseProtocols(bridge string, ps []string, problems *[]string) []uint8 {
	var vs []uint8
	var skipped []string
	for _, p := range ps {
		switch p {
		case "OpenFlow10":
			vs = append(vs, 1)
		case "OpenFlow11":
			vs = append(vs, 2)
		case "OpenFlow12":
			vs = append(vs, 3)
		case "OpenFlow13":
			vs = append(vs, 4)
		case "OpenFlow14":
			vs = append(vs, 5)
		case "OpenFlow15":
			vs = append(vs, 6)
		default:
			skipped = append(skipped, p)
		}
	}
	sort.Strings(skipped)
	if len(skipped) > 0 {
		*problems = append(*problems, fmt.Sprintf("bridge %s: protocols %s are not supported (OpenFlow10 to OpenFlow15 are)", bridge, strings.Join(skipped, ",")))
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	return vs
}

func parseGlobal(oc map[string]string, problems *[]string) Global {
	var g Global
	g.FlowLimit = parseInt(oc, "flow-limit", 1, 1<<30, "Open_vSwitch", problems)
	if ms := parseInt(oc, "max-idle", 1, 1<<30, "Open_vSwitch", problems); ms > 0 {
		g.MaxIdle = time.Duration(ms) * time.Millisecond
	}
	g.FlowRestoreWait = oc["flow-restore-wait"] == "true"
	g.Handlers = parseInt(oc, "n-handler-threads", 1, 1024, "Open_vSwitch", problems)
	g.Revalidators = parseInt(oc, "n-revalidator-threads", 1, 1024, "Open_vSwitch", problems)
	// vlan-limit, with ovs-vswitchd's default when absent or not a
	// number (LEGACY_MAX_VLAN_HEADERS, 1: controllers written before OVS
	// 2.8 see one tag); 0 lifts it to the datapath's two.
	g.VLANLimit = 1
	if v, ok := oc["vlan-limit"]; ok {
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			*problems = append(*problems, fmt.Sprintf("Open_vSwitch other_config:vlan-limit=%q: want a number from 0 up; 1 applies", v))
		} else {
			g.VLANLimit = n
		}
	}
	if v, ok := oc["govswitch-governor"]; ok {
		switch v {
		case "true":
			t := true
			g.Governor = &t
		case "false":
			f := false
			g.Governor = &f
		default:
			*problems = append(*problems, fmt.Sprintf("Open_vSwitch other_config:govswitch-governor=%q: want true or false; ignored", v))
		}
	}
	return g
}

// parseInt reads other_config[key] as an integer in [lo, hi]; 0 when
// absent or bad (a bad value is reported).
func parseInt(oc map[string]string, key string, lo, hi int, where string, problems *[]string) int {
	v, ok := oc[key]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		*problems = append(*problems, fmt.Sprintf("%s other_config:%s=%q: want a number from %d to %d; ignored", where, key, v, lo, hi))
		return 0
	}
	return n
}
