package vswitchd

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ovsdb"
)

// Bonds from the database (ovsdb.BondSwitch) and the bond/* commands of
// ovs-appctl, with ovs-vswitchd 3.1's output (bond.c).

// SetBonds gives each bridge its bonds; a change re-translates every
// datapath flow now.
func (s *ovsdbSwitch) SetBonds(bridge string, bonds []ovsdb.BondConfig) map[string]error {
	b := s.d.Bridge(bridge)
	if b == nil {
		errs := map[string]error{}
		for _, bc := range bonds {
			errs[bc.Name] = fmt.Errorf("bridge %s: not running", bridge)
		}
		return errs
	}
	errs := map[string]error{}
	cfgs := make([]ofproto.BondConfig, 0, len(bonds))
	for _, bc := range bonds {
		mode, err := ofproto.ParseBondMode(bc.Mode)
		if err != nil {
			errs[bc.Name] = err
			continue
		}
		c := ofproto.BondConfig{Name: bc.Name, Mode: mode, Members: bc.Members, Primary: bc.Primary, HashBasis: bc.HashBasis,
			AllMembersActive: bc.AllMembersActive, Single: bc.Single}
		if !bc.Single {
			c.Log = s.d.moduleLogger("bond") // a bundle of one is no bond and says nothing as one
		}
		lacpBondConfig(&c, &bc, s.d.moduleLogger("lacp")) // appctl_lacp.go
		cfgs = append(cfgs, c)
	}
	before := bondSummary(b)
	for k, v := range b.SetBonds(cfgs) {
		errs[k] = v
	}
	if bondSummary(b) != before {
		s.invalidate(b)
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// bondSummary is a bridge's bond configuration as one string, to tell a
// change.
func bondSummary(b *ofproto.Bridge) string {
	var sb strings.Builder
	for _, bs := range b.Bonds() {
		c := bs.Config
		fmt.Fprintf(&sb, "%s %s %v %s %d %t %s;", c.Name, c.Mode, c.Members, c.Primary, c.HashBasis, c.AllMembersActive, lacpSummary(&c))
	}
	return sb.String()
}

func (d *Daemon) registerBondCommands() {
	s := d.ctl
	s.Register("bond/list", "", 0, 0, d.bondList)
	s.Register("bond/show", "[port]", 0, 1, d.bondShow)
	s.Register("bond/set-active-member", "port member", 2, 2, d.bondSetActive)
	s.Register("bond/set-active-slave", "", 2, 2, d.bondSetActive)
	s.Register("bond/hash", "mac [vlan] [basis]", 1, 3, bondHash)
	d.registerLACPCommands() // appctl_lacp.go
}

// bondHash is bond/hash: the SLB bucket (0-255) of a MAC, VLAN and basis.
func bondHash(args []string) (string, error) {
	var vlan, basis uint64
	var err error
	if len(args) > 1 {
		if vlan, err = strconv.ParseUint(args[1], 10, 32); err != nil {
			return "", fmt.Errorf("invalid vlan")
		}
	}
	if len(args) > 2 {
		if basis, err = strconv.ParseUint(args[2], 10, 32); err != nil {
			return "", fmt.Errorf("invalid basis")
		}
	}
	hw, err := net.ParseMAC(args[0])
	if err != nil || len(hw) != 6 {
		return "", fmt.Errorf("invalid mac")
	}
	var mac [6]byte
	copy(mac[:], hw)
	return strconv.Itoa(int(ofproto.BondHash(mac, uint16(vlan), uint32(basis)))), nil
}

// allBonds is every bridge's bonds, with their bridge, by name.
func (d *Daemon) allBonds() ([]ofproto.BondStatus, []*ofproto.Bridge) {
	var st []ofproto.BondStatus
	var brs []*ofproto.Bridge
	for _, b := range d.Bridges() {
		for _, bs := range b.Bonds() {
			st = append(st, bs)
			brs = append(brs, b)
		}
	}
	idx := make([]int, len(st))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool { return st[idx[i]].Config.Name < st[idx[j]].Config.Name })
	sorted, ob := make([]ofproto.BondStatus, len(st)), make([]*ofproto.Bridge, len(st))
	for i, k := range idx {
		sorted[i], ob[i] = st[k], brs[k]
	}
	return sorted, ob
}

func (d *Daemon) bondList([]string) (string, error) {
	var sb strings.Builder
	sb.WriteString("bond\ttype\trecircID\tmembers\n")
	bonds, _ := d.allBonds()
	for _, bs := range bonds {
		names := make([]string, len(bs.Members))
		for i, m := range bs.Members {
			names[i] = m.Name
		}
		// recircID is 0 unless the bond hashes in the kernel now
		// (balance-tcp, negotiated); OVS shows an id it keeps for
		// balance-slb too, and never uses.
		fmt.Fprintf(&sb, "%s\t%s\t%d\t%s\n", bs.Config.Name, bs.Config.Mode, bs.RecircID, strings.Join(names, ", "))
	}
	return sb.String(), nil
}

func (d *Daemon) bondShow(args []string) (string, error) {
	bonds, _ := d.allBonds()
	var sb strings.Builder
	found := false
	for i := range bonds {
		if len(args) == 1 && bonds[i].Config.Name != args[0] {
			continue
		}
		found = true
		writeBondShow(&sb, &bonds[i])
	}
	if len(args) == 1 && !found {
		return "", fmt.Errorf("no such bond")
	}
	return sb.String(), nil
}

// writeBondShow writes one bond as bond_print_details does.
func writeBondShow(sb *strings.Builder, bs *ofproto.BondStatus) {
	c := &bs.Config
	fmt.Fprintf(sb, "---- %s ----\n", c.Name)
	fmt.Fprintf(sb, "bond_mode: %s\n", c.Mode)
	if bs.RecircID != 0 {
		fmt.Fprintf(sb, "bond may use recirculation: yes, Recirc-ID : %d\n", bs.RecircID)
	} else {
		sb.WriteString("bond may use recirculation: no, Recirc-ID : -1\n")
	}
	fmt.Fprintf(sb, "bond-hash-basis: %d\n", c.HashBasis)
	sb.WriteString("lb_output action: disabled, bond-id: -1\n")
	if c.Mode == ofproto.BondBalanceSLB {
		fmt.Fprintf(sb, "all members active: %t\n", c.AllMembersActive)
	}
	fmt.Fprintf(sb, "updelay: %d ms\n", c.Updelay.Milliseconds())
	fmt.Fprintf(sb, "downdelay: %d ms\n", c.Downdelay.Milliseconds())
	if bs.Balanced {
		fmt.Fprintf(sb, "next rebalance: %d ms\n", bs.NextRebalance.Milliseconds())
	}
	fmt.Fprintf(sb, "lacp_status: %s\n", bs.LACP)
	fmt.Fprintf(sb, "lacp_fallback_ab: %t\n", c.LACP != nil && c.LACP.FallbackAB)
	primary := "<none>"
	if c.Primary != "" {
		primary = c.Primary
		found := false
		for _, m := range bs.Members {
			found = found || m.Name == c.Primary
		}
		if !found {
			primary += " (no such member)"
		}
	}
	fmt.Fprintf(sb, "active-backup primary: %s\n", primary)
	m := bs.ActiveMAC
	active := bs.Active
	if active == "" {
		active = "none"
	}
	fmt.Fprintf(sb, "active member mac: %02x:%02x:%02x:%02x:%02x:%02x(%s)\n", m[0], m[1], m[2], m[3], m[4], m[5], active)
	for _, mb := range bs.Members {
		state := "disabled"
		if mb.Enabled {
			state = "enabled"
		}
		fmt.Fprintf(sb, "\nmember %s: %s\n", mb.Name, state)
		if mb.Name == bs.Active {
			sb.WriteString("  active member\n")
		}
		if mb.DelayLeft > 0 {
			which := "updelay"
			if mb.Enabled {
				which = "downdelay"
			}
			fmt.Fprintf(sb, "  %s expires in %d ms\n", which, mb.DelayLeft.Milliseconds())
		}
		fmt.Fprintf(sb, "  may_enable: %t\n", mb.MayEnable)
		for _, h := range mb.Hashes {
			fmt.Fprintf(sb, "  hash %d: %d kB load\n", h.Hash, h.KB)
		}
	}
	sb.WriteString("\n")
}

func (d *Daemon) bondSetActive(args []string) (string, error) {
	bonds, brs := d.allBonds()
	for i := range bonds {
		if bonds[i].Config.Name != args[0] {
			continue
		}
		b := brs[i]
		changed, err := b.SetActiveMember(args[0], args[1])
		if err != nil {
			return "", err
		}
		if !changed {
			return "no change", nil
		}
		b.Udpif.Revalidate()
		return "done", nil
	}
	return "", fmt.Errorf("no such bond")
}

// SetMirrors gives the bridge its mirrors; a change re-translates every
// datapath flow now.
func (s *ovsdbSwitch) SetMirrors(bridge string, mirrors []ovsdb.MirrorConfig) error {
	b := s.d.Bridge(bridge)
	if b == nil {
		return fmt.Errorf("bridge %s: not running", bridge)
	}
	cfgs := make([]ofproto.MirrorConfig, 0, len(mirrors))
	for _, m := range mirrors {
		c := ofproto.MirrorConfig{Name: m.Name, SelectAll: m.SelectAll, SrcPorts: m.SrcPorts, DstPorts: m.DstPorts,
			OutputPort: m.OutputPort, OutputVLAN: uint16(m.OutputVLAN), Snaplen: m.Snaplen}
		for _, v := range m.VLANs {
			c.VLANs = append(c.VLANs, uint16(v))
		}
		cfgs = append(cfgs, c)
	}
	if mirrorsEqual(b.Mirrors(), cfgs) {
		return nil
	}
	if err := b.SetMirrors(cfgs); err != nil {
		return err
	}
	for i := range cfgs {
		s.d.log.Info("bridge " + bridge + ": mirror " + cfgs[i].String())
	}
	s.invalidate(b)
	return nil
}

// MirrorStats is the Mirror statistics of the bridge's mirrors that run
// (ovsdb.MirrorStatsSwitch).
func (s *ovsdbSwitch) MirrorStats(bridge string) map[string][2]uint64 {
	b := s.d.Bridge(bridge)
	if b == nil {
		return nil
	}
	out := map[string][2]uint64{}
	for name, st := range b.MirrorStats() {
		out[name] = [2]uint64{st.Packets, st.Bytes}
	}
	return out
}

func mirrorsEqual(a, b []ofproto.MirrorConfig) bool {
	return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b)
}
