package ovsdb

import (
	"fmt"
	"maps"
	"sort"

	libovsdb "github.com/ovn-org/libovsdb/ovsdb"
)

// The Datapath table: one row per datapath type, named by the
// Open_vSwitch row's datapaths column (ovn-controller creates the row for
// br-int's type). The switch fills its capabilities column with what the
// datapath of that type supports, as ovs-vswitchd 3.1 does, and clients
// read it: ovn-controller looks there for ct_zero_snat.

// DatapathCapabilities is implemented by a Switch that reports datapath
// capabilities. Capabilities returns the capabilities column for datapath
// type typ ("system" for an empty type), and false when the switch has no
// datapath of that type open (the row is then left as it is, as
// ovs-vswitchd leaves rows of types it has no datapath of).
type DatapathCapabilities interface {
	Capabilities(typ string) (map[string]string, bool)
}

// datapathUpdates returns the updates that bring the capabilities of the
// Datapath rows root names in line with what sw reports.
func datapathUpdates(c *dbClient, sw Switch, root *OpenvSwitch) ([]libovsdb.Operation, error) {
	dc, ok := sw.(DatapathCapabilities)
	if !ok || root == nil || len(root.Datapaths) == 0 {
		return nil, nil
	}
	t := c.Cache().Table(TableDatapath)
	if t == nil {
		return nil, nil
	}
	types := make([]string, 0, len(root.Datapaths))
	for typ := range root.Datapaths {
		types = append(types, typ)
	}
	sort.Strings(types)
	var ops []libovsdb.Operation
	for _, typ := range types {
		uuid := root.Datapaths[typ]
		cur, _ := t.Row(uuid).(*Datapath)
		if cur == nil {
			continue // not in the cache yet: the next pass
		}
		want, ok := dc.Capabilities(typ)
		if !ok || maps.Equal(cur.Capabilities, want) {
			continue
		}
		row := &Datapath{UUID: uuid, Capabilities: want}
		o, err := c.Update(row, &row.Capabilities)
		if err != nil {
			return nil, fmt.Errorf("datapath %s: capabilities: %w", typ, err)
		}
		ops = append(ops, o...)
	}
	return ops, nil
}
