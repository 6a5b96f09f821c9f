package kernel

import (
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/netlinkio"
)

// handler is one upcall socket: under per-CPU dispatch the kernel sends it
// the misses of its CPUs; under per-vport dispatch, a share (by flow hash)
// of every port's misses.
type handler struct {
	sock    *netlinkio.Socket
	dpIndex int
	sizes   []int
	bad     uint64 // messages that were not upcalls of this datapath
}

var _ datapath.Handler = (*handler)(nil)

// Recv reads a batch of upcalls (see datapath.Handler). Messages that do
// not decode as upcalls of this datapath are skipped and counted in Lost.
func (h *handler) Recv(ups []datapath.Upcall, bufs [][]byte) (int, error) {
	n := min(len(ups), len(bufs))
	if n == 0 {
		return 0, nil
	}
	if cap(h.sizes) < n {
		h.sizes = make([]int, n)
	}
	sizes := h.sizes[:n]
	for {
		got, err := h.sock.RecvBatch(bufs[:n], sizes)
		if err != nil {
			return 0, datapath.WrapError("recv upcalls", "", err)
		}
		out := 0
		for i := range got {
			it := netlinkio.NewMessageIter(bufs[i][:sizes[i]])
			if !it.Next() {
				h.bad++
				continue
			}
			idx, err := datapath.DecodeUpcall(it.Data(), &ups[out])
			if err != nil || idx != h.dpIndex {
				h.bad++
				continue
			}
			if out != i {
				// The upcall aliases bufs[i]; swap buffers so that
				// ups[out] aliases bufs[out], as documented.
				bufs[out], bufs[i] = bufs[i], bufs[out]
			}
			out++
		}
		if out > 0 {
			return out, nil
		}
	}
}

// SetReadDeadline sets the deadline of Recv.
func (h *handler) SetReadDeadline(t time.Time) error { return h.sock.SetReadDeadline(t) }

// PID returns the handler socket's netlink port ID.
func (h *handler) PID() uint32 { return h.sock.PID() }

// Lost returns the upcalls this handler lost or could not decode.
func (h *handler) Lost() uint64 {
	st := h.sock.Stats()
	return st.Lost + st.Truncated + h.bad
}
