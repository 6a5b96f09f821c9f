package ovsdb

import (
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// IPFIX is a row of the IPFIX table.
type IPFIX struct {
	UUID               string            `ovsdb:"_uuid"`
	Targets            []string          `ovsdb:"targets"`
	Sampling           *int              `ovsdb:"sampling"`
	ObsDomainID        *int              `ovsdb:"obs_domain_id"`
	ObsPointID         *int              `ovsdb:"obs_point_id"`
	CacheActiveTimeout *int              `ovsdb:"cache_active_timeout"`
	CacheMaxFlows      *int              `ovsdb:"cache_max_flows"`
	OtherConfig        map[string]string `ovsdb:"other_config"`
}

// FlowSampleCollectorSet is a row of Flow_Sample_Collector_Set: the
// collectors (an IPFIX row) the sample actions with its id send to.
type FlowSampleCollectorSet struct {
	UUID   string  `ovsdb:"_uuid"`
	ID     int     `ovsdb:"id"`
	Bridge string  `ovsdb:"bridge"`
	IPFIX  *string `ovsdb:"ipfix"`
}

// IPFIXExporterConfig is one IPFIX exporter's settings, checked, with
// ovs-vswitchd's defaults filled in.
type IPFIXExporterConfig struct {
	Targets []string // "IP:PORT" (4739 when the row had no port), sorted
	// Sampling is the bridge exporter's rate (400 when unset); unused by
	// a collector set.
	Sampling                uint32
	ObsDomainID, ObsPointID uint32
	CacheActiveTimeout      int // seconds
	CacheMaxFlows           uint32
	InputSampling           bool
	OutputSampling          bool
	TunnelSampling          bool
	VirtualObsID            string
}

// IPFIXSetConfig is a Flow_Sample_Collector_Set of the bridge.
type IPFIXSetConfig struct {
	ID uint32
	IPFIXExporterConfig
}

// IPFIXConfig is a bridge's IPFIX: its bridge exporter (nil without) and
// its collector sets (by id).
type IPFIXConfig struct {
	Bridge *IPFIXExporterConfig
	Sets   []IPFIXSetConfig
}

// Equal reports whether c and d are the same configuration.
func (c *IPFIXConfig) Equal(d *IPFIXConfig) bool {
	if c == nil || d == nil {
		return c == d
	}
	if (c.Bridge == nil) != (d.Bridge == nil) || c.Bridge != nil && !c.Bridge.equal(d.Bridge) || len(c.Sets) != len(d.Sets) {
		return false
	}
	for i := range c.Sets {
		if c.Sets[i].ID != d.Sets[i].ID || !c.Sets[i].equal(&d.Sets[i].IPFIXExporterConfig) {
			return false
		}
	}
	return true
}

func (c *IPFIXExporterConfig) equal(d *IPFIXExporterConfig) bool {
	return slices.Equal(c.Targets, d.Targets) && c.Sampling == d.Sampling && c.ObsDomainID == d.ObsDomainID &&
		c.ObsPointID == d.ObsPointID && c.CacheActiveTimeout == d.CacheActiveTimeout && c.CacheMaxFlows == d.CacheMaxFlows &&
		c.InputSampling == d.InputSampling && c.OutputSampling == d.OutputSampling && c.TunnelSampling == d.TunnelSampling &&
		c.VirtualObsID == d.VirtualObsID
}

// parseIPFIXRow checks an IPFIX row as ovs-vswitchd's
// bridge_configure_ipfix reads it; msg says what is wrong.
func parseIPFIXRow(x *IPFIX) (c *IPFIXExporterConfig, msg string) {
	c = &IPFIXExporterConfig{Sampling: 400}
	if len(x.Targets) == 0 {
		return nil, "has no targets"
	}
	for _, t := range x.Targets {
		ap, err := parseIPFIXTarget(t)
		if err != nil {
			return nil, err.Error()
		}
		c.Targets = append(c.Targets, ap.String())
	}
	sort.Strings(c.Targets)
	u32 := func(name string, v *int, lo int) (uint32, string) {
		if v == nil {
			return 0, ""
		}
		if *v < lo || *v > 1<<32-1 {
			return 0, fmt.Sprintf("%s %d is out of range", name, *v)
		}
		return uint32(*v), ""
	}
	var m string
	if x.Sampling != nil {
		if c.Sampling, m = u32("sampling", x.Sampling, 1); m != "" {
			return nil, m
		}
	}
	if c.ObsDomainID, m = u32("obs_domain_id", x.ObsDomainID, 0); m != "" {
		return nil, m
	}
	if c.ObsPointID, m = u32("obs_point_id", x.ObsPointID, 0); m != "" {
		return nil, m
	}
	var t uint32
	if t, m = u32("cache_active_timeout", x.CacheActiveTimeout, 0); m != "" || t > 4200 {
		return nil, fmt.Sprintf("cache_active_timeout %d is not 0 to 4200 seconds", t)
	}
	c.CacheActiveTimeout = int(t)
	if c.CacheMaxFlows, m = u32("cache_max_flows", x.CacheMaxFlows, 0); m != "" {
		return nil, m
	}
	// As ovs-vswitchd: enable-input-sampling and enable-output-sampling
	// set to true *disable* that sampling (a quirk of its bridge.c, kept so
	// that a database means the same to both switches).
	c.TunnelSampling = smapBool(x.OtherConfig, "enable-tunnel-sampling", true)
	c.InputSampling = !smapBool(x.OtherConfig, "enable-input-sampling", false)
	c.OutputSampling = !smapBool(x.OtherConfig, "enable-output-sampling", false)
	c.VirtualObsID = x.OtherConfig["virtual_obs_id"]
	if len(c.VirtualObsID) > 254 {
		return nil, fmt.Sprintf("virtual_obs_id is %d bytes, longer than 254", len(c.VirtualObsID))
	}
	return c, ""
}

// smapBool reads a boolean of a map column as OVS's smap_get_bool: "true"
// is true, anything else present false.
func smapBool(m map[string]string, key string, def bool) bool {
	v, ok := m[key]
	if !ok {
		return def
	}
	return strings.EqualFold(v, "true")
}

func parseIPFIXTarget(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return netip.AddrPortFrom(a, 4739), nil
	}
	return netip.AddrPort{}, fmt.Errorf("target %q is not IP[:PORT]", s)
}

