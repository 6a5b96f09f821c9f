package ovsdb

import (
	"fmt"
	"log/slog"
	"sort"

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
