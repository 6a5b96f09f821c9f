package ovsdb

import (
	"fmt"
	"maps"

	libovsdb "github.com/ovn-org/libovsdb/ovsdb"
)

// The status columns STP and RSTP write (stp.go, rstp.go) are written the
// same way; treeColumns says which columns and what changes may wait.

// treeColumns names one tree's status columns.
type treeColumns struct {
	name       string // the bridge column, for errors
	bridge     func(*Bridge) *map[string]string
	portStatus func(*Port) *map[string]string
	portStats  func(*Port) *map[string]int
	// waits reports whether a port's status want, differing from have
	// or with statistics that differ, may wait for the next full write
	// (one a refresh period): the counters and times alone changed.
	// statsSame says whether the statistics are the same, bothStats
	// whether both have some.
	waits func(want, have map[string]string, statusSame, statsSame, bothStats bool) bool
}

// treeStatusUpdates returns the writes of the bridges' and their ports'
// status columns cols that differ from the rows, as status reports them
// (running false: the bridge has no tree, its columns go empty). full
// says whether this is a refresh period's full write.
func treeStatusUpdates(c *dbClient, rows *Rows, cols treeColumns, full bool,
	status func(bridge string) (map[string]string, map[string]STPPortStatus, bool)) ([]libovsdb.Operation, error) {
	var ops []libovsdb.Operation
	for _, br := range rows.Bridges {
		st, ports, running := status(br.Name)
		if !running {
			st = map[string]string{}
		}
		if have := *cols.bridge(br); !maps.Equal(st, have) && (len(have) > 0 || len(st) > 0) {
			b := &Bridge{UUID: br.UUID}
			*cols.bridge(b) = st
			o, err := c.Update(b, cols.bridge(b))
			if err != nil {
				return nil, fmt.Errorf("bridge %s: %s: %w", br.Name, cols.name, err)
			}
			ops = append(ops, o...)
		}
		for _, pu := range br.Ports {
			p := rows.Ports[pu]
			if p == nil {
				continue
			}
			ps := ports[p.Name]
			if ps.Status == nil {
				ps.Status = map[string]string{}
			}
			if ps.Statistics == nil {
				ps.Statistics = map[string]int{}
			}
			haveStatus, haveStats := *cols.portStatus(p), *cols.portStats(p)
			statusSame := maps.Equal(ps.Status, haveStatus) || len(ps.Status) == 0 && len(haveStatus) == 0
			statsSame := maps.Equal(ps.Statistics, haveStats) || len(ps.Statistics) == 0 && len(haveStats) == 0
			if statusSame && statsSame {
				continue
			}
			if !full && cols.waits(ps.Status, haveStatus, statusSame, statsSame, len(haveStats) > 0 && len(ps.Statistics) > 0) {
				continue
			}
			n := &Port{UUID: p.UUID}
			*cols.portStatus(n), *cols.portStats(n) = ps.Status, ps.Statistics
			o, err := c.Update(n, cols.portStatus(n), cols.portStats(n))
			if err != nil {
				return nil, fmt.Errorf("port %s: %s: %w", p.Name, cols.name, err)
			}
			ops = append(ops, o...)
		}
	}
	return ops, nil
}