// parseIPFIX reads the bridge's IPFIX row and the collector sets that
// name the bridge.
func parseIPFIX(r *Rows, br *Bridge, bc *BridgeConfig, problems *[]string) {
	var c IPFIXConfig
	if br.IPFIX != nil {
		row := r.IPFIXes[*br.IPFIX]
		switch {
		case row == nil:
			*problems = append(*problems, fmt.Sprintf("bridge %s refers to missing IPFIX row %s", br.Name, *br.IPFIX))
		default:
			if e, msg := parseIPFIXRow(row); msg != "" {
				*problems = append(*problems, fmt.Sprintf("bridge %s: IPFIX %s; IPFIX not configured", br.Name, msg))
			} else {
				c.Bridge = e
			}
		}
	}
	for _, f := range r.FSCS {
		if f.Bridge != br.UUID || f.IPFIX == nil {
			continue // ovsrec_fscs_is_valid: a set without IPFIX row is not one
		}
		row := r.IPFIXes[*f.IPFIX]
		if row == nil || len(row.Targets) == 0 {
			continue
		}
		if f.ID < 0 || f.ID > 1<<32-1 {
			*problems = append(*problems, fmt.Sprintf("bridge %s: Flow_Sample_Collector_Set id %d is out of range; not configured", br.Name, f.ID))
			continue
		}
		e, msg := parseIPFIXRow(row)
		if msg != "" {
			*problems = append(*problems, fmt.Sprintf("bridge %s: Flow_Sample_Collector_Set %d: IPFIX %s; not configured", br.Name, f.ID, msg))
			continue
		}
		c.Sets = append(c.Sets, IPFIXSetConfig{ID: uint32(f.ID), IPFIXExporterConfig: *e})
	}
	sort.Slice(c.Sets, func(i, j int) bool { return c.Sets[i].ID < c.Sets[j].ID })
	c.Sets = slices.CompactFunc(c.Sets, func(a, b IPFIXSetConfig) bool { return a.ID == b.ID })
	if c.Bridge != nil || len(c.Sets) > 0 {
		bc.IPFIX = &c
	}
}

// IPFIXSwitch is a Switch that runs IPFIX, applied as SFlowSwitch.
type IPFIXSwitch interface {
	// SetIPFIX starts, changes (cfg not nil) or stops (nil) IPFIX on a
	// running bridge.
	SetIPFIX(bridge string, cfg *IPFIXConfig) error
}

// applyIPFIX brings the bridge's IPFIX to bc.IPFIX.
func (r *Reconciler) applyIPFIX(a *applied, bc *BridgeConfig) {
	if a.ipfixOK && a.ipfix.Equal(bc.IPFIX) {
		return
	}
	is, ok := r.sw.(IPFIXSwitch)
	if !ok {
		if bc.IPFIX != nil {
			r.problemf(slog.LevelWarn, "bridge %s: IPFIX is not supported by this switch; not configured", bc.Name)
		}
		return
	}
	if err := is.SetIPFIX(bc.Name, bc.IPFIX); err != nil {
		r.problemf(slog.LevelWarn, "bridge %s: IPFIX: %v; not configured", bc.Name, err)
		a.ipfix, a.ipfixOK = nil, false
		return
	}
	switch c := bc.IPFIX; {
	case c != nil:
		var parts []string
		if c.Bridge != nil {
			parts = append(parts, fmt.Sprintf("bridge IPFIX to %s, sampling 1 in %d", strings.Join(c.Bridge.Targets, ","), c.Bridge.Sampling))
		}
		for _, s := range c.Sets {
			parts = append(parts, "collector set "+strconv.FormatUint(uint64(s.ID), 10)+" to "+strings.Join(s.Targets, ","))
		}
		r.logf("bridge %s: %s", bc.Name, strings.Join(parts, "; "))
	case a.ipfix != nil:
		r.logf("bridge %s: IPFIX stopped", bc.Name)
	}
	a.ipfix, a.ipfixOK = bc.IPFIX, true
}
