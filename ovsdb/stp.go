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

// STPConfig is a bridge's spanning tree (stp_enable=true), checked by
// Build as ovs-vswitchd's bridge_configure_stp reads it.
type STPConfig struct {
	// SystemID is other_config:stp-system-id as 48 bits, 0 when unset
	// (the switch takes the bridge's address).
	SystemID uint64
	Priority uint16
	// HelloTime, MaxAge and ForwardDelay are as ovs-vswitchd takes them:
	// stp-max-age and stp-forward-delay in seconds, stp-hello-time as
	// milliseconds (ovs-vswitchd 3.1 reads it so; the protocol then
	// clamps it to 1 to 10 s, so "1" and "2" both give 1 s).
	HelloTime, MaxAge, ForwardDelay time.Duration
	Ports                           []STPPortConfig // by name
}

// STPPortConfig is one port of the tree.
type STPPortConfig struct {
	Name     string
	Num      int // 1 to 255
	Priority uint8
	// PathCost is other_config:stp-path-cost; 0 when unset, for the
	// switch to derive from the link speed.
	PathCost uint32
	// HasPathCost tells an explicit stp-path-cost=0 from none.
	HasPathCost bool
}

// Equal reports whether c and d are the same tree.
func (c *STPConfig) Equal(d *STPConfig) bool {
	if c == nil || d == nil {
		return c == d
	}
	if c.SystemID != d.SystemID || c.Priority != d.Priority || c.HelloTime != d.HelloTime || c.MaxAge != d.MaxAge ||
		c.ForwardDelay != d.ForwardDelay || len(c.Ports) != len(d.Ports) {
		return false
	}
	for i := range c.Ports {
		if c.Ports[i] != d.Ports[i] {
			return false
		}
	}
	return true
}

// parseUint reads a number as C's strtoul does with base (0: 0x hex, 0
// octal, else decimal), leading digits only; 0 for none.
func parseUint(s string, base int) uint64 {
	s = strings.TrimSpace(s)
	if base == 0 {
		switch {
		case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
			s, base = s[2:], 16
		case len(s) > 1 && s[0] == '0':
			s, base = s[1:], 8
		default:
			base = 10
		}
	}
	end := 0
	for end < len(s) {
		if _, err := strconv.ParseUint(s[end:end+1], base, 8); err != nil {
			break
		}
		end++
	}
	n, _ := strconv.ParseUint(s[:end], base, 64)
	return n
}

