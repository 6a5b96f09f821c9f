package dummy

import (
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
)

// familyID is the generic netlink family number the dummy's upcall
// messages carry; nothing reads it.
const familyID = 0x7ff0

// HandlerQueueLen is how many upcalls a handler queues; more are lost, as
// when a kernel handler socket's receive buffer is full.
const HandlerQueueLen = 4096

// pending is a queued upcall. packet and userdata are copies, in buf when
// they fit one (released once stored), else in memory of their own.
type pending struct {
	cmd      datapath.UpcallCmd
	key      flow.Key
	packet   []byte
	userdata []byte
	buf      *copyBuf
}

// copyBufLen is the size of a pooled upcall copy: a full-size Ethernet
// frame with its userdata. Bigger ones (jumbo frames, GSO) are copied
// into memory of their own.
const copyBufLen = 2048

// copyBuf holds one queued upcall's packet and userdata. They are pooled:
// the kernel copies an upcall into its socket's buffer without allocating
// per packet, and so must the dummy, or BenchmarkUpcallMiss measures the
// dummy's garbage instead of the switch.
type copyBuf [copyBufLen]byte

var copyBufs = sync.Pool{New: func() any { return new(copyBuf) }}

// newPending copies frame and userdata into a pending upcall.
func newPending(cmd datapath.UpcallCmd, k *flow.Key, frame, userdata []byte) pending {
	p := pending{cmd: cmd, key: *k}
	if len(frame)+len(userdata) > copyBufLen {
		p.packet, p.userdata = slices.Clone(frame), slices.Clone(userdata)
		return p
	}
	p.buf = copyBufs.Get().(*copyBuf)
	n := copy(p.buf[:], frame)
	p.packet = p.buf[:n:n]
	if userdata != nil {
		m := copy(p.buf[n:], userdata)
		p.userdata = p.buf[n : n+m : n+m]
	}
	return p
}

// release returns p's copy to the pool; p's slices are dead after.
func (p *pending) release() {
	if p.buf != nil {
		copyBufs.Put(p.buf)
		p.buf, p.packet, p.userdata = nil, nil, nil
	}
}

// handler is an upcall queue. Recv encodes each upcall as the kernel's
// netlink message into the caller's buffer and decodes it back with
// datapath.DecodeUpcall, so upcalls alias the buffers exactly as the
// kernel datapath's do.
type handler struct {
	c        *core
	pid      uint32
	q        chan pending
	closed   chan struct{}
	once     sync.Once
	lost     atomic.Uint64
	mu       sync.Mutex
	deadline time.Time
	// kick wakes a waiting Recv when the deadline changes, as a socket's
	// deadline wakes a blocked read.
	kick chan struct{}
}

func newHandler(c *core) *handler {
	return &handler{c: c, pid: nextPID.Add(1), q: make(chan pending, HandlerQueueLen), closed: make(chan struct{}),
		kick: make(chan struct{}, 1)}
}

func (h *handler) enqueue(p pending) bool {
	select {
	case h.q <- p:
		return true
	default:
		h.lost.Add(1)
		return false
	}
}

func (h *handler) close() { h.once.Do(func() { close(h.closed) }) }

// Recv waits for upcalls and stores up to min(len(ups), len(bufs)).
// An upcall too big for its buffer is dropped and counted in Lost.
func (h *handler) Recv(ups []datapath.Upcall, bufs [][]byte) (int, error) {
	n := min(len(ups), len(bufs))
	if n == 0 {
		return 0, nil
	}
	for {
		p, err := h.wait()
		if err != nil {
			return 0, err
		}
		got := 0
		for {
			ok := h.store(&ups[got], bufs[got], &p)
			p.release() // store copied it into bufs[got]
			if ok {
				got++
			}
			if got == n {
				return got, nil
			}
			select {
			case p = <-h.q:
				continue
			default:
			}
			break
		}
		if got > 0 {
			return got, nil
		}
	}
}

// wait returns the next queued upcall, waiting until the deadline.
func (h *handler) wait() (pending, error) {
	select {
	case p := <-h.q:
		return p, nil
	case <-h.closed:
		return pending{}, datapath.WrapError("recv upcalls", "", os.ErrClosed)
	default:
	}
	for {
		h.mu.Lock()
		dl := h.deadline
		h.mu.Unlock()
		var timeout <-chan time.Time
		var t *time.Timer
		if !dl.IsZero() {
			t = time.NewTimer(time.Until(dl))
			timeout = t.C
		}
		select {
		case p := <-h.q:
			stopTimer(t)
			return p, nil
		case <-h.closed:
			stopTimer(t)
			return pending{}, datapath.WrapError("recv upcalls", "", os.ErrClosed)
		case <-timeout:
			return pending{}, datapath.WrapError("recv upcalls", "", os.ErrDeadlineExceeded)
		case <-h.kick:
			stopTimer(t) // the deadline moved: wait again under the new one
		}
	}
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// store encodes p into buf as a netlink message and decodes it into u.
func (h *handler) store(u *datapath.Upcall, buf []byte, p *pending) bool {
	up := datapath.Upcall{Cmd: p.cmd, Key: p.key, Packet: p.packet, Userdata: p.userdata}
	msg, start := netlinkio.BeginMessage(buf[:0:len(buf)], familyID, 0, uint8(p.cmd), 1)
	msg = msg[:start+netlinkio.HeaderLen] // AppendUpcall writes the genl header
	msg = datapath.AppendUpcall(msg, h.c.index, &up)
	msg = netlinkio.EndMessage(msg, start)
	if len(msg) > len(buf) {
		// Did not fit: the kernel would have truncated it.
		h.lost.Add(1)
		return false
	}
	it := netlinkio.NewMessageIter(msg)
	if !it.Next() {
		h.lost.Add(1)
		return false
	}
	if _, err := datapath.DecodeUpcall(it.Data(), u); err != nil {
		h.lost.Add(1)
		return false
	}
	return true
}

// SetReadDeadline sets the deadline of Recv.
func (h *handler) SetReadDeadline(t time.Time) error {
	h.mu.Lock()
	h.deadline = t
	h.mu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
	return nil
}

// PID returns the handler's invented upcall PID.
func (h *handler) PID() uint32 { return h.pid }

// Lost returns upcalls dropped because the queue was full or the buffer
// too small.
func (h *handler) Lost() uint64 { return h.lost.Load() }
