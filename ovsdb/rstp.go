package ovsdb

import (
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	libovsdb "github.com/ovn-org/libovsdb/ovsdb"
)

// RSTPConfig is a bridge's rapid spanning tree (rstp_enable=true), read as
// ovs-vswitchd's bridge_configure_rstp reads it.
type RSTPConfig struct {
	// Address is other_config:rstp-address as 48 bits, 0 when unset (the
	// switch takes the bridge's address).
	Address uint64
	// Priority, MaxAge and ForwardDelay (seconds) are rstp-priority,
	// rstp-max-age and rstp-forward-delay; the protocol ignores values
	// out of its ranges, as ovs-vswitchd's does.
	Priority, MaxAge, ForwardDelay int
	Ports                          []RSTPPortConfig // by name
}

// RSTPPortConfig is one port of the tree.
type RSTPPortConfig struct {
	Name string
	// Num is rstp-port-num, 1 to 4095; 0 when unset (the first free one).
	Num      int
	Priority int
	// PathCost is rstp-path-cost; with HasPathCost false the switch
	// derives it from the link speed.
	PathCost    uint32
	HasPathCost bool
	// AdminEdge and AutoEdge are rstp-port-admin-edge and
	// rstp-port-auto-edge; AdminDown is rstp-admin-port-state=false;
	// MCheck is rstp-port-mcheck.
	AdminEdge, AutoEdge, AdminDown, MCheck bool
}

// Equal reports whether c and d are the same tree.
func (c *RSTPConfig) Equal(d *RSTPConfig) bool {
	if c == nil || d == nil {
		return c == d
	}
	if c.Address != d.Address || c.Priority != d.Priority || c.MaxAge != d.MaxAge || c.ForwardDelay != d.ForwardDelay ||
		len(c.Ports) != len(d.Ports) {
		return false
	}
	for i := range c.Ports {
		if c.Ports[i] != d.Ports[i] {
			return false
		}
	}
	return true
}

// smapUint is smap_get_ullong: the value as a decimal number, def when
// unset or not a number.
func smapUint(oc map[string]string, key string, def uint64) uint64 {
	v, ok := oc[key]
	if !ok {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return def
	}
	return n
}

// smapGetBool is smap_get_bool exactly: with def true anything but "false" is true,
// with def false only "true" is.
func smapGetBool(oc map[string]string, key string, def bool) bool {
	v := oc[key]
	if def {
		return !strings.EqualFold(v, "false")
	}
	return strings.EqualFold(v, "true")
}

// buildRSTP returns the bridge's rapid spanning tree, nil without.
// Settings govswitchd does not implement (STP compatibility, shared
// media, a transmit hold count or ageing time of its own) are warned
// about and the tree runs without them.
func buildRSTP(br *Bridge, r *Rows, mirrors []MirrorConfig, problems *[]string) *RSTPConfig {
	if !br.RSTPEnable {
		return nil
	}
	oc := br.OtherConfig
	c := &RSTPConfig{}
	if v, ok := oc["rstp-address"]; ok {
		if mac, err := net.ParseMAC(v); err == nil && len(mac) == 6 {
			for _, b := range mac {
				c.Address = c.Address<<8 | uint64(b)
			}
		} else {
			*problems = append(*problems, fmt.Sprintf("bridge %s: invalid rstp-address, defaulting to the bridge's address", br.Name))
		}
	}
	c.Priority = int(min(smapUint(oc, "rstp-priority", 32768), 1<<31))
	c.MaxAge = int(min(smapUint(oc, "rstp-max-age", 20), 1<<31))
	c.ForwardDelay = int(min(smapUint(oc, "rstp-forward-delay", 15), 1<<31))
	for _, u := range []struct {
		key  string
		def  uint64
		what string
	}{
		{"rstp-force-protocol-version", 2, "STP compatibility (force protocol version 0) is not implemented"},
		{"rstp-transmit-hold-count", 6, "the transmit hold count is fixed at 6"},
		{"rstp-ageing-time", 300, "the RSTP ageing time is not used; MAC ageing is other_config:mac-aging-time"},
	} {
		if _, ok := oc[u.key]; ok && smapUint(oc, u.key, u.def) != u.def {
			*problems = append(*problems, fmt.Sprintf("bridge %s: %s=%s is not supported by govswitchd (%s); ignored", br.Name, u.key, oc[u.key], u.what))
		}
	}
	mirrorOut := map[string]bool{}
	for _, m := range mirrors {
		if m.OutputPort != "" {
			mirrorOut[m.OutputPort] = true
		}
	}
	var ports []*Port
	for _, pu := range br.Ports {
		if p := r.Ports[pu]; p != nil {
			ports = append(ports, p)
		}
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i].Name < ports[j].Name })
	counter := 0
	for _, p := range ports {
		poc := p.OtherConfig
		if !smapGetBool(poc, "rstp-enable", true) {
			continue
		}
		if len(p.Interfaces) != 1 {
			*problems = append(*problems, fmt.Sprintf("port %s: cannot enable RSTP on bonds, disabling", p.Name))
			continue
		}
		in := r.Interfaces[p.Interfaces[0]]
		if in == nil || in.Type == "internal" || mirrorOut[in.Name] {
			continue // internal and mirror output ports take no part, as in ovs-vswitchd
		}
		if t, _ := ifaceType(in.Type); t != "system" {
			*problems = append(*problems, fmt.Sprintf("port %s: RSTP on %s ports is not supported by govswitchd; the port takes no part in the rapid spanning tree", p.Name, t))
			continue
		}
		pc := RSTPPortConfig{Name: in.Name, Priority: 128}
		if v, ok := poc["rstp-port-num"]; ok {
			n := parseUint(v, 0)
			if n < 1 || n > 4095 {
				*problems = append(*problems, fmt.Sprintf("port %s: invalid rstp-port-num", p.Name))
				continue
			}
			pc.Num = int(n)
		} else if counter >= 4095 {
			*problems = append(*problems, fmt.Sprintf("port %s: too many RSTP ports, disabling", p.Name))
			continue
		}
		counter++
		if v, ok := poc["rstp-path-cost"]; ok {
			pc.PathCost, pc.HasPathCost = uint32(parseUint(v, 10)), true
		}
		if v, ok := poc["rstp-port-priority"]; ok {
			pc.Priority = int(min(parseUint(v, 0), 1<<31))
		}
		pc.AdminEdge = smapGetBool(poc, "rstp-port-admin-edge", false)
		pc.AutoEdge = smapGetBool(poc, "rstp-port-auto-edge", true)
		pc.AdminDown = !smapGetBool(poc, "rstp-admin-port-state", true)
		if v, ok := poc["rstp-admin-p2p-mac"]; ok && smapUint(poc, "rstp-admin-p2p-mac", 1) != 1 {
			*problems = append(*problems, fmt.Sprintf("port %s: rstp-admin-p2p-mac=%s is not supported by govswitchd (every link is point-to-point); ignored", p.Name, v))
		}
		pc.MCheck = smapGetBool(poc, "rstp-port-mcheck", false)
		c.Ports = append(c.Ports, pc)
	}
	return c
}

