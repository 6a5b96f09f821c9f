package kernel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
	"golang.org/x/sys/unix"
)

// fakeDP is a Datapath with families but no sockets: enough to encode
// messages and decode replies without a kernel.
func fakeDP() *Datapath {
	return &Datapath{
		name:  "fake",
		index: 7,
		fams: &families{
			flow:   netlinkio.Family{Name: "ovs_flow", ID: 0x1e, Version: 1},
			packet: netlinkio.Family{Name: "ovs_packet", ID: 0x1f, Version: 1},
		},
	}
}

var testFrame = []byte{
	0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a, 0x08, 0x00,
	0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
	0, 7, 0, 9, 0, 8, 0, 0,
}

func testFlow() datapath.Flow {
	var m flow.Mask
	m.InPort, m.EthType, m.NwProto = ^uint32(0), 0xffff, 0xff
	m.IPv4Dst = [4]byte{255, 255, 255, 255}
	return datapath.Flow{
		UFID:    datapath.UFID{1, 2, 3},
		Key:     flow.Extract(testFrame, flow.Metadata{InPort: 3}),
		Mask:    m,
		Actions: datapath.AppendOutput(nil, 4),
	}
}

// flowMsg is a decoded flow request.
type flowMsg struct {
	hdr             netlinkio.Header
	cmd             uint8
	dpIndex         int
	attrs           map[uint16][]byte
	key             flow.Key
	mask            flow.Mask
	hasKey, hasMask bool
	ufidFlags       uint32
	hasClear        bool
}

func parseFlowMsg(t *testing.T, b []byte) flowMsg {
	t.Helper()
	it := netlinkio.NewMessageIter(b)
	if !it.Next() {
		t.Fatalf("no message: %v", it.Err())
	}
	var m flowMsg
	m.hdr = it.Header()
	cmd, _, rest, ok := netlinkio.Genl(it.Data())
	if !ok || len(rest) < 4 {
		t.Fatal("short message")
	}
	m.cmd = cmd
	m.dpIndex = int(binary.NativeEndian.Uint32(rest))
	m.attrs = map[uint16][]byte{}
	at := netlinkio.NewAttrIter(rest[4:])
	for at.Next() {
		m.attrs[at.Type()] = at.Data()
	}
	if at.Err() != nil {
		t.Fatal(at.Err())
	}
	if k, ok := m.attrs[flowAttrKey]; ok {
		m.hasKey = true
		if err := datapath.DecodeKey(k, &m.key); err != nil {
			t.Fatalf("DecodeKey: %v", err)
		}
	}
	if mk, ok := m.attrs[flowAttrMask]; ok {
		m.hasMask = true
		if err := datapath.DecodeMask(mk, &m.key, &m.mask); err != nil {
			t.Fatalf("DecodeMask: %v", err)
		}
	}
	if f, ok := m.attrs[flowAttrUFIDFlags]; ok {
		m.ufidFlags = binary.NativeEndian.Uint32(f)
	}
	_, m.hasClear = m.attrs[flowAttrClear]
	return m
}

func TestAppendPut(t *testing.T) {
	d := fakeDP()
	f := testFlow()
	fitted := f.Mask
	datapath.FitMask(&f.Key, &fitted)
	tests := []struct {
		name      string
		flags     datapath.PutFlags
		echo      bool
		wantCmd   uint8
		wantFlags uint16
		wantClear bool
	}{
		{"create only", datapath.PutCreate, false, flowCmdNew, netlinkio.FlagRequest | netlinkio.FlagCreate | netlinkio.FlagExcl, false},
		{"create or modify", 0, false, flowCmdNew, netlinkio.FlagRequest, false},
		{"both flags", datapath.PutCreate | datapath.PutModify, true, flowCmdNew, netlinkio.FlagRequest | netlinkio.FlagEcho, false},
		{"modify only", datapath.PutModify | datapath.PutZeroStats, false, flowCmdSet, netlinkio.FlagRequest, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b netlinkio.Batch
			d.appendPut(&b, &f, tt.flags, tt.echo)
			m := parseFlowMsg(t, b.Bytes())
			if m.cmd != tt.wantCmd || m.hdr.Flags != tt.wantFlags || m.hdr.Type != 0x1e || m.dpIndex != 7 {
				t.Errorf("cmd %d flags %#x type %#x dp %d; want cmd %d flags %#x", m.cmd, m.hdr.Flags, m.hdr.Type, m.dpIndex, tt.wantCmd, tt.wantFlags)
			}
			if !bytes.Equal(m.attrs[flowAttrUFID], f.UFID[:]) {
				t.Errorf("ufid % x", m.attrs[flowAttrUFID])
			}
			if m.key != f.Key || m.mask != fitted {
				t.Errorf("key/mask round trip:\n got %s\nwant %s", flow.Format(&m.key, &m.mask), flow.Format(&f.Key, &fitted))
			}
			if !bytes.Equal(m.attrs[flowAttrActions], f.Actions) {
				t.Errorf("actions % x", m.attrs[flowAttrActions])
			}
			if m.hasClear != tt.wantClear {
				t.Errorf("clear = %v, want %v", m.hasClear, tt.wantClear)
			}
			if tt.echo != (m.ufidFlags == ufidOmitAll) {
				t.Errorf("ufid flags %#x with echo %v", m.ufidFlags, tt.echo)
			}
		})
	}
}

