package ovsdb

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sort"
	"syscall"
)

// Switch is what the database configures: govswitchd's bridges and
// ports. Names are bridge and device names. Methods are called from one
// goroutine at a time.
type Switch interface {
	// AddBridge creates and starts a bridge with its datapath and the
	// datapath's internal port 0 (named as the bridge), under the global
	// settings g. It adds no port, but a datapath left by an earlier run
	// keeps its ports, which should take the OpenFlow numbers cfg.Ports
	// request or hint.
	AddBridge(cfg *BridgeConfig, g Global) error
	// ReconfigureBridge applies changed bridge-level settings (fail mode,
	// controllers, protocols, MAC table) to a running bridge. It keeps the
	// datapath, its ports and their OpenFlow numbers; like ovs-vswitchd
	// on a fail-mode or controller change, it may flush OpenFlow flows.
	ReconfigureBridge(cfg *BridgeConfig, g Global) error
	// DeleteBridge stops a bridge and destroys its datapath.
	DeleteBridge(name string) error
	// AddPort adds device p.Name of type p.Type to the bridge, as OpenFlow
	// port p.OFPortRequest when that is not 0, else as p.OFPortHint when
	// that is free, else as the next free number.
	AddPort(bridge string, p *PortConfig) error
	// DeletePort removes a port (not the bridge's own) from the bridge.
	DeletePort(bridge, port string) error
	// SetPortVLAN gives a running port (the bridge's own included) the
	// VLAN configuration p.VLAN, and reports whether that changed it.
	SetPortVLAN(bridge string, p *PortConfig) (changed bool, err error)
	// Ports returns the running ports of a bridge and their state.
	Ports(bridge string) ([]PortState, error)
	// DatapathID returns the bridge's OpenFlow datapath id.
	DatapathID(bridge string) (uint64, error)
	// SetGlobal applies the global settings that can change at runtime
	// (the flow limit); the rest take effect for bridges added later.
	SetGlobal(g Global)
	// SetCTZoneTimeouts gives the datapath's conntrack zones these
	// timeout policies (zone -> timeouts), replacing the last ones.
	SetCTZoneTimeouts(zones map[uint16]map[string]uint32) error
	// SetQoS gives the interfaces (by name) their egress QoS, replacing
	// the last set: an interface left out has its QoS removed. It reports
	// an error per interface it could not configure.
	SetQoS(qos map[string]QoSConfig) map[string]error
	// SetPolicing gives the interfaces (by name) their ingress policing,
	// replacing the last set, as SetQoS.
	SetPolicing(p map[string]Policing) map[string]error
	// SetBridgeRuntime applies the bridge settings that take effect
	// without rebuilding it: its address, datapath id and the like.
	SetBridgeRuntime(bridge string, rt BridgeRuntime) error
}

// BridgeRuntime is what a running bridge takes from its row at every
// reconfiguration, without being rebuilt.
type BridgeRuntime struct {
	// MAC is the Ethernet address of the bridge's own port and
	// DatapathID its OpenFlow datapath id (bridgeaddr.go).
	MAC        net.HardwareAddr
	DatapathID uint64
	// ForwardBPDU is other_config:forward-bpdu: NORMAL forwards frames
	// to IEEE's reserved multicast addresses instead of dropping them.
	ForwardBPDU bool
	// DPDesc and SerialNum are other_config dp-desc and dp-sn, for
	// OpenFlow's switch description ("" for the default).
	DPDesc, SerialNum string
	// Mcast is the bridge's multicast snooping, nil when
	// mcast_snooping_enable is false (mcast.go).
	Mcast *McastConfig
}

// PortState is a running port as the switch reports it.
type PortState struct {
	Name   string
	Type   string // "system", "internal" or "patch"
	OFPort uint32 // 65534 (OFPP_LOCAL) for the bridge's own port
	Peer   string // a patch port's peer
	Tunnel string // a tunnel port's options, as PortConfig.Tunnel
	// Device state, from the network device of that name; Known is false
	// when there is no such device to ask (e.g. on the in-memory
	// datapath), and then the rest are zero.
	Known   bool
	IfIndex int
	MAC     net.HardwareAddr
	AdminUp bool
	LinkUp  bool
	// LACPCurrent is the Interface's lacp_current: nil when the port is
	// no member of a bond running LACP.
	LACPCurrent *bool
}

// ifaceStatus is what is written back to one Interface row.
type ifaceStatus struct {
	ofport     int // -1 for failure
	err        string
	known      bool
	ifindex    int
	mac        string
	admin      string
	link       string
	lacp       *bool // lacp_current, nil: empty
	bridgeName string
}