// RSTPSwitch is a Switch that runs rapid spanning trees. A Switch without
// it has rstp_enable refused.
type RSTPSwitch interface {
	// SetRSTP gives the bridge the tree cfg, or none (nil).
	SetRSTP(bridge string, cfg *RSTPConfig) error
	// RSTPStatus returns what the bridge's Bridge.rstp_status and its
	// ports' Port.rstp_status and Port.rstp_statistics say, for a bridge
	// with a tree; ok is false without one.
	RSTPStatus(bridge string) (status map[string]string, ports map[string]STPPortStatus, ok bool)
}

func (r *Reconciler) applyRSTP(bc *BridgeConfig) {
	ss, ok := r.sw.(RSTPSwitch)
	if !ok {
		if bc.RSTP != nil {
			r.problemf(slog.LevelWarn, "bridge %s: RSTP is not supported by this switch", bc.Name)
		}
		return
	}
	if err := ss.SetRSTP(bc.Name, bc.RSTP); err != nil {
		r.problemf(slog.LevelError, "bridge %s: could not enable RSTP: %v", bc.Name, err)
	}
}

// rstpStatusUpdates returns the writes of Bridge.rstp_status and the
// ports' rstp_status and rstp_statistics that differ from the rows. The
// statistics alone (counts, uptime) are written at most once a refresh
// period, as ovs-vswitchd refreshes them every few seconds.
func (m *Monitor) rstpStatusUpdates(c *dbClient, rows *Rows) ([]libovsdb.Operation, error) {
	ss, ok := m.sw.(RSTPSwitch)
	if !ok {
		return nil, nil
	}
	refresh := m.Refresh
	if refresh <= 0 {
		refresh = DefaultRefresh
	}
	full := time.Since(m.rstpStatusAt) >= refresh
	ops, err := treeStatusUpdates(c, rows, rstpColumns, full, ss.RSTPStatus)
	if err == nil && full {
		m.rstpStatusAt = time.Now()
	}
	return ops, err
}

// rstpColumns are RSTP's: Bridge rstp_status, Port rstp_status and
// rstp_statistics, the statistics alone waiting.
var rstpColumns = treeColumns{
	name:       "rstp_status",
	bridge:     func(b *Bridge) *map[string]string { return &b.RSTPStatus },
	portStatus: func(p *Port) *map[string]string { return &p.RSTPStatus },
	portStats:  func(p *Port) *map[string]int { return &p.RSTPStatistics },
	waits: func(_, _ map[string]string, statusSame, _, bothStats bool) bool {
		return statusSame && bothStats
	},
}