// buildSTP returns the bridge's spanning tree, nil without. With
// rstp_enable too, the bridge runs RSTP instead (rstp.go), with a
// warning, as ovs-vswitchd's bridge_configure_spanning_tree.
func buildSTP(br *Bridge, r *Rows, mirrors []MirrorConfig, problems *[]string) *STPConfig {
	if br.RSTPEnable {
		if br.STPEnable {
			*problems = append(*problems, fmt.Sprintf("bridge %s: RSTP and STP are mutually exclusive but both are configured; enabling RSTP", br.Name))
		}
		return nil
	}
	if !br.STPEnable {
		return nil
	}
	oc := br.OtherConfig
	c := &STPConfig{Priority: 32768, HelloTime: 2000 * time.Millisecond, MaxAge: 20 * time.Second, ForwardDelay: 15 * time.Second}
	if v, ok := oc["stp-system-id"]; ok {
		if mac, err := net.ParseMAC(v); err == nil && len(mac) == 6 {
			for _, b := range mac {
				c.SystemID = c.SystemID<<8 | uint64(b)
			}
		} else {
			*problems = append(*problems, fmt.Sprintf("bridge %s: invalid stp-system-id, defaulting to the bridge's address", br.Name))
		}
	}
	if v, ok := oc["stp-priority"]; ok {
		c.Priority = uint16(parseUint(v, 10))
	}
	if v, ok := oc["stp-hello-time"]; ok {
		c.HelloTime = time.Duration(parseUint(v, 10)) * time.Millisecond
	}
	if v, ok := oc["stp-max-age"]; ok {
		c.MaxAge = time.Duration(parseUint(v, 10)) * time.Second
	}
	if v, ok := oc["stp-forward-delay"]; ok {
		c.ForwardDelay = time.Duration(parseUint(v, 10)) * time.Second
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
	used := map[int]bool{}
	counter, manual := 0, false
	for _, p := range ports {
		poc := p.OtherConfig
		if v, ok := poc["stp-enable"]; ok && v != "true" {
			continue // smap_get_bool: anything but "true" is false
		}
		if len(p.Interfaces) != 1 {
			*problems = append(*problems, fmt.Sprintf("port %s: cannot enable STP on bonds, disabling", p.Name))
			continue
		}
		in := r.Interfaces[p.Interfaces[0]]
		if in == nil || in.Type == "internal" || mirrorOut[in.Name] {
			continue // internal and mirror output ports take no part, as in ovs-vswitchd
		}
		if t, _ := ifaceType(in.Type); t != "system" {
			*problems = append(*problems, fmt.Sprintf("port %s: STP on %s ports is not supported by govswitchd; the port takes no part in the spanning tree", p.Name, t))
			continue
		}
		pc := STPPortConfig{Name: in.Name, Priority: 128}
		if v, ok := poc["stp-port-num"]; ok {
			n := parseUint(v, 0)
			if n < 1 || n > 255 {
				*problems = append(*problems, fmt.Sprintf("port %s: invalid stp-port-num", p.Name))
				continue
			}
			if used[int(n)] {
				*problems = append(*problems, fmt.Sprintf("port %s: duplicate stp-port-num %d, disabling", p.Name, n))
				continue
			}
			used[int(n)], pc.Num, manual = true, int(n), true
		} else {
			if counter >= 255 {
				*problems = append(*problems, fmt.Sprintf("port %s: too many STP ports, disabling", p.Name))
				continue
			}
			counter++
			pc.Num = counter
		}
		if v, ok := poc["stp-path-cost"]; ok {
			pc.PathCost, pc.HasPathCost = uint32(uint16(parseUint(v, 10))), true
		}
		if v, ok := poc["stp-port-priority"]; ok {
			pc.Priority = uint8(parseUint(v, 0))
		}
		c.Ports = append(c.Ports, pc)
	}
	if manual && counter > 0 {
		*problems = append(*problems, fmt.Sprintf("bridge %s: must manually configure all STP port IDs or none, disabling", br.Name))
		return nil
	}
	sort.Slice(c.Ports, func(i, j int) bool { return c.Ports[i].Name < c.Ports[j].Name })
	return c
}

// STPSwitch is a Switch that runs spanning trees. A Switch without it
// has stp_enable refused.
type STPSwitch interface {
	// SetSTP gives the bridge the tree cfg, or none (nil).
	SetSTP(bridge string, cfg *STPConfig) error
	// STPStatus returns what the bridge's Bridge.status and its ports'
	// Port.status and Port.statistics say, for a bridge with a tree;
	// ok is false without one.
	STPStatus(bridge string) (status map[string]string, ports map[string]STPPortStatus, ok bool)
}

// STPPortStatus is one port's Port.status and Port.statistics.
type STPPortStatus struct {
	Status     map[string]string
	Statistics map[string]int
}

func (r *Reconciler) applySTP(bc *BridgeConfig) {
	ss, ok := r.sw.(STPSwitch)
	if !ok {
		if bc.STP != nil {
			r.problemf(slog.LevelWarn, "bridge %s: STP is not supported by this switch", bc.Name)
		}
		return
	}
	if err := ss.SetSTP(bc.Name, bc.STP); err != nil {
		r.problemf(slog.LevelError, "bridge %s: could not enable STP: %v", bc.Name, err)
	}
}

// stpStatusUpdates returns the writes of Bridge.status and the ports'
// status and statistics that differ from the rows. A change of
// stp_sec_in_state or of the BPDU counts alone is written at most once a
// refresh period, as ovs-vswitchd refreshes them every few seconds.
func (m *Monitor) stpStatusUpdates(c *dbClient, rows *Rows) ([]libovsdb.Operation, error) {
	ss, ok := m.sw.(STPSwitch)
	if !ok {
		return nil, nil
	}
	refresh := m.Refresh
	if refresh <= 0 {
		refresh = DefaultRefresh
	}
	full := time.Since(m.stpStatusAt) >= refresh
	ops, err := treeStatusUpdates(c, rows, stpColumns, full, ss.STPStatus)
	if err == nil && full {
		m.stpStatusAt = time.Now()
	}
	return ops, err
}

// stpColumns are STP's: Bridge status, Port status and statistics.
var stpColumns = treeColumns{
	name:       "status",
	bridge:     func(b *Bridge) *map[string]string { return &b.Status },
	portStatus: func(p *Port) *map[string]string { return &p.Status },
	portStats:  func(p *Port) *map[string]int { return &p.Statistics },
	waits: func(want, have map[string]string, _, statsSame, bothStats bool) bool {
		return statsDiffOnly(want, have) && (statsSame || bothStats)
	},
}

// statsDiffOnly reports whether two port status maps differ at most in
// stp_sec_in_state (and both have one).
func statsDiffOnly(a, b map[string]string) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for k, v := range a {
		if k == "stp_sec_in_state" {
			if _, ok := b[k]; !ok {
				return false
			}
			continue
		}
		if b[k] != v {
			return false
		}
	}
	return true
}
