package kernel

import (
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/internal/testbed"
)

// TestIntegrationUpcallOverflow: when a handler's socket is full the
// kernel drops upcalls and counts them in the datapath's lost counter; the
// handler sees ENOBUFS and counts it, and every upcall is either received
// or lost.
func TestIntegrationUpcallOverflow(t *testing.T) {
	testbed.Require(t)
	name := uniqueName("go")
	dpi, err := Provider{}.Create(name, datapath.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dpi.Close()
		Provider{}.Delete(name)
	})
	dp := dpi.(*Datapath)
	l := newLink(t)
	if _, err := dp.AddVport(datapath.VportSpec{Name: l.Name(), Type: datapath.VportNetdev}); err != nil {
		t.Fatal(err)
	}
	h := dp.handlers[0]
	if err := h.sock.SetReceiveBuffer(1); err != nil { // the kernel's minimum
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		fr := append([]byte(nil), testFrame...)
		fr[33] = byte(i)
		if err := l.Send(fr); err != nil {
			t.Fatal(err)
		}
	}
	ups := make([]datapath.Upcall, 16)
	bufs := make([][]byte, 16)
	for i := range bufs {
		bufs[i] = make([]byte, 4096)
	}
	got := 0
	for {
		h.SetReadDeadline(time.Now().Add(time.Second))
		k, err := h.Recv(ups, bufs)
		if err != nil {
			break
		}
		for _, u := range ups[:k] {
			if u.Cmd == datapath.UpcallMiss && u.Key.EthType == flow.EthTypeIPv4 {
				got++
			}
		}
	}
	st, err := dp.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Lost == 0 || h.Lost() == 0 {
		t.Errorf("datapath lost %d, handler lost %d; want both > 0 after overflow", st.Lost, h.Lost())
	}
	if uint64(got)+st.Lost != n || st.Missed != n {
		t.Errorf("received %d + lost %d of %d misses (stats %+v)", got, st.Lost, n, st)
	}
}
