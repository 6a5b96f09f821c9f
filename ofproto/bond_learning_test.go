package ofproto

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
)

func TestAppendLearningPacket(t *testing.T) {
	mac := [6]byte{0x0a, 0, 0, 0, 0, 3}
	want := []byte{
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // to broadcast
		0x0a, 0, 0, 0, 0, 3, // from the learned address
		0x81, 0x00, 0x00, 0x0a, // VLAN 10, VID only
		0x80, 0x35, // RARP
		0x00, 0x01, // hardware: Ethernet
		0x08, 0x00, // protocol: IPv4
		0x06, 0x04, // address lengths
		0x00, 0x03, // reverse request
		0x0a, 0, 0, 0, 0, 3, // sender hardware address
		0, 0, 0, 0, // sender protocol address
		0x0a, 0, 0, 0, 0, 3, // target hardware address
		0, 0, 0, 0, // target protocol address
	}
	if got := appendLearningPacket(nil, mac, 10); !bytes.Equal(got, want) {
		t.Errorf("VLAN 10:\n got %x\nwant %x", got, want)
	}
	untagged := append(append([]byte(nil), want[:12]...), want[16:]...)
	if got := appendLearningPacket(nil, mac, 0); !bytes.Equal(got, untagged) || len(got) != rarpLen {
		t.Errorf("untagged:\n got %x\nwant %x", got, untagged)
	}
	k := flow.Extract(untagged, flow.Metadata{})
	if k.EthType != EthTypeRARP || k.EthSrc != mac {
		t.Errorf("parsed as %+v", k)
	}
}

// execRecorder is a datapath that records executed packets; nothing
// else of it may be called.
type execRecorder struct {
	datapath.Datapath
	mu   sync.Mutex
	sent []execRecord
	ch   chan struct{}
}

type execRecord struct {
	frame   []byte
	actions string
}

func (r *execRecorder) Execute(packet []byte, _ *flow.Key, actions []byte) error {
	r.mu.Lock()
	r.sent = append(r.sent, execRecord{append([]byte(nil), packet...), datapath.FormatActions(actions)})
	r.mu.Unlock()
	select {
	case r.ch <- struct{}{}:
	default:
	}
	return nil
}

// wait returns the packets sent once n have been, or fails.
func (r *execRecorder) wait(t *testing.T, n int) []execRecord {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		r.mu.Lock()
		if len(r.sent) >= n {
			s := r.sent
			r.sent = nil
			r.mu.Unlock()
			// More than n would be wrong too: give them a moment.
			time.Sleep(100 * time.Millisecond)
			r.mu.Lock()
			s = append(s, r.sent...)
			r.sent = nil
			r.mu.Unlock()
			return s
		}
		r.mu.Unlock()
		select {
		case <-r.ch:
		case <-deadline:
			t.Fatalf("%d learning packets sent, want %d", len(r.sent), n)
		}
	}
}

// TestBondLearningPackets: a member lost or a new active member makes
// the bond send a RARP from each address learned off the bond, out of the
// member it now goes by; none for addresses on the bond.
func TestBondLearningPackets(t *testing.T) {
	for _, mode := range []BondMode{BondActiveBackup, BondBalanceSLB} {
		t.Run(mode.String(), func(t *testing.T) {
			rec := &execRecorder{ch: make(chan struct{}, 1)}
			b, _ := bondBridgeDP(t, mode, rec)
			// The bond's first active member asked for learning packets
			// (none: nothing is learned yet); let the runner take that.
			bd := b.Ports.Snapshot().bondNamed("bond0").bond
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				bd.mu.Lock()
				pending := bd.learn != nil
				bd.mu.Unlock()
				if !pending {
					time.Sleep(50 * time.Millisecond) // and send what it took
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the runner never took the first learning request")
				}
			}
			m3, m4, mb := [6]byte{0x0a, 0, 0, 0, 0, 3}, [6]byte{0x0a, 0, 0, 0, 0, 4}, [6]byte{0x0a, 0, 0, 0, 0, 0xb}
			now := time.Now()
			b.MAC.Learn(0, m3, 3, now)
			b.MAC.Learn(10, m4, 4, now)
			b.MAC.Learn(0, mb, 1, now) // on the bond (its representative b1)

			setLink(t, b, "b1", true)
			got := rec.wait(t, 2)
			if len(got) != 2 {
				t.Fatalf("b1 down: sent %d packets, want 2: %+v", len(got), got)
			}
			seen := map[string]string{}
			for _, r := range got {
				seen[string(r.frame)] = r.actions
			}
			for _, w := range []struct {
				mac  [6]byte
				vlan uint16
			}{{m3, 0}, {m4, 10}} {
				f := appendLearningPacket(nil, w.mac, w.vlan)
				if a, ok := seen[string(f)]; !ok || a != "12" {
					t.Errorf("b1 down: learning packet of %x vlan %d: sent %t with actions %q, want out of b2 (12)", w.mac, w.vlan, ok, a)
				}
			}

			// b1 back, and made active: the addresses go by b1 (in SLB,
			// those whose bucket it takes).
			setLink(t, b, "b1", false)
			if _, err := b.SetActiveMember("bond0", "b1"); err != nil {
				t.Fatal(err)
			}
			got = rec.wait(t, 2)
			if len(got) != 2 {
				t.Fatalf("set-active-member b1: sent %d packets, want 2: %+v", len(got), got)
			}
			st := b.Ports.Snapshot().bondNamed("bond0")
			for _, r := range got {
				k := flow.Extract(r.frame, flow.Metadata{})
				want := "11"
				if mode == BondBalanceSLB {
					want = itoa(st.outputMember(k.EthSrc, k.VLANs[0].TCI&0xfff).DPPort)
				}
				if r.actions != want {
					t.Errorf("set-active-member b1: learning packet of %x out %s, want %s", k.EthSrc, r.actions, want)
				}
			}
		})
	}
}

// TestBondLearningNotNegotiated: a LACP-negotiated bond sends none, one
// falling back to active-backup does.
func TestBondLearningNotNegotiated(t *testing.T) {
	b, _, bd := lacpBridge(t, BondBalanceTCP, true)
	negotiate(t, b, bd)
	if st := b.Ports.Snapshot().bonds[bd]; st.mayLearn() {
		t.Error("a negotiated LACP bond may send learning packets")
	}
	st := &bondState{bond: bd, lacp: LACPConfigured, active: &Port{Name: "b1"}}
	if !st.mayLearn() {
		t.Error("a bond in lacp-fallback-ab may not send learning packets")
	}
	st.active = nil
	if st.mayLearn() {
		t.Error("a bond with no active member may send learning packets")
	}
}
