package netflow

import (
	"bytes"
	"net"
	"testing"
	"time"
)

func sampleDatagram() []byte {
	b := AppendHeader(nil, &Header{Count: 1, SysUptime: 1000, UnixSecs: 2, UnixNsecs: 3, FlowSeq: 4, EngineType: 5, EngineID: 6})
	return AppendRecord(b, &Record{Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}, Input: 1, Output: 2,
		Packets: 7, Bytes: 700, First: 10, Last: 20, SrcPort: 1234, DstPort: 80, TCPFlags: 0x12, Proto: 6, Tos: 0x20})
}

// TestWire: the v5 layout, field by field.
func TestWire(t *testing.T) {
	want := []byte{
		0, 5, 0, 1, // version, count
		0, 0, 0x03, 0xe8, // sysuptime 1000
		0, 0, 0, 2, 0, 0, 0, 3, // unix secs, nsecs
		0, 0, 0, 4, // flow sequence
		5, 6, 0, 0, // engine type, id, sampling interval
		10, 0, 0, 1, 10, 0, 0, 2, 0, 0, 0, 0, // src, dst, nexthop
		0, 1, 0, 2, // input, output
		0, 0, 0, 7, 0, 0, 0x02, 0xbc, // packets, bytes
		0, 0, 0, 10, 0, 0, 0, 20, // first, last
		0x04, 0xd2, 0, 80, // ports
		0, 0x12, 6, 0x20, // pad, tcp flags, proto, tos
		0, 0, 0, 0, 0, 0, 0, 0, // AS numbers, masks, pad
	}
	if got := sampleDatagram(); !bytes.Equal(got, want) {
		t.Errorf("got  %x\nwant %x", got, want)
	}
	h, rs, err := Decode(want)
	if err != nil || h.EngineID != 6 || len(rs) != 1 || rs[0].Bytes != 700 || rs[0].TCPFlags != 0x12 {
		t.Errorf("decode: %+v %+v %v", h, rs, err)
	}
}

// TestExporter: updates of one flow make one record with their sum;
// ICMP's type and code go in the destination port; engine id in the
// interfaces with add_id_to_interface.
func TestExporter(t *testing.T) {
	col, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	e, err := NewExporter(Config{Targets: []string{col.LocalAddr().String()}, EngineID: 3, AddIDToInterface: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	k := Key{InPort: 1, Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}, Proto: 1, SrcPort: 8, DstPort: 0}
	e.Update(k, 2, 1, 98, 0, now)
	e.Update(k, 2, 4, 392, 0, now.Add(time.Second))
	e.Clear(k)
	e.Run(now)
	buf := make([]byte, 2048)
	col.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := col.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	_, rs, err := Decode(buf[:n])
	if err != nil || len(rs) != 1 {
		t.Fatalf("%+v %v", rs, err)
	}
	r := rs[0]
	if r.Packets != 5 || r.Bytes != 490 || r.DstPort != 8<<8 || r.SrcPort != 0 || r.Input != 3<<9|1 || r.Output != 3<<9|2 ||
		r.Last-r.First < 900 {
		t.Errorf("record %+v", r)
	}
	e.Close()
}

func FuzzDecode(f *testing.F) {
	f.Add(sampleDatagram())
	f.Add(AppendHeader(nil, &Header{}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, rs, err := Decode(b)
		if err != nil {
			return
		}
		e := AppendHeader(nil, &h)
		for i := range rs {
			e = AppendRecord(e, &rs[i])
		}
		// Padding bytes are not kept; everything else is.
		if len(e) != len(b) {
			t.Fatalf("re-encoded %d bytes of %d", len(e), len(b))
		}
	})
}

// TestActiveTimeout: an active flow is reported every active timeout
// with the counts since the last report, and forgotten once a timeout
// passes with no update.
func TestActiveTimeout(t *testing.T) {
	col, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	e, err := NewExporter(Config{Targets: []string{col.LocalAddr().String()}, ActiveTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	t0 := time.Now()
	k := Key{InPort: 1, Proto: 17, SrcPort: 1, DstPort: 2}
	e.Update(k, 2, 3, 300, 0, t0)
	e.Run(t0.Add(30 * time.Minute)) // not yet
	e.Update(k, 2, 2, 200, 0, t0.Add(40*time.Minute))
	e.Run(t0.Add(61 * time.Minute))
	e.Update(k, 2, 1, 100, 0, t0.Add(62*time.Minute))
	e.Run(t0.Add(122 * time.Minute))
	e.Run(t0.Add(183 * time.Minute)) // idle for a timeout: forgotten
	if n := e.Flows(); n != 0 {
		t.Errorf("%d flows kept after an idle timeout", n)
	}
	buf := make([]byte, 2048)
	var got []uint32
	col.SetReadDeadline(time.Now().Add(5 * time.Second))
	for len(got) < 2 {
		n, err := col.Read(buf)
		if err != nil {
			t.Fatalf("records %v: %v", got, err)
		}
		_, rs, _ := Decode(buf[:n])
		for _, r := range rs {
			got = append(got, r.Packets)
		}
	}
	if got[0] != 5 || got[1] != 1 {
		t.Errorf("reports of %v packets, want 5 then 1", got)
	}
}
