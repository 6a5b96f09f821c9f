package ovsdb

import (
	"fmt"
	"log/slog"
	"sort"
	"strconv"
)

// BondConfig is a Port with several Interfaces: a bond, checked by Build.
// Its members are PortConfigs of the bridge like any other (each an
// OpenFlow port), with Bond set to the bond's name.
type BondConfig struct {
	PortUUID string
	Name     string
	// Mode is bond_mode: "active-backup" (the default) or "balance-slb".
	Mode    string
	Members []string // interface names, sorted
	// Primary is other_config:bond-primary; HashBasis is
	// other_config:bond-hash-basis.
	Primary   string
	HashBasis uint32
	// AllMembersActive is other_config:all-members-active.
	AllMembersActive bool
	// LACP is the bond's LACP, nil for lacp=off (bond_lacp.go).
	LACP *LACPConfig
	// Updelay and Downdelay are bond_updelay and bond_downdelay in ms.
	Updelay, Downdelay int
	// RebalanceInterval is other_config:bond-rebalance-interval in ms
	// (default 10000, at least 1000; 0 never rebalances).
	RebalanceInterval int
	// MiimonInterval is, for bond-detect-mode=miimon, how often the
	// members' link status is polled, in ms: other_config:
	// bond-miimon-interval (default 200, at least 100, as ovs-vswitchd's
	// bridge.c and netdev-linux.c have it). 0 is carrier detection.
	MiimonInterval int
	// Single is a Port of one Interface with LACP: a bundle of one that
	// runs LACP and no bond (Members is that interface), as ovs-
	// vswitchd's bundle with LACP and no bond; its PortConfig has no
	// Bond. Only Name, Members and LACP count.
	Single bool
}

// parseBond checks a bond Port's columns. errMsg, when set, refuses the
// bond (it goes to every member's Interface.error); warn is said once and
// the bond still runs.
func parseBond(p *Port, members []string) (b BondConfig, errMsg, warn string) {
	b = BondConfig{PortUUID: p.UUID, Name: p.Name, Mode: "active-backup"}
	b.Members = append([]string(nil), members...)
	sort.Strings(b.Members)
	if p.BondMode != nil && *p.BondMode != "" {
		b.Mode = *p.BondMode
	}
	switch b.Mode {
	case "active-backup", "balance-slb", "balance-tcp":
	default:
		return b, fmt.Sprintf("port %s: unknown bond_mode %q", p.Name, b.Mode), ""
	}
	b.Updelay, b.Downdelay = max(0, p.BondUpdelay), max(0, p.BondDowndelay)
	oc := p.OtherConfig
	switch m := oc["bond-detect-mode"]; m {
	case "", "carrier":
	case "miimon":
		// Each member's MII (or ethtool) link status is polled every
		// bond-miimon-interval ms instead of following carrier. As
		// smap_get_int: not a number, or not positive, is the default.
		b.MiimonInterval = 200
		if n, err := strconv.Atoi(oc["bond-miimon-interval"]); err == nil && n > 0 {
			b.MiimonInterval = max(n, 100)
		}
	default:
		return b, fmt.Sprintf("port %s: other_config:bond-detect-mode=%q: want carrier or miimon", p.Name, m), ""
	}
	if v, ok := oc["bond-hash-basis"]; ok {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return b, fmt.Sprintf("port %s: other_config:bond-hash-basis=%q: want a number", p.Name, v), ""
		}
		b.HashBasis = uint32(n)
	}
	switch v := oc["all-members-active"]; v {
	case "", "false":
	case "true":
		b.AllMembersActive = true
	default:
		return b, fmt.Sprintf("port %s: other_config:all-members-active=%q: want true or false", p.Name, v), ""
	}
	if v, ok := oc["bond-primary"]; ok {
		b.Primary = v
	}
	lacp, msg := parseLACP(p)
	if msg != "" {
		return b, msg, ""
	}
	b.LACP = lacp
	if b.Mode == "balance-tcp" && lacp == nil {
		warn = fmt.Sprintf("port %s: balance-tcp without LACP carries no traffic (as in ovs-vswitchd): set lacp=active or lacp=passive", p.Name)
	}
	// As smap_get_int: not a number is the default.
	b.RebalanceInterval = 10000
	if v, ok := oc["bond-rebalance-interval"]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			b.RebalanceInterval = n
		}
	}
	if b.RebalanceInterval > 0 && b.RebalanceInterval < 1000 {
		b.RebalanceInterval = 1000
	}
	if b.RebalanceInterval < 0 {
		b.RebalanceInterval = 0
	}
	if b.Mode == "balance-slb" && lacp == nil {
		warn = fmt.Sprintf("port %s: balance-slb without learning packets: when a member fails, govswitchd does not send the RARPs ovs-vswitchd sends so that the upstream switch learns the moved addresses", p.Name)
	}
	return b, "", warn
}

