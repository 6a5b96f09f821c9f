package ovsdb

import (
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/ovn-org/libovsdb/cache"
)

// Sampling and flow export rows: sFlow, NetFlow, IPFIX and
// Flow_Sample_Collector_Set. IPFIX and collector sets are in ipfix.go.

// Table names.
const (
	TableSFlow   = "sFlow"
	TableNetFlow = "NetFlow"
	TableIPFIX   = "IPFIX"
	TableFSCS    = "Flow_Sample_Collector_Set"
)

// SFlow is a row of the sFlow table.
type SFlow struct {
	UUID     string   `ovsdb:"_uuid"`
	Agent    *string  `ovsdb:"agent"`
	Targets  []string `ovsdb:"targets"`
	Sampling *int     `ovsdb:"sampling"`
	Polling  *int     `ovsdb:"polling"`
	Header   *int     `ovsdb:"header"`
}

// NetFlow is a row of the NetFlow table.
type NetFlow struct {
	UUID             string   `ovsdb:"_uuid"`
	Targets          []string `ovsdb:"targets"`
	ActiveTimeout    int      `ovsdb:"active_timeout"`
	EngineType       *int     `ovsdb:"engine_type"`
	EngineID         *int     `ovsdb:"engine_id"`
	AddIDToInterface bool     `ovsdb:"add_id_to_interface"`
}

// NetFlowConfig is a bridge's NetFlow row, checked.
type NetFlowConfig struct {
	Targets []string // "IP:PORT", sorted
	// ActiveTimeout is in seconds; 0 (the row's 0 or a negative value)
	// means ovs-vswitchd's default, 600.
	ActiveTimeout int
	// EngineType and EngineID are -1 when the row leaves them to the
	// datapath's default.
	EngineType, EngineID int
	AddIDToInterface     bool
}

// Equal reports whether c and d are the same configuration.
func (c *NetFlowConfig) Equal(d *NetFlowConfig) bool {
	if c == nil || d == nil {
		return c == d
	}
	return slices.Equal(c.Targets, d.Targets) && c.ActiveTimeout == d.ActiveTimeout && c.EngineType == d.EngineType &&
		c.EngineID == d.EngineID && c.AddIDToInterface == d.AddIDToInterface
}

// parseNetFlow checks a NetFlow row as ovs-vswitchd uses it.
func parseNetFlow(bridge string, n *NetFlow, problems *[]string) (c *NetFlowConfig, msg string) {
	c = &NetFlowConfig{EngineType: -1, EngineID: -1, AddIDToInterface: n.AddIDToInterface}
	if len(n.Targets) == 0 {
		return nil, "has no targets"
	}
	for _, t := range n.Targets {
		ap, err := netip.ParseAddrPort(t)
		if err != nil {
			return nil, fmt.Sprintf("target %q is not IP:PORT", t)
		}
		c.Targets = append(c.Targets, ap.String())
	}
	sort.Strings(c.Targets)
	switch {
	case n.ActiveTimeout < 0:
		*problems = append(*problems, fmt.Sprintf("bridge %s: active timeout interval set to negative value, using default instead (600 seconds)", bridge))
	default:
		c.ActiveTimeout = n.ActiveTimeout
	}
	for _, f := range []struct {
		name string
		v    *int
		to   *int
	}{{"engine_type", n.EngineType, &c.EngineType}, {"engine_id", n.EngineID, &c.EngineID}} {
		if f.v == nil {
			continue
		}
		if *f.v < 0 || *f.v > 255 {
			return nil, fmt.Sprintf("%s %d is not 0 to 255", f.name, *f.v)
		}
		*f.to = *f.v
	}
	if c.AddIDToInterface && c.EngineID > 0x7f {
		*problems = append(*problems, fmt.Sprintf("bridge %s: NetFlow port mangling may conflict with another vswitch, choose an engine id less than 128", bridge))
	}
	return c, ""
}