func TestAppendPutNoCtZone(t *testing.T) {
	d := fakeDP()
	d.noCtZone = true
	f := testFlow()
	f.Mask.CtZone = 0xffff
	var b netlinkio.Batch
	d.appendPut(&b, &f, 0, false)
	m := parseFlowMsg(t, b.Bytes())
	for name, attrs := range map[string][]byte{"key": m.attrs[flowAttrKey], "mask": m.attrs[flowAttrMask]} {
		it := netlinkio.NewAttrIter(attrs)
		for it.Next() {
			if it.Type() == datapath.KeyAttrCtZone {
				t.Errorf("%s still has ct_zone", name)
			}
		}
	}
	if m.key != f.Key {
		t.Errorf("key changed: %s", flow.Format(&m.key, nil))
	}
}

func TestStripAttr(t *testing.T) {
	run := func(zone uint16) []byte {
		b := netlinkio.AppendU32(nil, 1, 5)
		b = netlinkio.AppendU16(b, datapath.KeyAttrCtZone, zone)
		return netlinkio.AppendU32(b, 2, 6)
	}
	without := netlinkio.AppendU32(netlinkio.AppendU32(nil, 1, 5), 2, 6)
	tests := []struct {
		name     string
		in       []byte
		onlyZero bool
		want     []byte
	}{
		{"zero stripped", run(0), true, without},
		{"nonzero kept", run(9), true, run(9)},
		{"nonzero stripped", run(9), false, without},
		{"malformed untouched", []byte{99, 0, 23, 0}, false, []byte{99, 0, 23, 0}},
		{"empty", nil, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]byte(nil), tt.in...)
			if got := stripAttr(in, 0, datapath.KeyAttrCtZone, tt.onlyZero); !bytes.Equal(got, tt.want) {
				t.Errorf("got % x\nwant % x", got, tt.want)
			}
		})
	}
}

