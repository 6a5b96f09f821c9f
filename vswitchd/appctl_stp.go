package vswitchd

import (
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ofproto/stp"
	"github.com/govswitch/govswitch/ovsdb"
)

// Spanning tree from the database (ovsdb.STPSwitch) and the stp/*
// commands of ovs-appctl, with ovs-vswitchd 3.1's output (lib/stp.c,
// vswitchd/bridge.c).

// stpApplied is the tree a bridge was given, and the bridge (a rebuilt
// bridge starts without one).
type stpApplied struct {
	b   *ofproto.Bridge
	cfg ofproto.STPConfig
}

// SetSTP gives the bridge its spanning tree, or stops it (nil), when that
// differs from what it runs.
func (s *ovsdbSwitch) SetSTP(bridge string, cfg *ovsdb.STPConfig) error {
	b := s.d.Bridge(bridge)
	if b == nil {
		return errors.New("bridge not running")
	}
	if s.stp == nil {
		s.stp = map[string]stpApplied{}
	}
	if cfg == nil {
		if _, ok := s.stp[bridge]; !ok {
			return nil
		}
		delete(s.stp, bridge)
		return b.SetSTP(nil, nil)
	}
	// Without stp-system-id the bridge identifier is the bridge's
	// address, as ovs-vswitchd's br->ea: its own device's.
	c := ofproto.STPConfig{SystemID: cfg.SystemID, Priority: cfg.Priority, HelloTime: cfg.HelloTime, MaxAge: cfg.MaxAge,
		ForwardDelay: cfg.ForwardDelay}
	if c.SystemID == 0 {
		if ifi, err := net.InterfaceByName(bridge); err == nil && len(ifi.HardwareAddr) == 6 {
			for _, x := range ifi.HardwareAddr {
				c.SystemID = c.SystemID<<8 | uint64(x)
			}
		}
	}
	for _, p := range cfg.Ports {
		cost := p.PathCost
		if !p.HasPathCost {
			cost = stp.PathCostForSpeed(linkSpeed(p.Name))
		}
		c.Ports = append(c.Ports, ofproto.STPPortConfig{Name: p.Name, Num: p.Num, Priority: p.Priority, PathCost: cost})
	}
	if a, ok := s.stp[bridge]; ok && a.b == b && stpConfigEqual(&a.cfg, &c) {
		return nil
	}
	if err := b.SetSTP(&c, s.d.moduleLogger("stp")); err != nil {
		return err
	}
	s.stp[bridge] = stpApplied{b: b, cfg: c}
	return nil
}

func stpConfigEqual(a, b *ofproto.STPConfig) bool {
	return a.SystemID == b.SystemID && a.Priority == b.Priority && a.HelloTime == b.HelloTime && a.MaxAge == b.MaxAge &&
		a.ForwardDelay == b.ForwardDelay && slices.Equal(a.Ports, b.Ports)
}

// linkSpeed is the device's speed in Mb/s, 0 when unknown (a veth says
// 10000).
func linkSpeed(name string) uint64 {
	b, err := os.ReadFile("/sys/class/net/" + name + "/speed")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return uint64(n)
}

// STPStatus returns the Bridge and Port status columns as
// ovs-vswitchd's br_refresh_stp_status and port_refresh_stp_status
// write them, and the ports' stp_* statistics.
func (s *ovsdbSwitch) STPStatus(bridge string) (map[string]string, map[string]ovsdb.STPPortStatus, bool) {
	b := s.d.Bridge(bridge)
	if b == nil {
		return nil, nil, false
	}
	st, ok := b.STPStatus()
	if !ok {
		return nil, nil, false
	}
	status := map[string]string{
		"stp_bridge_id":       st.BridgeID.String(),
		"stp_designated_root": st.DesignatedRoot.String(),
		"stp_root_path_cost":  strconv.Itoa(int(st.RootPathCost)),
	}
	ports := map[string]ovsdb.STPPortStatus{}
	now := time.Now()
	for _, p := range b.Ports.Snapshot().List() {
		ps, ok := b.STPPortStatus(p.Name, now)
		if !ok {
			continue
		}
		ports[p.Name] = ovsdb.STPPortStatus{
			Status: map[string]string{"stp_port_id": strconv.Itoa(int(ps.PortID)), "stp_state": ps.State.String(),
				"stp_sec_in_state": strconv.Itoa(ps.SecInState), "stp_role": ps.Role.String()},
			Statistics: map[string]int{"stp_tx_count": ps.TX, "stp_rx_count": ps.RX, "stp_error_count": ps.Errors},
		}
	}
	return status, ports, true
}

func (d *Daemon) registerSTPCommands() {
	d.ctl.Register("stp/show", "[bridge]", 0, 1, d.stpShow)
	d.ctl.Register("stp/tcn", "[bridge]", 0, 1, d.stpTCN)
}

var errNoSTP = errors.New("no such stp object")

func (d *Daemon) stpShow(args []string) (string, error) {
	var sb strings.Builder
	if len(args) > 0 {
		b := d.Bridge(args[0])
		if b == nil || !b.STPShow(&sb) {
			return "", errNoSTP
		}
		return sb.String(), nil
	}
	for _, b := range d.Bridges() {
		b.STPShow(&sb)
	}
	return sb.String(), nil
}

func (d *Daemon) stpTCN(args []string) (string, error) {
	if len(args) > 0 {
		b := d.Bridge(args[0])
		if b == nil || !b.STPTopologyChange() {
			return "", errNoSTP
		}
		return "OK", nil
	}
	for _, b := range d.Bridges() {
		b.STPTopologyChange()
	}
	return "OK", nil
}