// SFlowConfig is a bridge's sFlow row, checked, with ovs-vswitchd's
// defaults filled in (sampling 400, polling 30 s, header 128).
type SFlowConfig struct {
	Agent    string   // the agent column: a device name or an IP address; "" when unset
	Targets  []string // "IP:PORT" (the port 6343 when the row had none), sorted
	Sampling int
	Polling  int // seconds; 0 is no counter polling
	Header   int
	// SubID numbers the bridge among those with sFlow, as ovs-vswitchd's
	// sub-agent id.
	SubID int
}

// Equal reports whether c and d are the same configuration.
func (c *SFlowConfig) Equal(d *SFlowConfig) bool {
	if c == nil || d == nil {
		return c == d
	}
	return c.Agent == d.Agent && slices.Equal(c.Targets, d.Targets) && c.Sampling == d.Sampling &&
		c.Polling == d.Polling && c.Header == d.Header && c.SubID == d.SubID
}

// parseSampling reads the bridge's sFlow, NetFlow and IPFIX references.
// subID is the next sFlow sub-agent id.
func parseSampling(r *Rows, br *Bridge, bc *BridgeConfig, subID *int, problems *[]string) {
	if br.SFlow != nil {
		row := r.SFlows[*br.SFlow]
		switch {
		case row == nil:
			*problems = append(*problems, fmt.Sprintf("bridge %s refers to missing sFlow row %s", br.Name, *br.SFlow))
		default:
			if c, msg := parseSFlow(row); msg != "" {
				*problems = append(*problems, fmt.Sprintf("bridge %s: sFlow %s; sFlow not configured", br.Name, msg))
			} else {
				c.SubID = *subID
				*subID++
				bc.SFlow = c
			}
		}
	}
	if br.NetFlow != nil {
		row := r.NetFlows[*br.NetFlow]
		switch {
		case row == nil:
			*problems = append(*problems, fmt.Sprintf("bridge %s refers to missing NetFlow row %s", br.Name, *br.NetFlow))
		default:
			if c, msg := parseNetFlow(br.Name, row, problems); msg != "" {
				*problems = append(*problems, fmt.Sprintf("bridge %s: NetFlow %s; NetFlow not configured", br.Name, msg))
			} else {
				bc.NetFlow = c
			}
		}
	}
	parseIPFIX(r, br, bc, problems) // ipfix.go
}

// parseSFlow checks an sFlow row as ovs-vswitchd uses it; msg says what is
// wrong with it.
func parseSFlow(s *SFlow) (c *SFlowConfig, msg string) {
	c = &SFlowConfig{Sampling: 400, Polling: 30, Header: 128}
	if s.Agent != nil {
		c.Agent = *s.Agent
	}
	if len(s.Targets) == 0 {
		return nil, "has no targets"
	}
	for _, t := range s.Targets {
		ap, err := parseSFlowTarget(t)
		if err != nil {
			return nil, err.Error()
		}
		c.Targets = append(c.Targets, ap.String())
	}
	sort.Strings(c.Targets)
	if s.Sampling != nil {
		if *s.Sampling <= 0 || *s.Sampling > 1<<32-1 {
			return nil, fmt.Sprintf("sampling %d is not a rate (1 or more)", *s.Sampling)
		}
		c.Sampling = *s.Sampling
	}
	if s.Polling != nil {
		if *s.Polling < 0 {
			return nil, fmt.Sprintf("polling %d is not an interval in seconds", *s.Polling)
		}
		c.Polling = *s.Polling
	}
	if s.Header != nil {
		if *s.Header <= 0 || *s.Header > 65535 {
			return nil, fmt.Sprintf("header %d is not a byte count", *s.Header)
		}
		c.Header = *s.Header
	}
	return c, ""
}

// parseSFlowTarget reads "IP[:PORT]" or "[IPv6][:PORT]", the port 6343
// when absent, as ovs-vswitchd's inet_parse_active. Host names are not
// looked up.
func parseSFlowTarget(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return netip.AddrPortFrom(a, 6343), nil
	}
	return netip.AddrPort{}, fmt.Errorf("target %q is not IP[:PORT]", s)
}

// SFlowSwitch is a Switch that runs sFlow. The reconciler applies a
// bridge's sFlow through it without rebuilding the bridge; a Switch
// without it has every sFlow row refused.
type SFlowSwitch interface {
	// SetSFlow starts, changes (cfg not nil) or stops (nil) sFlow on a
	// running bridge.
	SetSFlow(bridge string, cfg *SFlowConfig) error
}