func TestAppendExecute(t *testing.T) {
	d := fakeDP()
	var b netlinkio.Batch
	md := flow.Key{InPort: 3, Mark: 9, EthType: 0x0800, IPv4Src: [4]byte{1, 2, 3, 4}}
	d.appendExecute(&b, testFrame, &md, datapath.AppendOutput(nil, 4))
	it := netlinkio.NewMessageIter(b.Bytes())
	it.Next()
	cmd, _, rest, _ := netlinkio.Genl(it.Data())
	if it.Header().Type != 0x1f || cmd != packetCmdExecute {
		t.Fatalf("type %#x cmd %d", it.Header().Type, cmd)
	}
	at := netlinkio.NewAttrIter(rest[4:])
	var key flow.Key
	for at.Next() {
		switch at.Type() {
		case packetAttrPacket:
			if !bytes.Equal(at.Data(), testFrame) {
				t.Error("packet differs")
			}
		case packetAttrKey:
			if err := datapath.DecodeKey(at.Data(), &key); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want := datapath.MetadataKey(&md); key != want {
		t.Errorf("execute key carries headers: %s", flow.Format(&key, nil))
	}
}

func TestDecodeFlow(t *testing.T) {
	f := testFlow()
	b := appendOVSHeader(nil, 7)
	b = netlinkio.AppendAttr(b, flowAttrUFID, f.UFID[:])
	b = netlinkio.AppendAttr(b, flowAttrKey, datapath.AppendKey(nil, &f.Key))
	b = netlinkio.AppendAttr(b, flowAttrMask, datapath.AppendMask(nil, &f.Key, &f.Mask))
	b = netlinkio.AppendAttr(b, flowAttrActions, f.Actions)
	stats := binary.NativeEndian.AppendUint64(binary.NativeEndian.AppendUint64(nil, 5), 500)
	b = netlinkio.AppendAttr(b, flowAttrStats, stats)
	b = netlinkio.AppendU64(b, flowAttrUsed, 1234)
	b = netlinkio.AppendU8(b, flowAttrTCPFlags, 0x12)
	var got datapath.Flow
	if err := decodeFlow(b, &got); err != nil {
		t.Fatal(err)
	}
	fitted := f.Mask
	datapath.FitMask(&f.Key, &fitted)
	want := datapath.FlowStats{Packets: 5, Bytes: 500, Used: 1234, TCPFlags: 0x12}
	if got.UFID != f.UFID || got.Key != f.Key || got.Mask != fitted || !bytes.Equal(got.Actions, f.Actions) || got.Stats != want {
		t.Errorf("decodeFlow = %+v", got)
	}
	// Cut short of the ovs_header, and inside the last attribute's header.
	for _, n := range []int{0, 3, len(b) - 5} {
		var g datapath.Flow
		if err := decodeFlow(b[:n], &g); err == nil {
			t.Errorf("truncated to %d of %d bytes: no error", n, len(b))
		}
	}
	if got := decodeStats(append([]byte{1, 1, 0, 0}, b...)); got != want {
		t.Errorf("decodeStats = %+v", got)
	}
}

func TestParseVport(t *testing.T) {
	b := appendOVSHeader(nil, 7)
	b = netlinkio.AppendU32(b, vportAttrPortNo, 2)
	b = netlinkio.AppendU32(b, vportAttrType, uint32(datapath.VportVXLAN))
	b = netlinkio.AppendAttr(b, vportAttrName, []byte("vx0\x00"))
	b = netlinkio.AppendAttr(b, vportAttrUpcallPID, []byte{1, 0, 0, 0, 2, 0, 0, 0})
	b = netlinkio.AppendU32(b, vportAttrIfindex, 11)
	opts, start := netlinkio.BeginNested(nil, vportAttrOptions)
	opts = netlinkio.AppendU16(opts, tunnelAttrDstPort, 4789)
	b = append(b, netlinkio.EndNested(opts, start)...)
	st := make([]byte, 64)
	st[0] = 3 // rx_packets
	b = netlinkio.AppendAttr(b, vportAttrStats, st)
	v, err := parseVport(b)
	if err != nil {
		t.Fatal(err)
	}
	if v.dpIndex != 7 || v.PortNo != 2 || v.Type != datapath.VportVXLAN || v.Name != "vx0" || v.IfIndex != 11 ||
		v.DstPort != 4789 || len(v.UpcallPIDs) != 2 || v.UpcallPIDs[1] != 2 || v.Stats.RxPackets != 3 {
		t.Errorf("parseVport = %+v", v)
	}
	if _, err := parseVport(b[:2]); err == nil {
		t.Error("short vport message: no error")
	}
}

func TestParseDP(t *testing.T) {
	b := appendOVSHeader(nil, 9)
	b = netlinkio.AppendAttr(b, dpAttrName, []byte("dp0\x00"))
	b = netlinkio.AppendU32(b, dpAttrUserFeatures, datapath.DPFeaturePerCPUDispatch)
	st := make([]byte, 32)
	st[0], st[8], st[16], st[24] = 1, 2, 3, 4
	b = netlinkio.AppendAttr(b, dpAttrStats, st)
	mf := make([]byte, 32)
	mf[0], mf[8], mf[16] = 5, 6, 7
	b = netlinkio.AppendAttr(b, dpAttrMegaflowStats, mf)
	info, err := parseDP(b)
	want := datapath.Stats{Hit: 1, Missed: 2, Lost: 3, Flows: 4, MaskHit: 5, Masks: 6, CacheHit: 7}
	if err != nil || info.index != 9 || info.name != "dp0" || info.features != datapath.DPFeaturePerCPUDispatch || info.stats != want {
		t.Errorf("parseDP = %+v, %v", info, err)
	}
	if _, err := parseDP(nil); err == nil {
		t.Error("empty: no error")
	}
}

func TestMissingDP(t *testing.T) {
	err := missingDP(unix.ENODEV)
	if !errorsIs(err, unix.ENOENT) || !errorsIs(err, unix.ENODEV) {
		t.Errorf("missingDP(ENODEV) = %v; want ENOENT and ENODEV", err)
	}
	if missingDP(unix.EPERM) != unix.EPERM {
		t.Error("missingDP changed EPERM")
	}
}

// TestOperateEncodeAllocs: building a batch of flow puts allocates nothing
// once the batch has grown.
func TestOperateEncodeAllocs(t *testing.T) {
	d := fakeDP()
	f := testFlow()
	var b netlinkio.Batch
	run := func() {
		b.Reset()
		for range 50 {
			d.appendPut(&b, &f, datapath.PutCreate, false)
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("encoding 50 flow puts: %v allocs, want 0", n)
	}
}

// BenchmarkEncodeFlowPut is the whole netlink message of one flow put: the
// headers, UFID, key, mask (fitted) and actions.
func BenchmarkEncodeFlowPut(b *testing.B) {
	d := fakeDP()
	f := testFlow()
	var batch netlinkio.Batch
	b.ReportAllocs()
	for b.Loop() {
		batch.Reset()
		d.appendPut(&batch, &f, datapath.PutCreate, false)
	}
	b.SetBytes(int64(len(batch.Bytes())))
}

func FuzzDecodeFlow(f *testing.F) {
	fl := testFlow()
	b := appendOVSHeader(nil, 7)
	b = netlinkio.AppendAttr(b, flowAttrUFID, fl.UFID[:])
	b = netlinkio.AppendAttr(b, flowAttrKey, datapath.AppendKey(nil, &fl.Key))
	b = netlinkio.AppendAttr(b, flowAttrMask, datapath.AppendMask(nil, &fl.Key, &fl.Mask))
	b = netlinkio.AppendAttr(b, flowAttrActions, fl.Actions)
	f.Add(b)
	f.Add([]byte{0, 0, 0, 0, 5, 0, 4, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var fl datapath.Flow
		_ = decodeFlow(b, &fl)
		_ = decodeStats(b)
		_, _ = parseVport(b)
		_, _ = parseDP(b)
	})
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