// applied is what the reconciler last did to one bridge.
type applied struct {
	cfg BridgeConfig
	// sflow is the sFlow the bridge runs, known when sflowOK (a rebuilt
	// bridge runs none).
	sflow   *SFlowConfig
	sflowOK bool
	// netflow likewise.
	netflow   *NetFlowConfig
	netflowOK bool
	// ipfix likewise (ipfix.go).
	ipfix   *IPFIXConfig
	ipfixOK bool
}

// Reconciler drives a Switch towards a Desired configuration. It is not
// safe for concurrent use: the Monitor calls it from one goroutine.
type Reconciler struct {
	sw      Switch
	running map[string]*applied
	global  Global
	// ctZones are the zone timeout policies last applied; ctZonesSet
	// tells an empty set applied from none yet.
	ctZones    map[uint16]map[string]uint32
	ctZonesSet bool
	// qos and policing are what was last applied without error.
	qos      lastApplied[QoSConfig]
	policing lastApplied[Policing]
	// Logf receives one line per change (at slog.LevelInfo) and per
	// problem (LevelWarn for configuration refused, LevelError for an
	// operation that failed); nil discards. A problem is logged when it
	// appears, not again on every pass.
	Logf func(level slog.Level, format string, args ...any)

	seen, seenNext map[string]bool // problems logged on the last pass, this pass
}

// NewReconciler returns a reconciler of sw, which it assumes has no
// bridge yet.
func NewReconciler(sw Switch) *Reconciler {
	return &Reconciler{sw: sw, running: map[string]*applied{}}
}

func (r *Reconciler) logf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(slog.LevelInfo, format, args...)
	}
}

func (r *Reconciler) errorf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(slog.LevelError, format, args...)
	}
}

// problemf logs a problem at level (slog.LevelWarn for configuration
// refused, LevelError for a bridge or port that failed to come up),
// unless the previous pass or this one logged it already.
func (r *Reconciler) problemf(level slog.Level, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if r.seenNext == nil {
		r.seenNext = map[string]bool{}
	}
	again := r.seenNext[msg] // said already this pass (a bond's members share their bond's error)
	r.seenNext[msg] = true
	if !r.seen[msg] && !again && r.Logf != nil {
		r.Logf(level, "%s", msg)
	}
}

// Apply makes the switch match d and returns the status of every
// interface of d, keyed by Interface UUID, and the datapath id of every
// running bridge, keyed by Bridge UUID. Failures are reported in the
// statuses (and logged), never returned: the rest of the configuration
// still applies.
func (r *Reconciler) Apply(d *Desired) (ifaces map[string]ifaceStatus, dpids map[string]uint64) {
	defer func() { r.seen, r.seenNext = r.seenNext, nil }()
	for _, p := range d.Problems {
		r.problemf(slog.LevelWarn, "%s", p)
	}
	want := map[string]*BridgeConfig{}
	for i := range d.Bridges {
		want[d.Bridges[i].Name] = &d.Bridges[i]
	}
	// Bridges that went away.
	names := make([]string, 0, len(r.running))
	for n := range r.running {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if want[n] == nil {
			if err := r.sw.DeleteBridge(n); err != nil {
				r.errorf("bridge %s: delete: %v", n, err)
			} else {
				r.logf("bridge %s: deleted", n)
			}
			delete(r.running, n)
		}
	}
	if d.Global != r.global {
		r.sw.SetGlobal(d.Global)
		r.global = d.Global
	}
	if !r.ctZonesSet || !equalCTZones(d.CTZoneTimeouts, r.ctZones) {
		if err := r.sw.SetCTZoneTimeouts(d.CTZoneTimeouts); err != nil {
			r.problemf(slog.LevelWarn, "conntrack timeout policies: %v", err)
		}
		r.ctZones, r.ctZonesSet = d.CTZoneTimeouts, true
	}
	ifaces = map[string]ifaceStatus{}
	dpids = map[string]uint64{}
	defer r.applyPolicing(d)
	defer r.applyQoS(d)
	for i := range d.Bridges {
		bc := &d.Bridges[i]
		berr := r.applyBridge(bc)
		if berr != nil {
			r.problemf(slog.LevelError, "bridge %s: %v", bc.Name, berr)
			for _, pc := range bc.Ports {
				msg := pc.Err
				if msg == "" {
					msg = fmt.Sprintf("bridge %s is not running: %v", bc.Name, berr)
				}
				ifaces[pc.IfaceUUID] = ifaceStatus{ofport: -1, err: msg}
			}
			continue
		}
		for k, v := range r.applyPorts(bc) {
			ifaces[k] = v
		}
		r.applyBridgeRuntime(bc)
		if id, err := r.sw.DatapathID(bc.Name); err == nil {
			dpids[bc.UUID] = id
		}
		if a := r.running[bc.Name]; a != nil {
			r.applySFlow(a, bc)
			r.applyNetFlow(a, bc)
			r.applyIPFIX(a, bc)
		}
	}
	return ifaces, dpids
}

