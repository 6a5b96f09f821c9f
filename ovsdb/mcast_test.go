package ovsdb

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseMcast(t *testing.T) {
	ports := map[string]*Port{
		"u1": {Name: "p1", OtherConfig: map[string]string{"mcast-snooping-flood": "true"}},
		"u2": {Name: "p2", OtherConfig: map[string]string{"mcast-snooping-flood-reports": "true", "mcast-snooping-flood": "false"}},
		"u3": {Name: "p3", OtherConfig: map[string]string{"mcast-snooping-flood": "yes"}},
	}
	tests := []struct {
		name     string
		br       Bridge
		want     *McastConfig
		problems []string
	}{
		{name: "off", br: Bridge{Name: "br0", OtherConfig: map[string]string{"mcast-snooping-aging-time": "30"}, Ports: []string{"u1"}}},
		{name: "defaults", br: Bridge{Name: "br0", McastSnoopingEnable: true}, want: &McastConfig{}},
		{name: "all", br: Bridge{Name: "br0", McastSnoopingEnable: true, Ports: []string{"u1", "u2", "u3"}, OtherConfig: map[string]string{
			"mcast-snooping-aging-time": "30", "mcast-snooping-table-size": "100", "mcast-snooping-disable-flood-unregistered": "true"}},
			want:     &McastConfig{Aging: 30 * time.Second, TableSize: 100, DisableFloodUnregistered: true, Flood: []string{"p1"}, FloodReports: []string{"p2"}},
			problems: []string{`port p3 other_config:mcast-snooping-flood="yes"`}},
		{name: "bad numbers", br: Bridge{Name: "br0", McastSnoopingEnable: true, OtherConfig: map[string]string{
			"mcast-snooping-aging-time": "-1", "mcast-snooping-table-size": "many"}},
			want:     &McastConfig{},
			problems: []string{`mcast-snooping-aging-time="-1"`, `mcast-snooping-table-size="many"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bc BridgeConfig
			var problems []string
			parseMcast(&Rows{Ports: ports}, &tt.br, &bc, &problems)
			if !reflect.DeepEqual(bc.Runtime.Mcast, tt.want) {
				t.Errorf("got %+v, want %+v", bc.Runtime.Mcast, tt.want)
			}
			got := strings.Join(problems, "\n")
			if len(problems) != len(tt.problems) {
				t.Errorf("problems:\n%s\nwant %q", got, tt.problems)
			}
			for _, w := range tt.problems {
				if !strings.Contains(got, w) {
					t.Errorf("no problem %s in:\n%s", w, got)
				}
			}
		})
	}
}