// bondOf returns the bond a Port of several Interfaces asks for, or for a
// Port of one the bundle of one its LACP asks for (nil without LACP), or
// the error that refuses it. The warning of a bond
// that runs goes to problems.
func bondOf(p *Port, ifaces map[string]*Interface, problems *[]string) (*BondConfig, string) {
	if len(p.Interfaces) < 2 {
		return lacpOnePort(p, ifaces) // bond_lacp.go
	}
	var names []string
	for _, iu := range p.Interfaces {
		if in := ifaces[iu]; in != nil {
			names = append(names, in.Name)
		}
	}
	b, errMsg, warn := parseBond(p, names)
	if errMsg == "" && b.LACP != nil {
		b.LACP.Members, errMsg = lacpMembers(p, ifaces)
	}
	if warn != "" {
		*problems = append(*problems, warn)
	}
	return &b, errMsg
}

// BondSwitch is a Switch that runs bonds. The reconciler gives it every
// bridge's bonds after the bridge's ports; a Switch without it has every
// bond member refused.
type BondSwitch interface {
	// SetBonds makes bonds the bridge's bonds (each member a running
	// port of the bridge) and reports, by bond name, those it could not
	// set up.
	SetBonds(bridge string, bonds []BondConfig) map[string]error
}

// applyBonds hands the bridge's bonds to the switch and marks the members
// of a bond it refused.
func (r *Reconciler) applyBonds(bc *BridgeConfig, out map[string]ifaceStatus) {
	bs, ok := r.sw.(BondSwitch)
	if !ok {
		for _, pc := range bc.Ports {
			if pc.Bond != "" {
				msg := fmt.Sprintf("port %s: bonds are not supported by this switch", pc.Bond)
				r.problemf(slog.LevelWarn, "bridge %s: %s", bc.Name, msg)
				out[pc.IfaceUUID] = ifaceStatus{ofport: -1, err: msg}
			}
		}
		for _, b := range bc.Bonds {
			if !b.Single {
				continue
			}
			msg := fmt.Sprintf("port %s: LACP is not supported by this switch", b.Name)
			r.problemf(slog.LevelWarn, "bridge %s: %s", bc.Name, msg)
			for _, pc := range bc.Ports {
				if pc.Name == b.Name {
					out[pc.IfaceUUID] = ifaceStatus{ofport: -1, err: msg}
				}
			}
		}
		return
	}
	errs := bs.SetBonds(bc.Name, bc.Bonds)
	single := map[string]bool{}
	for _, b := range bc.Bonds {
		if b.Single {
			single[b.Name] = true
		}
	}
	for _, pc := range bc.Ports {
		name := pc.Bond
		if name == "" && single[pc.Name] {
			name = pc.Name
		}
		if err := errs[name]; name != "" && err != nil {
			msg := fmt.Sprintf("bond %s: %v", name, err)
			r.problemf(slog.LevelError, "bridge %s: %s", bc.Name, msg)
			if _, done := out[pc.IfaceUUID]; !done {
				out[pc.IfaceUUID] = ifaceStatus{ofport: -1, err: msg}
			}
		}
	}
}