// applyBridgeRuntime picks the bridge's address and datapath id from its
// configuration and its ports as they now are, and applies them with the
// other settings a running bridge takes.
func (r *Reconciler) applyBridgeRuntime(bc *BridgeConfig) {
	ports, err := r.sw.Ports(bc.Name)
	if err != nil {
		return
	}
	rt := bc.Runtime
	rt.MAC, rt.DatapathID = pickBridgeAddress(bc, ports)
	if err := r.sw.SetBridgeRuntime(bc.Name, rt); err != nil {
		r.problemf(slog.LevelError, "bridge %s: failed to set bridge Ethernet address: %v", bc.Name, err)
	}
}

// lastApplied is one kind of per-interface setting as last applied
// without error; ok is false until then, and after a failure, so that a
// device that appears later is tried again.
type lastApplied[C any] struct {
	m  map[string]C
	ok bool
}

// applyPerInterface hands want to set when it differs from what last
// applied cleanly, and warns of each interface set could not configure.
func applyPerInterface[C any](r *Reconciler, last *lastApplied[C], want map[string]C, equal func(a, b C) bool,
	what string, set func(map[string]C) map[string]error) {
	if last.ok && maps.EqualFunc(want, last.m, equal) {
		return
	}
	errs := set(want)
	for _, name := range slices.Sorted(maps.Keys(errs)) {
		r.problemf(slog.LevelWarn, "interface %s: %s: %v", name, what, errs[name])
	}
	last.m, last.ok = want, len(errs) == 0
}

// applyQoS applies the interfaces' QoS when it changed (or failed last
// time: a device may appear later), after the ports are in.
func (r *Reconciler) applyQoS(d *Desired) {
	applyPerInterface(r, &r.qos, d.QoS, QoSConfig.Equal, "QoS", r.sw.SetQoS)
}

// applyPolicing is applyQoS for ingress policing.
func (r *Reconciler) applyPolicing(d *Desired) {
	applyPerInterface(r, &r.policing, d.Policing, func(a, b Policing) bool { return a == b }, "ingress policing",
		r.sw.SetPolicing)
}

// applyBridge creates the bridge or applies changed settings.
func (r *Reconciler) applyBridge(bc *BridgeConfig) error {
	a := r.running[bc.Name]
	if a == nil {
		if err := r.sw.AddBridge(bc, r.global); err != nil {
			return err
		}
		r.running[bc.Name] = &applied{cfg: settingsOnly(bc)}
		r.logf("bridge %s: added", bc.Name)
		return nil
	}
	if settingsEqual(&a.cfg, bc) {
		return nil
	}
	// The rebuilt bridge runs no sFlow or NetFlow yet.
	a.sflow, a.sflowOK, a.netflow, a.netflowOK = nil, false, nil, false
	a.ipfix, a.ipfixOK = nil, false
	if err := r.sw.ReconfigureBridge(bc, r.global); err != nil {
		// The old settings may be half gone: try again next time.
		a.cfg = BridgeConfig{}
		return fmt.Errorf("reconfigure: %w", err)
	}
	a.cfg = settingsOnly(bc)
	r.logf("bridge %s: reconfigured (fail_mode %s, %d controllers)", bc.Name, bc.FailMode, len(bc.Controllers))
	return nil
}

func settingsOnly(bc *BridgeConfig) BridgeConfig {
	c := *bc
	c.Ports = nil
	c.SFlow, c.NetFlow, c.IPFIX = nil, nil, nil // applied apart (applySFlow, applyNetFlow, applyIPFIX)
	c.Protocols = append([]uint8(nil), bc.Protocols...)
	c.Controllers = append([]ControllerConfig(nil), bc.Controllers...)
	return c
}

