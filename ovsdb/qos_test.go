package ovsdb

import (
	"maps"
	"strings"
	"testing"
)

// buildQoS reads every type ovs-vswitchd 3.1 sets up on Linux: the
// classless ones' settings as Params and no queues, htb and hfsc with
// queue 0 even when the row has none; other types are refused.
func TestBuildQoSTypes(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, c := range []struct {
		name     string
		qos      QoS
		want     QoSConfig
		problems []string // each a substring of one Problem, in order
	}{
		{"htb with no queue 0", QoS{Type: "linux-htb", OtherConfig: map[string]string{"max-rate": "3000000"}, Queues: map[int]string{1: "q1"}},
			QoSConfig{Type: "linux-htb", MaxRate: 3000000, Queues: map[uint32]QueueConfig{0: {}, 1: {MinRate: 1000}}, Queue0Implicit: true}, nil},
		{"hfsc with queue 0", QoS{Type: "linux-hfsc", Queues: map[int]string{0: "q1"}},
			QoSConfig{Type: "linux-hfsc", Queues: map[uint32]QueueConfig{0: {MinRate: 1000}}}, nil},
		{"netem reads its keys only", QoS{Type: "linux-netem", OtherConfig: map[string]string{"latency": "20000", "loss": "10", "max-rate": "5"}},
			QoSConfig{Type: "linux-netem", Params: map[string]uint64{"latency": 20000, "loss": 10}}, nil},
		{"fq_codel", QoS{Type: "linux-fq_codel", OtherConfig: map[string]string{"target": "1", "limit": "2", "interval": "3", "flows": "4", "quantum": "5"}},
			QoSConfig{Type: "linux-fq_codel", Params: map[string]uint64{"target": 1, "limit": 2, "interval": 3, "flows": 4, "quantum": 5}}, nil},
		{"sfq's queues are ignored, loudly", QoS{Type: "linux-sfq", Queues: map[int]string{0: "q1"}},
			QoSConfig{Type: "linux-sfq"}, []string{"linux-sfq has no queues"}},
		{"codel's bad number", QoS{Type: "linux-codel", OtherConfig: map[string]string{"target": "5ms"}},
			QoSConfig{Type: "linux-codel", Params: map[string]uint64{"target": 0}}, []string{`target="5ms" is not a number`}},
		{"noop", QoS{Type: "linux-noop", OtherConfig: map[string]string{"quantum": "1"}}, QoSConfig{Type: "linux-noop"}, nil},
		{"linux-default is not an OVS 3.1 type", QoS{Type: "linux-default"}, QoSConfig{}, []string{`QoS type "linux-default" is not supported`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			qos := c.qos
			r := &Rows{
				Ports:      map[string]*Port{"p": {Name: "p1", Interfaces: []string{"i"}, QoS: str("qos")}},
				Interfaces: map[string]*Interface{"i": {Name: "p1"}},
				QoS:        map[string]*QoS{"qos": &qos},
				Queues:     map[string]*Queue{"q1": {OtherConfig: map[string]string{"min-rate": "1000"}}},
			}
			var problems []string
			got := buildQoS(r, &problems)
			if len(problems) != len(c.problems) {
				t.Fatalf("problems %q, want %q", problems, c.problems)
			}
			for i, p := range c.problems {
				if !strings.Contains(problems[i], p) {
					t.Errorf("problem %q lacks %q", problems[i], p)
				}
			}
			if c.want.Type == "" {
				if len(got) != 0 {
					t.Errorf("refused type gives %+v", got)
				}
				return
			}
			if g := got["p1"]; !g.Equal(c.want) || !maps.Equal(g.Params, c.want.Params) {
				t.Errorf("%+v, want %+v", g, c.want)
			}
		})
	}
}
