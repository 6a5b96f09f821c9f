package vswitchd

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ovsdb"
)

// LACP bonds from the database and lacp/show, lacp/show-stats with
// ovs-vswitchd 3.1's text (lib/lacp.c).

// lacpBondConfig carries a database bond's LACP and delay settings into c.
func lacpBondConfig(c *ofproto.BondConfig, bc *ovsdb.BondConfig, log *slog.Logger) {
	c.Updelay = time.Duration(bc.Updelay) * time.Millisecond
	c.Downdelay = time.Duration(bc.Downdelay) * time.Millisecond
	c.LACPLog = log
	c.RebalanceInterval = time.Duration(bc.RebalanceInterval) * time.Millisecond
	c.MiimonInterval = time.Duration(bc.MiimonInterval) * time.Millisecond
	if bc.LACP == nil {
		return
	}
	l := bc.LACP
	c.LACP = &ofproto.LACPConfig{Active: l.Active, Fast: l.Fast, SysID: l.SysID, SysPriority: l.SysPriority, FallbackAB: l.FallbackAB}
	c.LACPMembers = map[string]ofproto.LACPMemberConfig{}
	for name, m := range l.Members {
		c.LACPMembers[name] = ofproto.LACPMemberConfig{PortID: m.PortID, PortPriority: m.PortPriority, Key: m.Key}
	}
}

// lacpSummary is a bond's LACP and delay settings as one string.
func lacpSummary(c *ofproto.BondConfig) string {
	s := fmt.Sprintf("%v %v %v %v", c.Updelay, c.Downdelay, c.RebalanceInterval, c.MiimonInterval)
	if c.LACP != nil {
		s += fmt.Sprintf(" %+v %v", *c.LACP, c.LACPMembers)
	}
	return s
}

func (d *Daemon) registerLACPCommands() {
	d.ctl.Register("lacp/show", "[port]", 0, 1, d.lacpShow)
	d.ctl.Register("lacp/show-stats", "[port]", 0, 1, d.lacpShowStats)
}

// allLACPs is every bond's LACP state, by bond name.
func (d *Daemon) allLACPs() []ofproto.LACPShow {
	var out []ofproto.LACPShow
	for _, b := range d.Bridges() {
		out = append(out, b.LACPs()...)
	}
	return out
}

func (d *Daemon) lacpSelect(args []string) ([]ofproto.LACPShow, error) {
	all := d.allLACPs()
	if len(args) == 0 {
		return all, nil
	}
	for _, l := range all {
		if l.Name == args[0] {
			return []ofproto.LACPShow{l}, nil
		}
	}
	return nil, fmt.Errorf("no such lacp object")
}

func (d *Daemon) lacpShow(args []string) (string, error) {
	ls, err := d.lacpSelect(args)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for i := range ls {
		writeLACPShow(&sb, &ls[i])
	}
	return sb.String(), nil
}

func (d *Daemon) lacpShowStats(args []string) (string, error) {
	ls, err := d.lacpSelect(args)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for i := range ls {
		writeLACPStats(&sb, &ls[i])
	}
	return sb.String(), nil
}

func macText(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// lacpStateText is ds_put_lacp_state: the state bits' names, each after
// a space.
func lacpStateText(st uint8) string {
	names := []string{"activity", "timeout", "aggregation", "synchronized", "collecting", "distributing", "defaulted", "expired"}
	var sb strings.Builder
	for i, n := range names {
		if st&(1<<i) != 0 {
			sb.WriteString(" " + n)
		}
	}
	return sb.String()
}

// writeLACPShow writes one bond as lacp_print_details does.
func writeLACPShow(sb *strings.Builder, l *ofproto.LACPShow) {
	fmt.Fprintf(sb, "---- %s ----\n", l.Name)
	status := "passive"
	if l.Active {
		status = "active"
	}
	if l.Negotiated {
		status += " negotiated"
	}
	fmt.Fprintf(sb, "  status: %s\n", status)
	fmt.Fprintf(sb, "  sys_id: %s\n", macText(l.SysID))
	fmt.Fprintf(sb, "  sys_priority: %d\n", l.SysPriority)
	if l.HasKey {
		fmt.Fprintf(sb, "  aggregation key: %d\n", l.Key)
	} else {
		sb.WriteString("  aggregation key: none\n")
	}
	if l.Fast {
		sb.WriteString("  lacp_time: fast\n")
	} else {
		sb.WriteString("  lacp_time: slow\n")
	}
	for _, m := range l.Members {
		att := "detached"
		if m.Attached {
			att = "attached"
		}
		fmt.Fprintf(sb, "\nmember: %s: %s %s\n", m.Name, m.Status, att)
		fmt.Fprintf(sb, "  port_id: %d\n", m.PortID)
		fmt.Fprintf(sb, "  port_priority: %d\n", m.PortPriority)
		fmt.Fprintf(sb, "  may_enable: %t\n", m.MayEnable)
		a, p := &m.Actor, &m.Partner
		fmt.Fprintf(sb, "\n  actor sys_id: %s\n", macText(a.SysID))
		fmt.Fprintf(sb, "  actor sys_priority: %d\n", a.SysPriority)
		fmt.Fprintf(sb, "  actor port_id: %d\n", a.PortID)
		fmt.Fprintf(sb, "  actor port_priority: %d\n", a.PortPriority)
		fmt.Fprintf(sb, "  actor key: %d\n", a.Key)
		fmt.Fprintf(sb, "  actor state:%s\n\n", lacpStateText(a.State))
		fmt.Fprintf(sb, "  partner sys_id: %s\n", macText(p.SysID))
		fmt.Fprintf(sb, "  partner sys_priority: %d\n", p.SysPriority)
		fmt.Fprintf(sb, "  partner port_id: %d\n", p.PortID)
		fmt.Fprintf(sb, "  partner port_priority: %d\n", p.PortPriority)
		fmt.Fprintf(sb, "  partner key: %d\n", p.Key)
		fmt.Fprintf(sb, "  partner state:%s\n", lacpStateText(p.State))
	}
}

// writeLACPStats writes one bond as lacp_print_stats does.
func writeLACPStats(sb *strings.Builder, l *ofproto.LACPShow) {
	fmt.Fprintf(sb, "---- %s statistics ----\n", l.Name)
	for _, m := range l.Members {
		fmt.Fprintf(sb, "\nmember: %s:\n", m.Name)
		fmt.Fprintf(sb, "  TX PDUs: %d\n", m.TxPDUs)
		fmt.Fprintf(sb, "  RX PDUs: %d\n", m.RxPDUs)
		fmt.Fprintf(sb, "  RX Bad PDUs: %d\n", m.RxBad)
		fmt.Fprintf(sb, "  RX Marker Request PDUs: %d\n", m.RxMarker)
		fmt.Fprintf(sb, "  Link Expired: %d\n", m.LinkExpired)
		fmt.Fprintf(sb, "  Link Defaulted: %d\n", m.LinkDefaulted)
		fmt.Fprintf(sb, "  Carrier Status Changed: %d\n", m.CarrierChanged)
	}
}