// applyPorts adds and removes the bridge's ports and reports each
// interface's status.
func (r *Reconciler) applyPorts(bc *BridgeConfig) map[string]ifaceStatus {
	out := map[string]ifaceStatus{}
	have, err := r.sw.Ports(bc.Name)
	if err != nil {
		for _, pc := range bc.Ports {
			out[pc.IfaceUUID] = ifaceStatus{ofport: -1, err: fmt.Sprintf("bridge %s: %v", bc.Name, err)}
		}
		return out
	}
	byName := map[string]PortState{}
	for _, ps := range have {
		byName[ps.Name] = ps
	}
	wanted := map[string]*PortConfig{}
	for i := range bc.Ports {
		pc := &bc.Ports[i]
		if pc.Err == "" {
			wanted[pc.Name] = pc
		}
	}
	// Remove what is not wanted, or wanted differently (type, ofport).
	for _, ps := range have {
		if ps.Name == bc.Name {
			continue // the bridge's own port lives as long as the bridge
		}
		pc := wanted[ps.Name]
		if pc != nil && pc.Type == ps.Type && pc.Peer == ps.Peer && pc.Tunnel == ps.Tunnel && (pc.OFPortRequest == 0 || pc.OFPortRequest == ps.OFPort) {
			continue
		}
		if err := r.sw.DeletePort(bc.Name, ps.Name); err != nil {
			r.errorf("bridge %s: port %s: delete: %v", bc.Name, ps.Name, err)
			continue
		}
		delete(byName, ps.Name)
		r.logf("bridge %s: port %s: deleted", bc.Name, ps.Name)
	}
	// Add what is missing.
	added := false
	for i := range bc.Ports {
		pc := &bc.Ports[i]
		if pc.Err != "" {
			r.problemf(slog.LevelWarn, "bridge %s: %s", bc.Name, pc.Err)
			out[pc.IfaceUUID] = ifaceStatus{ofport: -1, err: pc.Err}
			continue
		}
		if _, ok := byName[pc.Name]; ok || pc.Local {
			continue
		}
		if err := r.sw.AddPort(bc.Name, pc); err != nil {
			msg := addError(pc.Name, err)
			r.problemf(slog.LevelWarn, "%s", msg) // as bridge.c's iface_do_create words and levels it
			out[pc.IfaceUUID] = ifaceStatus{ofport: -1, err: msg}
			continue
		}
		added = true
		if pc.VLAN.Mode != "" || pc.VLAN.HasTag || len(pc.VLAN.Trunks) > 0 {
			r.logf("bridge %s: port %s: added (VLAN %s)", bc.Name, pc.Name, pc.VLAN)
		} else {
			r.logf("bridge %s: port %s: added", bc.Name, pc.Name)
		}
	}
	if added {
		if have, err = r.sw.Ports(bc.Name); err != nil {
			have = nil
		}
		byName = map[string]PortState{}
		for _, ps := range have {
			byName[ps.Name] = ps
		}
	}
	// VLAN settings of every running port, the ones just added included
	// (AddPort leaves a port a trunk of all VLANs until here).
	for i := range bc.Ports {
		pc := &bc.Ports[i]
		if pc.Err != "" {
			continue
		}
		if _, ok := byName[pc.Name]; !ok {
			continue
		}
		changed, err := r.sw.SetPortVLAN(bc.Name, pc)
		if err != nil {
			msg := fmt.Sprintf("port %s: VLAN settings: %v", pc.Name, err)
			r.problemf(slog.LevelError, "bridge %s: %s", bc.Name, msg)
			out[pc.IfaceUUID] = ifaceStatus{ofport: -1, err: msg}
			continue
		}
		if changed {
			r.logf("bridge %s: port %s: VLAN %s", bc.Name, pc.Name, pc.VLAN)
		}
	}
	r.applyBonds(bc, out) // bond.go
	r.applyMirrors(bc)    // mirror.go
	r.applySTP(bc)        // stp.go
	r.applyRSTP(bc)       // rstp.go
	for i := range bc.Ports {
		pc := &bc.Ports[i]
		if _, done := out[pc.IfaceUUID]; done {
			continue
		}
		ps, ok := byName[pc.Name]
		if !ok {
			out[pc.IfaceUUID] = ifaceStatus{ofport: -1, err: fmt.Sprintf("could not open network device %s (the bridge has no such port)", pc.Name)}
			continue
		}
		st := ifaceStatus{ofport: int(ps.OFPort), known: ps.Known, lacp: ps.LACPCurrent}
		if ps.Known {
			st.ifindex = ps.IfIndex
			if len(ps.MAC) == 6 {
				st.mac = ps.MAC.String()
			}
			st.admin, st.link = upDown(ps.AdminUp), upDown(ps.LinkUp)
		}
		out[pc.IfaceUUID] = st
	}
	return out
}

func upDown(b bool) string {
	if b {
		return "up"
	}
	return "down"
}

// addError words a failure to add a port as ovs-vswitchd does ("could not
// open network device eth9 (No such device)"), so that ovs-vsctl's "Error
// detected while setting up" line reads the same.
func addError(name string, err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		msg := en.Error()
		if msg != "" && msg[0] >= 'a' && msg[0] <= 'z' {
			msg = string(msg[0]-'a'+'A') + msg[1:]
		}
		return fmt.Sprintf("could not open network device %s (%s)", name, msg)
	}
	return fmt.Sprintf("could not add network device %s to ofproto (%v)", name, err)
}
