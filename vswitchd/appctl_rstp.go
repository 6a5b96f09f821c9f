package vswitchd

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ofproto/rstp"
	"github.com/govswitch/govswitch/ovsdb"
)

// Rapid spanning tree from the database (ovsdb.RSTPSwitch) and the
// rstp/* commands of ovs-appctl, with ovs-vswitchd 3.1's output
// (lib/rstp.c, vswitchd/bridge.c).

// rstpApplied is the tree a bridge was given, and the bridge.
type rstpApplied struct {
	b   *ofproto.Bridge
	cfg ofproto.RSTPConfig
}

// SetRSTP gives the bridge its rapid spanning tree, or stops it (nil),
// when that differs from what it runs.
func (s *ovsdbSwitch) SetRSTP(bridge string, cfg *ovsdb.RSTPConfig) error {
	b := s.d.Bridge(bridge)
	if b == nil {
		return errors.New("bridge not running")
	}
	if s.rstp == nil {
		s.rstp = map[string]rstpApplied{}
	}
	if cfg == nil {
		if _, ok := s.rstp[bridge]; !ok {
			return nil
		}
		delete(s.rstp, bridge)
		return b.SetRSTP(nil, nil)
	}
	// Without rstp-address the bridge identifier is the bridge's
	// address, as ovs-vswitchd's br->ea: its own device's.
	c := ofproto.RSTPConfig{Address: cfg.Address, Priority: cfg.Priority, MaxAge: cfg.MaxAge, ForwardDelay: cfg.ForwardDelay}
	if c.Address == 0 {
		if ifi, err := net.InterfaceByName(bridge); err == nil && len(ifi.HardwareAddr) == 6 {
			for _, x := range ifi.HardwareAddr {
				c.Address = c.Address<<8 | uint64(x)
			}
		}
	}
	for _, p := range cfg.Ports {
		cost := p.PathCost
		if !p.HasPathCost {
			cost = rstp.PathCostForSpeed(linkSpeed(p.Name))
		}
		c.Ports = append(c.Ports, ofproto.RSTPPortConfig{Name: p.Name, Num: p.Num, Priority: p.Priority, PathCost: cost,
			AdminEdge: p.AdminEdge, AutoEdge: p.AutoEdge, AdminDown: p.AdminDown, MCheck: p.MCheck})
	}
	if a, ok := s.rstp[bridge]; ok && a.b == b && rstpConfigEqual(&a.cfg, &c) && b.RSTPRunning() {
		return nil
	}
	if err := b.SetRSTP(&c, s.d.moduleLogger("rstp")); err != nil {
		return err
	}
	s.rstp[bridge] = rstpApplied{b: b, cfg: c}
	return nil
}

func rstpConfigEqual(a, b *ofproto.RSTPConfig) bool {
	return a.Address == b.Address && a.Priority == b.Priority && a.MaxAge == b.MaxAge &&
		a.ForwardDelay == b.ForwardDelay && slices.Equal(a.Ports, b.Ports)
}

// RSTPStatus returns the Bridge rstp_status and Port rstp_status and
// rstp_statistics columns as ovs-vswitchd's br_refresh_rstp_status,
// port_refresh_rstp_status and port_refresh_rstp_stats write them.
func (s *ovsdbSwitch) RSTPStatus(bridge string) (map[string]string, map[string]ovsdb.STPPortStatus, bool) {
	b := s.d.Bridge(bridge)
	if b == nil {
		return nil, nil, false
	}
	st, ok := b.RSTPStatus()
	if !ok {
		return nil, nil, false
	}
	status := map[string]string{
		"rstp_bridge_id":          st.BridgeID.String(),
		"rstp_root_path_cost":     strconv.Itoa(int(st.RootPathCost)),
		"rstp_root_id":            st.RootID.String(),
		"rstp_designated_id":      st.DesignatedID.String(),
		"rstp_designated_port_id": fmt.Sprintf("%04x", st.DesignatedPortID),
		"rstp_bridge_port_id":     fmt.Sprintf("%04x", st.BridgePortID),
	}
	ports := map[string]ovsdb.STPPortStatus{}
	for _, p := range b.Ports.Snapshot().List() {
		ps, ok := b.RSTPPortStatus(p.Name)
		if !ok {
			continue
		}
		ports[p.Name] = ovsdb.STPPortStatus{
			Status: map[string]string{
				"rstp_port_id":              fmt.Sprintf("%04x", ps.PortID),
				"rstp_port_role":            ps.Role.String(),
				"rstp_port_state":           ps.State.String(),
				"rstp_designated_bridge_id": ps.DesignatedBridge.String(),
				"rstp_designated_port_id":   fmt.Sprintf("%04x", ps.DesignatedPort),
				"rstp_designated_path_cost": strconv.Itoa(int(ps.DesignatedPathCost)),
			},
			Statistics: map[string]int{"rstp_tx_count": ps.TX, "rstp_rx_count": ps.RX, "rstp_uptime": ps.UptimeSecs,
				"rstp_error_count": ps.Errors},
		}
	}
	return status, ports, true
}

func (d *Daemon) registerRSTPCommands() {
	d.ctl.Register("rstp/show", "[bridge]", 0, 1, d.rstpShow)
	d.ctl.Register("rstp/tcn", "[bridge]", 0, 1, d.rstpTCN)
}

var errNoRSTP = errors.New("No such RSTP object")

func (d *Daemon) rstpShow(args []string) (string, error) {
	var sb strings.Builder
	if len(args) > 0 {
		b := d.Bridge(args[0])
		if b == nil || !b.RSTPShow(&sb) {
			return "", errNoRSTP
		}
		return sb.String(), nil
	}
	for _, b := range d.Bridges() {
		b.RSTPShow(&sb)
	}
	return sb.String(), nil
}

func (d *Daemon) rstpTCN(args []string) (string, error) {
	if len(args) > 0 {
		b := d.Bridge(args[0])
		if b == nil || !b.RSTPTopologyChange() {
			return "", errNoRSTP
		}
		return "OK", nil
	}
	for _, b := range d.Bridges() {
		b.RSTPTopologyChange()
	}
	return "OK", nil
}
