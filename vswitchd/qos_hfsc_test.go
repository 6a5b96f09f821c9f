package vswitchd

import (
	"testing"

	"github.com/govswitch/govswitch/ovsdb"
)

// hfscClasses bounds the rates as ovs-vswitchd's hfsc does, in bytes/s.
func TestHFSCClasses(t *testing.T) {
	tests := []struct {
		name   string
		cfg    ovsdb.QoSConfig
		root   hfscClass
		queues map[uint32]hfscClass
	}{
		// A queue's unset max-rate is the root's 10 Gbit/s wrapped to
		// 32 bits, 1410065408 bit/s, as ovs-vswitchd 3.1 computes it.
		{"no max-rate is 10 Gbit/s", ovsdb.QoSConfig{Type: "linux-hfsc", Queues: map[uint32]ovsdb.QueueConfig{0: {}}},
			hfscClass{1_250_000_000, 1_250_000_000}, map[uint32]hfscClass{0: {1, 176_258_176}}},
		{"queues within the root", ovsdb.QoSConfig{Type: "linux-hfsc", MaxRate: 3_000_000, Queues: map[uint32]ovsdb.QueueConfig{
			0: {MinRate: 2_000_000, MaxRate: 3_000_000},
			1: {MaxRate: 1_000_000},
			2: {MinRate: 8_000_000, MaxRate: 1_000_000}, // both above the root, max below min
		}}, hfscClass{375_000, 375_000}, map[uint32]hfscClass{0: {250_000, 375_000}, 1: {1, 125_000}, 2: {375_000, 375_000}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, qs := hfscClasses(tt.cfg)
			if root != tt.root || len(qs) != len(tt.queues) {
				t.Fatalf("root %+v queues %+v, want %+v %+v", root, qs, tt.root, tt.queues)
			}
			for id, q := range tt.queues {
				if qs[id] != q {
					t.Errorf("queue %d: %+v, want %+v", id, qs[id], q)
				}
			}
		})
	}
}

func TestHFSCCurve(t *testing.T) {
	b := hfscCurve(375_000)
	// struct tc_service_curve: m1, d, m2 (host order, little-endian here).
	want := []byte{
		0, 0, 0, 0, // m1
		0, 0, 0, 0, // d
		0xd8, 0xb8, 0x05, 0x00, // m2 375000 (0x5b8d8)
	}
	if string(b) != string(want) {
		t.Errorf("curve % x, want % x", b, want)
	}
}
