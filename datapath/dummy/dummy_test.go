package dummy

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/datapath/datapathtest"
	"github.com/govswitch/govswitch/flow"
	"golang.org/x/sys/unix"
)

// link is a Netdev seen from the test's end.
type link struct{ dev *Netdev }

func (l link) Name() string            { return l.dev.Name() }
func (l link) Send(frame []byte) error { return l.dev.Send(frame) }
func (l link) Recv(timeout time.Duration, match func([]byte) bool) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	for {
		f, err := l.dev.Recv(time.Until(deadline))
		if err != nil {
			return nil, err
		}
		if match == nil || match(f) {
			return f, nil
		}
	}
}

var names atomic.Uint32

func harness(p *Provider) datapathtest.Harness {
	return datapathtest.Harness{
		Provider:   p,
		DPName:     func(t *testing.T) string { return fmt.Sprintf("dp%d", names.Add(1)) },
		WantPerCPU: true,
		Timeout:    2 * time.Second,
		NewLink: func(t *testing.T) datapathtest.Link {
			dev, err := p.AddNetdev(fmt.Sprintf("veth%d", names.Add(1)))
			if err != nil {
				t.Fatal(err)
			}
			return link{dev}
		},
	}
}

func TestContract(t *testing.T) {
	datapathtest.Run(t, harness(New()))
}

func TestNetdevErrors(t *testing.T) {
	p := New()
	d, err := p.AddNetdev("eth0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddNetdev("eth0"); err == nil {
		t.Error("AddNetdev twice succeeded")
	}
	if err := d.Send([]byte{1}); err == nil {
		t.Error("Send on a detached netdev succeeded")
	}
	if _, err := d.Recv(time.Millisecond); !os.IsTimeout(err) && err == nil {
		t.Errorf("Recv on idle netdev: %v", err)
	}
	dp, err := p.Create("eth0", datapath.Config{})
	if err == nil {
		dp.Close()
		t.Error("Create over an existing device name succeeded")
	}
}

// fixture is a dummy datapath with two netdev ports.
type fixture struct {
	p      *Provider
	dp     *Datapath
	a, b   *Netdev
	pa, pb uint32
}

