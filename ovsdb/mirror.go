package ovsdb

import (
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"time"

	libovsdb "github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-org/libovsdb/cache"
)

// Mirror is a row of the Mirror table.
type Mirror struct {
	UUID          string   `ovsdb:"_uuid"`
	Name          string   `ovsdb:"name"`
	SelectAll     bool     `ovsdb:"select_all"`
	SelectSrcPort []string `ovsdb:"select_src_port"` // Port UUIDs
	SelectDstPort []string `ovsdb:"select_dst_port"` // Port UUIDs
	SelectVLAN    []int    `ovsdb:"select_vlan"`
	OutputPort    *string  `ovsdb:"output_port"` // Port UUID
	OutputVLAN    *int     `ovsdb:"output_vlan"`
	Snaplen       *int     `ovsdb:"snaplen"`
	// Statistics is written by the switch (MirrorStatsSwitch).
	Statistics map[string]int `ovsdb:"statistics"`
}

// MirrorConfig is one Mirror row of a bridge, checked by Build, with its
// ports by interface (device) name: a bond Port stands for its members.
type MirrorConfig struct {
	UUID      string
	Name      string
	SelectAll bool
	SrcPorts  []string // sorted
	DstPorts  []string // sorted
	VLANs     []int    // sorted
	// OutputPort is an interface of the output Port ("" with OutputVLAN).
	OutputPort string
	OutputVLAN int
	// Snaplen is the snaplen column: copies are cut to this many bytes
	// (0: whole packets).
	Snaplen int
}

func snapshotMirrors(t *cache.RowCache, r *Rows) {
	if t == nil {
		return
	}
	for u, row := range t.Rows() {
		if m, ok := row.(*Mirror); ok {
			if r.Mirrors == nil {
				r.Mirrors = map[string]*Mirror{}
			}
			r.Mirrors[u] = m
		}
	}
}