// NetFlowSwitch is a Switch that runs NetFlow, applied as SFlowSwitch.
type NetFlowSwitch interface {
	// SetNetFlow starts, changes (cfg not nil) or stops (nil) NetFlow on
	// a running bridge.
	SetNetFlow(bridge string, cfg *NetFlowConfig) error
}

// applyNetFlow brings the bridge's NetFlow to bc.NetFlow.
func (r *Reconciler) applyNetFlow(a *applied, bc *BridgeConfig) {
	if a.netflowOK && a.netflow.Equal(bc.NetFlow) {
		return
	}
	ns, ok := r.sw.(NetFlowSwitch)
	if !ok {
		if bc.NetFlow != nil {
			r.problemf(slog.LevelWarn, "bridge %s: NetFlow is not supported by this switch; not configured", bc.Name)
		}
		return
	}
	if err := ns.SetNetFlow(bc.Name, bc.NetFlow); err != nil {
		r.problemf(slog.LevelWarn, "bridge %s: NetFlow: %v; not configured", bc.Name, err)
		a.netflow, a.netflowOK = nil, false
		return
	}
	if bc.NetFlow != nil {
		r.logf("bridge %s: NetFlow to %s", bc.Name, strings.Join(bc.NetFlow.Targets, ","))
	} else if a.netflow != nil {
		r.logf("bridge %s: NetFlow stopped", bc.Name)
	}
	a.netflow, a.netflowOK = bc.NetFlow, true
}

// applySFlow brings the bridge's sFlow to bc.SFlow; a is the bridge's
// applied state (its sflow is what runs, sflowOK whether it is known).
func (r *Reconciler) applySFlow(a *applied, bc *BridgeConfig) {
	if a.sflowOK && a.sflow.Equal(bc.SFlow) {
		return
	}
	ss, ok := r.sw.(SFlowSwitch)
	if !ok {
		if bc.SFlow != nil {
			r.problemf(slog.LevelWarn, "bridge %s: sFlow is not supported by this switch; not configured", bc.Name)
		}
		return
	}
	if err := ss.SetSFlow(bc.Name, bc.SFlow); err != nil {
		r.problemf(slog.LevelWarn, "bridge %s: sFlow: %v; not configured", bc.Name, err)
		a.sflow, a.sflowOK = nil, false
		return
	}
	if bc.SFlow != nil {
		r.logf("bridge %s: sFlow to %s, sampling 1 in %d, polling every %d s", bc.Name, strings.Join(bc.SFlow.Targets, ","), bc.SFlow.Sampling, bc.SFlow.Polling)
	} else if a.sflow != nil {
		r.logf("bridge %s: sFlow stopped", bc.Name)
	}
	a.sflow, a.sflowOK = bc.SFlow, true
}

// snapshotSampling copies the cached sampling rows into r.
func snapshotSampling(tc *cache.TableCache, r *Rows) {
	r.SFlows = map[string]*SFlow{}
	r.NetFlows = map[string]*NetFlow{}
	if t := tc.Table(TableNetFlow); t != nil {
		for u, row := range t.Rows() {
			if n, ok := row.(*NetFlow); ok {
				r.NetFlows[u] = n
			}
		}
	}
	r.FSCS = map[string]*FlowSampleCollectorSet{}
	r.IPFIXes = map[string]*IPFIX{}
	if t := tc.Table(TableIPFIX); t != nil {
		for u, row := range t.Rows() {
			if x, ok := row.(*IPFIX); ok {
				r.IPFIXes[u] = x
			}
		}
	}
	if t := tc.Table(TableSFlow); t != nil {
		for u, row := range t.Rows() {
			if s, ok := row.(*SFlow); ok {
				r.SFlows[u] = s
			}
		}
	}
	if t := tc.Table(TableFSCS); t != nil {
		for u, row := range t.Rows() {
			if f, ok := row.(*FlowSampleCollectorSet); ok {
				r.FSCS[u] = f
			}
		}
	}
}