func newFixture(t *testing.T, cfg datapath.Config) *fixture {
	t.Helper()
	p := New()
	d, err := p.Create("dp", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	f := &fixture{p: p, dp: d.(*Datapath)}
	for _, x := range []struct {
		dev  **Netdev
		port *uint32
		name string
	}{{&f.a, &f.pa, "a"}, {&f.b, &f.pb, "b"}} {
		dev, err := p.AddNetdev(x.name)
		if err != nil {
			t.Fatal(err)
		}
		v, err := d.AddVport(datapath.VportSpec{Name: x.name, Type: datapath.VportNetdev})
		if err != nil {
			t.Fatal(err)
		}
		*x.dev, *x.port = dev, v.PortNo
	}
	return f
}

var udp = []byte{
	0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a, 0x08, 0x00,
	0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 17, 0x66, 0xbd, 10, 0, 0, 1, 10, 0, 0, 2,
	0, 7, 0, 9, 0, 8, 0, 0,
}

func matchInPort(in uint32) (flow.Key, flow.Mask) {
	k := flow.Extract(udp, flow.Metadata{InPort: in})
	var m flow.Mask
	m.InPort, m.EthType, m.RecircID = ^uint32(0), 0xffff, ^uint32(0)
	return k, m
}

func TestRecirc(t *testing.T) {
	f := newFixture(t, datapath.Config{})
	k, m := matchInPort(f.pa)
	first := datapath.Flow{UFID: datapath.UFID{1}, Key: k, Mask: m, Actions: datapath.AppendRecirc(nil, 5)}
	k.RecircID = 5
	second := datapath.Flow{UFID: datapath.UFID{2}, Key: k, Mask: m, Actions: datapath.AppendOutput(nil, f.pb)}
	for _, fl := range []*datapath.Flow{&first, &second} {
		if err := f.dp.PutFlow(fl, datapath.PutCreate); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.a.Send(udp); err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.Recv(time.Second); err != nil {
		t.Fatalf("recirculated packet not output: %v", err)
	}
	var g datapath.Flow
	for _, u := range []datapath.UFID{{1}, {2}} {
		if err := f.dp.GetFlow(u, nil, &g); err != nil || g.Stats.Packets != 1 {
			t.Errorf("flow %v: %+v, %v; want 1 packet", u, g.Stats, err)
		}
	}
}

func TestSetMaskedRewrites(t *testing.T) {
	f := newFixture(t, datapath.Config{})
	k, m := matchInPort(f.pa)
	var sk flow.Key
	var sm flow.Mask
	sk.IPv4Dst, sm.IPv4Dst = [4]byte{192, 0, 2, 9}, [4]byte{255, 255, 255, 255}
	acts := datapath.AppendSetMasked(nil, datapath.KeyAttrIPv4, &sk, &sm)
	acts = datapath.AppendOutput(acts, f.pb)
	if err := f.dp.PutFlow(&datapath.Flow{Key: k, Mask: m, Actions: acts}, 0); err != nil {
		t.Fatal(err)
	}
	f.a.Send(udp)
	got, err := f.b.Recv(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	out := flow.Extract(got, flow.Metadata{})
	if out.IPv4Dst != sk.IPv4Dst {
		t.Errorf("ipv4 dst %v, want %v", out.IPv4Dst, sk.IPv4Dst)
	}
	if ipChecksum(got[14:34]) != 0 {
		t.Errorf("IPv4 header checksum not fixed: % x", got[14:34])
	}
}

func ipChecksum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		s += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func TestActionValidation(t *testing.T) {
	f := newFixture(t, datapath.Config{})
	k, m := matchInPort(f.pa)
	tests := []struct {
		name    string
		actions []byte
		want    error
	}{
		{"ct", datapath.AppendCT(nil, &datapath.CT{Commit: true}), datapath.ErrNotSupported},
		{"hash", datapath.AppendHash(nil, datapath.HashAlgL4, 0), datapath.ErrNotSupported},
		{"meter", datapath.AppendMeter(nil, 1), datapath.ErrNotSupported},
		{"trunc too short", datapath.AppendTrunc(nil, 10), unix.EINVAL},
		{"userspace pid 0", datapath.AppendUserspace(nil, 0, nil), unix.EINVAL},
		{"malformed", []byte{8, 0, 1, 0, 1}, unix.EINVAL},
		{"nested unsupported", datapath.AppendClone(nil, datapath.AppendMeter(nil, 1)), datapath.ErrNotSupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := f.dp.PutFlow(&datapath.Flow{Key: k, Mask: m, Actions: tt.actions}, 0)
			if !errors.Is(err, tt.want) {
				t.Errorf("PutFlow: %v, want %v", err, tt.want)
			}
			if err := f.dp.Execute(udp, &k, tt.actions); !errors.Is(err, tt.want) {
				t.Errorf("Execute: %v, want %v", err, tt.want)
			}
		})
	}
}

func TestOverlappingPut(t *testing.T) {
	f := newFixture(t, datapath.Config{})
	k, m := matchInPort(f.pa)
	wide := datapath.Flow{UFID: datapath.UFID{1}, Key: k, Mask: m, Actions: datapath.AppendOutput(nil, f.pb)}
	if err := f.dp.PutFlow(&wide, datapath.PutCreate); err != nil {
		t.Fatal(err)
	}
	// A narrower flow that the same packets hit overlaps: the kernel
	// refuses to create it.
	narrow := wide
	narrow.UFID = datapath.UFID{2}
	narrow.Mask = flow.ExactMask()
	if err := f.dp.PutFlow(&narrow, datapath.PutCreate); !errors.Is(err, unix.EEXIST) {
		t.Errorf("overlapping create: %v, want EEXIST", err)
	}
	// Create-or-modify of an overlapping flow with another UFID: ENOENT,
	// as the kernel says when the UFID does not name the flow found.
	if err := f.dp.PutFlow(&narrow, 0); !errors.Is(err, unix.ENOENT) {
		t.Errorf("overlapping create-or-modify: %v, want ENOENT", err)
	}
	st, _ := f.dp.Stats()
	if st.Flows != 1 || st.Masks != 1 {
		t.Errorf("stats %+v; want 1 flow, 1 mask", st)
	}
}

func TestUpcallQueueFull(t *testing.T) {
	f := newFixture(t, datapath.Config{})
	for range HandlerQueueLen + 10 {
		f.a.Send(udp)
	}
	st, _ := f.dp.Stats()
	if st.Missed != HandlerQueueLen+10 || st.Lost != 10 {
		t.Errorf("stats %+v; want %d missed, 10 lost", st, HandlerQueueLen+10)
	}
	if h := f.dp.Handlers()[0]; h.Lost() != 10 {
		t.Errorf("handler lost %d, want 10", h.Lost())
	}
	// Small buffers: the upcall does not fit and is dropped as lost.
	ups := make([]datapath.Upcall, 1)
	h := f.dp.Handlers()[0]
	h.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := h.Recv(ups, [][]byte{make([]byte, 600)}); err != nil || n != 1 {
		t.Fatalf("Recv = %d, %v", n, err)
	}
	if n, err := h.Recv(ups, [][]byte{make([]byte, 20)}); err == nil {
		t.Errorf("Recv into a 20-byte buffer returned %d upcalls", n)
	}
}

// TestRecvWakesOnDeadline: moving the deadline wakes a Recv already
// waiting, as it does on a kernel socket (a stopping switch relies on it).
func TestRecvWakesOnDeadline(t *testing.T) {
	p := New()
	dp, err := p.Create("dl0", datapath.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Delete("dl0")
	h := dp.Handlers()[0]
	h.SetReadDeadline(time.Now().Add(time.Hour))
	done := make(chan error, 1)
	go func() {
		_, err := h.Recv(make([]datapath.Upcall, 1), [][]byte{make([]byte, 4096)})
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	h.SetReadDeadline(time.Now())
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("Recv: %v, want deadline exceeded", err)
		}
	case <-time.After(time.Second):
		t.Fatal("a waiting Recv did not wake when the deadline moved")
	}
}