// buildMirrors checks the bridge's Mirror rows. Ports of other bridges
// are left out of a selection, as ovs-vswitchd leaves them; a mirror it
// cannot run (no output, an output port not on the bridge) is
// reported in problems and left out.
func buildMirrors(br *Bridge, r *Rows, problems *[]string) []MirrorConfig {
	if len(br.Mirrors) == 0 {
		return nil
	}
	onBridge := map[string]bool{}
	for _, pu := range br.Ports {
		onBridge[pu] = true
	}
	ifaces := func(pu string) []string {
		p := r.Ports[pu]
		if p == nil || !onBridge[pu] {
			return nil
		}
		var names []string
		for _, iu := range p.Interfaces {
			if in := r.Interfaces[iu]; in != nil {
				names = append(names, in.Name)
			}
		}
		sort.Strings(names)
		return names
	}
	var out []MirrorConfig
	for _, mu := range br.Mirrors {
		m := r.Mirrors[mu]
		if m == nil {
			*problems = append(*problems, fmt.Sprintf("bridge %s refers to missing mirror row %s", br.Name, mu))
			continue
		}
		mc := MirrorConfig{UUID: m.UUID, Name: m.Name, SelectAll: m.SelectAll}
		if m.Snaplen != nil {
			mc.Snaplen = *m.Snaplen
		}
		for _, pu := range m.SelectSrcPort {
			mc.SrcPorts = append(mc.SrcPorts, ifaces(pu)...)
		}
		for _, pu := range m.SelectDstPort {
			mc.DstPorts = append(mc.DstPorts, ifaces(pu)...)
		}
		sort.Strings(mc.SrcPorts)
		sort.Strings(mc.DstPorts)
		mc.VLANs = append([]int(nil), m.SelectVLAN...)
		sort.Ints(mc.VLANs)
		switch {
		case m.OutputPort != nil && m.OutputVLAN != nil:
			*problems = append(*problems, fmt.Sprintf("bridge %s: mirror %s: specifies both output port and output vlan; ignoring", br.Name, m.Name))
			continue
		case m.OutputPort != nil:
			names := ifaces(*m.OutputPort)
			if len(names) == 0 {
				*problems = append(*problems, fmt.Sprintf("bridge %s: mirror %s: output port is not on the bridge; ignoring", br.Name, m.Name))
				continue
			}
			mc.OutputPort = names[0]
		case m.OutputVLAN != nil:
			mc.OutputVLAN = *m.OutputVLAN
		default:
			*problems = append(*problems, fmt.Sprintf("bridge %s: mirror %s does not specify output; ignoring", br.Name, m.Name))
			continue
		}
		if !mc.SelectAll && len(mc.SrcPorts) == 0 && len(mc.DstPorts) == 0 {
			// OVS warns the same and keeps a mirror that selects nothing.
			*problems = append(*problems, fmt.Sprintf("bridge %s: mirror %s does not select any traffic", br.Name, m.Name))
		}
		out = append(out, mc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// MirrorSwitch is a Switch that runs mirrors; the reconciler gives it
// every bridge's mirrors after its ports and bonds.
type MirrorSwitch interface {
	SetMirrors(bridge string, mirrors []MirrorConfig) error
}

// MirrorStatsSwitch is a MirrorSwitch that counts what its mirrors were
// sent, for the Mirror table's statistics column.
type MirrorStatsSwitch interface {
	// MirrorStats returns the tx_packets and tx_bytes of the bridge's
	// mirrors that run, by name; a mirror absent has no statistics.
	MirrorStats(bridge string) map[string][2]uint64
}

// mirrorStatsUpdates returns the writes of the Mirror rows' statistics
// that differ from what the switch counts, as ovs-vswitchd's
// mirror_refresh_stats: once a refresh period (its stats-update-interval,
// 5 s by default), and at once for a mirror whose column is still empty
// (ovs-vswitchd writes its first statistics right after the mirror is
// made). A mirror the switch does not run has none.
func (m *Monitor) mirrorStatsUpdates(c *dbClient, rows *Rows) ([]libovsdb.Operation, error) {
	ms, ok := m.sw.(MirrorStatsSwitch)
	if !ok {
		return nil, nil
	}
	refresh := m.Refresh
	if refresh <= 0 {
		refresh = DefaultRefresh
	}
	full := time.Since(m.mirrorStatsAt) >= refresh
	var ops []libovsdb.Operation
	for _, br := range rows.Bridges {
		if len(br.Mirrors) == 0 {
			continue
		}
		stats := ms.MirrorStats(br.Name)
		for _, mu := range br.Mirrors {
			row := rows.Mirrors[mu]
			if row == nil {
				continue
			}
			want := map[string]int{}
			if st, ok := stats[row.Name]; ok {
				want["tx_packets"], want["tx_bytes"] = int(st[0]), int(st[1])
			}
			if maps.Equal(want, row.Statistics) || len(want) == 0 && len(row.Statistics) == 0 {
				continue
			}
			if !full && len(row.Statistics) > 0 && len(want) > 0 {
				continue
			}
			n := &Mirror{UUID: row.UUID, Statistics: want}
			o, err := c.Update(n, &n.Statistics)
			if err != nil {
				return nil, fmt.Errorf("mirror %s: statistics: %w", row.Name, err)
			}
			ops = append(ops, o...)
		}
	}
	if full {
		m.mirrorStatsAt = time.Now()
	}
	return ops, nil
}

func (r *Reconciler) applyMirrors(bc *BridgeConfig) {
	ms, ok := r.sw.(MirrorSwitch)
	if !ok {
		if len(bc.Mirrors) > 0 {
			r.problemf(slog.LevelWarn, "bridge %s: mirrors are not supported by this switch", bc.Name)
		}
		return
	}
	if err := ms.SetMirrors(bc.Name, bc.Mirrors); err != nil {
		r.problemf(slog.LevelError, "bridge %s: mirrors: %v", bc.Name, err)
	}
}
