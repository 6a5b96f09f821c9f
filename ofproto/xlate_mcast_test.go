package ofproto

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/maclearn"
	"github.com/govswitch/govswitch/ofproto/mcast"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// mcastBridge is four ports p1..p4 (datapath 11..14) behind NORMAL, with
// snooping on.
func mcastBridge(t testing.TB) (*Xlator, *mcast.Table) {
	t.Helper()
	ports := NewPorts()
	for i := uint32(1); i <= 4; i++ {
		if err := ports.Add(Port{OFPort: i, DPPort: 10 + i, Name: "p" + string(rune('0'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	x := &Xlator{Tables: NewTables(), Ports: ports, MAC: maclearn.New(0, 0)}
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Output(openflow.PortNormal, 0)))
	ms := mcast.New()
	x.mcast.Store(ms)
	return x, ms
}

// igmpPacket returns the key and frame of an IGMP message of type typ for
// group grp, from host src (its MAC's last byte) on datapath port dp.
func igmpPacket(dp uint32, src byte, typ byte, grp [4]byte) (flow.Key, []byte) {
	dst := [4]byte{224, 0, 0, 22}
	if typ != mcast.IGMPv3Report {
		dst = grp
	}
	if typ == mcast.IGMPQuery {
		dst = [4]byte{224, 0, 0, 1}
	}
	msg := []byte{typ, 0, 0, 0, grp[0], grp[1], grp[2], grp[3]}
	if typ == mcast.IGMPv3Report {
		msg = []byte{typ, 0, 0, 0, 0, 0, 0, 1, mcast.ChangeToExclude, 0, 0, 0, grp[0], grp[1], grp[2], grp[3]}
	}
	var sum uint32
	for i := 0; i < len(msg); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(msg[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(msg[2:], ^uint16(sum))
	ethDst := [6]byte{0x01, 0x00, 0x5e, dst[1] & 0x7f, dst[2], dst[3]}
	ethSrc := [6]byte{0x02, 0, 0, 0, 0, src}
	frame := append(append([]byte{}, ethDst[:]...), ethSrc[:]...)
	frame = append(frame, 0x08, 0x00, 0x45, 0, 0, byte(20+len(msg)), 0, 0, 0, 0, 1, 2, 0, 0, 10, 0, 0, src, dst[0], dst[1], dst[2], dst[3])
	frame = append(frame, msg...)
	k := flow.Key{InPort: dp, EthSrc: ethSrc, EthDst: ethDst, EthType: flow.EthTypeIPv4,
		IPv4Src: [4]byte{10, 0, 0, src}, IPv4Dst: dst, NwProto: 2, NwTTL: 1}
	return k, frame
}

func mcastData(dp uint32, src byte, grp [4]byte) flow.Key {
	return flow.Key{InPort: dp, EthSrc: [6]byte{0x02, 0, 0, 0, 0, src}, EthDst: [6]byte{0x01, 0x00, 0x5e, grp[1] & 0x7f, grp[2], grp[3]},
		EthType: flow.EthTypeIPv4, IPv4Src: [4]byte{10, 0, 0, src}, IPv4Dst: grp, NwProto: flow.IPProtoUDP, NwTTL: 1, TpSrc: 5000, TpDst: 5001}
}

func TestNormalMcastSnooping(t *testing.T) {
	x, ms := mcastBridge(t)
	var out Out
	g1 := [4]byte{239, 1, 1, 1}
	send := func(k flow.Key, frame []byte) string {
		t.Helper()
		x.TranslatePacket(&k, frame, t0, true, &out)
		return datapath.FormatActions(out.Actions)
	}

	// A report from p1: slow-pathed, learned, sent to no router.
	k, f := igmpPacket(11, 1, mcast.IGMPv2Report, g1)
	if got := send(k, f); got != "drop" || out.Slow&datapath.SlowAction == 0 || out.WC.NwProto != 0xff {
		t.Errorf("report: actions %q slow %x wc.proto %x", got, out.Slow, out.WC.NwProto)
	}
	if m, ok := ms.Members(mcast.IPv4Group(0, g1), nil); !ok || len(m) != 1 || m[0] != 1 {
		t.Fatalf("report not learned: %v", m)
	}
	// An IGMPv3 report from p2 for the same group.
	k, f = igmpPacket(12, 2, mcast.IGMPv3Report, g1)
	send(k, f)
	// Data from p3 goes to the members only, and matches the group.
	if got := send(mcastData(13, 3, g1), nil); got != "11,12" || out.WC.IPv4Dst != ones4 || out.Slow != 0 {
		t.Errorf("data to members: %q wc.dst %v slow %x", got, out.WC.IPv4Dst, out.Slow)
	}
	// A member sending to its own group: the other member.
	if got := send(mcastData(11, 1, g1), nil); got != "12" {
		t.Errorf("data from a member: %q", got)
	}
	// Unregistered: flooded; link-local: flooded.
	if got := send(mcastData(13, 3, [4]byte{239, 9, 9, 9}), nil); got != "11,12,14" {
		t.Errorf("unregistered: %q", got)
	}
	if got := send(mcastData(13, 3, [4]byte{224, 0, 0, 251}), nil); got != "11,12,14" {
		t.Errorf("224.0.0.251: %q", got)
	}
	// A query from p4 floods and makes p4 a router port: data then goes
	// there too, and reports go there.
	k, f = igmpPacket(14, 4, mcast.IGMPQuery, [4]byte{})
	if got := send(k, f); got != "11,12,13" {
		t.Errorf("query: %q", got)
	}
	if got := send(mcastData(13, 3, g1), nil); got != "11,12,14" {
		t.Errorf("data with a router: %q", got)
	}
	k, f = igmpPacket(13, 3, mcast.IGMPv2Report, [4]byte{239, 2, 2, 2})
	if got := send(k, f); got != "14" {
		t.Errorf("report with a router: %q", got)
	}
	// Without flooding of unregistered groups: the router (and flood)
	// ports only.
	ms.Configure(0, 0, false)
	ms.SetPorts([]uint32{2}, []uint32{1})
	if got := send(mcastData(13, 3, [4]byte{239, 9, 9, 9}), nil); got != "14,12" {
		t.Errorf("unregistered, not flooded: %q", got)
	}
	// Flood-reports port p1 takes the reports.
	k, f = igmpPacket(13, 3, mcast.IGMPv2Report, [4]byte{239, 2, 2, 2})
	if got := send(k, f); got != "14,11" {
		t.Errorf("report with flood-reports: %q", got)
	}
	// p1 leaves... but it is a flood-reports port, so stays; p2's v3
	// membership stays too. Data: members, flood port p2, router p4.
	k, f = igmpPacket(11, 1, mcast.IGMPv2Leave, g1)
	send(k, f)
	if got := send(mcastData(13, 3, g1), nil); got != "11,12,12,14" {
		t.Errorf("after a leave from a flood-reports port: %q", got)
	}
	ms.SetPorts(nil, nil)
	send(k, f)
	if got := send(mcastData(13, 3, g1), nil); got != "12,14" {
		t.Errorf("after a leave: %q", got)
	}
	// Without the packet (revalidation) an IGMP flow is still slow.
	k, _ = igmpPacket(11, 1, mcast.IGMPv2Report, g1)
	x.Translate(&k, t0, false, &out)
	if out.Slow == 0 {
		t.Errorf("IGMP without its packet not slow-pathed")
	}
	// Broadcast and non-IP multicast do not take the snooping path.
	b := mcastData(13, 3, g1)
	b.EthDst = ones6
	if send(b, nil); out.WC.IPv4Dst != ([4]byte{}) {
		t.Errorf("broadcast took the multicast path")
	}
}

func TestNormalMcastAllocs(t *testing.T) {
	x, ms := mcastBridge(t)
	ms.Join(mcast.IPv4Group(0, [4]byte{239, 1, 1, 1}), 1, t0)
	ms.AddMrouter(0, 4, t0)
	out := Out{Actions: make([]byte, 0, 1024)}
	keys := []flow.Key{mcastData(13, 3, [4]byte{239, 1, 1, 1}), mcastData(13, 3, [4]byte{239, 1, 1, 2}), mcastData(12, 2, [4]byte{224, 0, 0, 9})}
	rk, rf := igmpPacket(12, 2, mcast.IGMPv2Report, [4]byte{239, 1, 1, 1})
	now := t0
	n := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		for i := range keys {
			x.Translate(&keys[i], now, true, &out)
		}
		x.TranslatePacket(&rk, rf, now, true, &out) // a refresh
	})
	if n != 0 {
		t.Errorf("multicast NORMAL allocates %v per run", n)
	}
}

func TestSetMcastSnoopingFlushesGonePorts(t *testing.T) {
	prov := dummy.New()
	if _, err := prov.AddNetdev("p1"); err != nil {
		t.Fatal(err)
	}
	dp, err := prov.Create("br0", datapath.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBridge(BridgeConfig{Name: "br0"}, dp)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	if _, err := b.AddPort("p1", "system", 1); err != nil {
		t.Fatal(err)
	}
	b.SetMcastSnooping(&McastSnooping{})
	ms := b.McastSnooping()
	g := mcast.IPv4Group(0, [4]byte{239, 1, 1, 1})
	ms.Join(g, 1, t0)
	ms.Join(g, 77, t0) // no such port
	b.SetMcastSnooping(&McastSnooping{Aging: time.Minute})
	if m, _ := ms.Members(g, nil); len(m) != 1 || m[0] != 1 || b.McastSnooping() != ms || ms.Aging() != time.Minute {
		t.Errorf("members %v after reconfiguration", m)
	}
	// Flood ports by name; a bond by its lowest numbered member.
	bond := &Bond{Config: BondConfig{Name: "bond0"}}
	for _, n := range []uint32{7, 5} {
		if err := b.Ports.Add(Port{OFPort: n, DPPort: 100 + n, Name: fmt.Sprintf("m%d", n), Bond: bond}); err != nil {
			t.Fatal(err)
		}
	}
	b.SetMcastSnooping(&McastSnooping{Flood: []string{"bond0", "p1", "nosuch"}, FloodReports: []string{"m7"}})
	if f, r := ms.FloodPorts(nil), ms.FloodReportsPorts(nil); fmt.Sprint(f, r) != "[1 5] [7]" {
		t.Errorf("flood ports %v, flood-reports ports %v", f, r)
	}
	b.SetMcastSnooping(nil)
	if b.McastSnooping() != nil {
		t.Errorf("snooping still on")
	}
}

// BenchmarkNormalMcast translates multicast data to a group with two
// members and a router port, beside BenchmarkXlateNormal's unicast.
func BenchmarkNormalMcast(b *testing.B) {
	x, ms := mcastBridge(b)
	g := mcast.IPv4Group(0, [4]byte{239, 1, 1, 1})
	ms.Join(g, 1, t0)
	ms.Join(g, 2, t0)
	ms.AddMrouter(0, 4, t0)
	out := Out{Actions: make([]byte, 0, 1024)}
	k := mcastData(13, 3, [4]byte{239, 1, 1, 1})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		k.TpSrc = uint16(i)
		x.Translate(&k, t0, true, &out)
	}
}
