package netlinkio

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// Limits of one sendmsg in Transact, as OVS chose them: at most
// BatchMaxMessages messages and, past the first message, at most
// BatchMaxBytes of requests, because the kernel handles one big skb worse
// than several small ones.
const (
	BatchMaxMessages = 128
	BatchMaxBytes    = 4096 - 512
)

// Batch is a set of generic netlink requests sent together by
// Socket.Transact, and their results. Build it with Begin/End; send it; read
// Result. Reset makes it reusable: a Batch that is reused allocates nothing
// once its buffers have grown to the working size.
//
// A Batch is not safe for concurrent use.
type Batch struct {
	buf     []byte
	msgs    []batchMsg
	results []Result
	replies []byte // arena the echoed replies are copied into

	// ErrorsOnly declares that no request of the batch is answered except
	// by an error (no FlagAck, no FlagEcho, no get command). Transact then
	// reads the replies once, after the last sendmsg, instead of after each:
	// a batch split over several sendmsg calls (BatchMaxBytes) saves a
	// receive per call, which is most of the receives a switch makes
	// installing flows. Errors are small and rare, so the receive buffer
	// cannot overflow with them. Reset clears it.
	ErrorsOnly bool
}

type batchMsg struct {
	off, end int
	flags    uint16
}

// Result is the outcome of one request of a Batch.
type Result struct {
	// Errno is 0 when the request succeeded, else the kernel's error.
	Errno unix.Errno
	// Reply is the reply the kernel sent for a request flagged FlagEcho (or
	// a get command, which always replies): the generic netlink payload
	// (genlmsghdr, family header, attributes) without the nlmsghdr. It
	// aliases the Batch and is valid until the next Reset. Nil for a
	// request that had no reply.
	Reply []byte

	replyOff, replyEnd int
}

// Err returns the request's error as an error (nil, or the unix.Errno).
func (r *Result) Err() error {
	if r.Errno == 0 {
		return nil
	}
	return r.Errno
}

// Reset empties the batch, keeping its buffers.
func (b *Batch) Reset() {
	b.buf = b.buf[:0]
	b.msgs = b.msgs[:0]
	b.results = b.results[:0]
	b.replies = b.replies[:0]
	b.ErrorsOnly = false
}

// Bytes returns the encoded requests, back to back, for inspection. Their
// sequence numbers are those of the last Transact (zero before). The slice
// aliases the batch and is valid until the next Begin or Reset.
func (b *Batch) Bytes() []byte { return b.buf }

// Len returns the number of requests in the batch.
func (b *Batch) Len() int { return len(b.msgs) }

// Begin starts a request and returns the batch's buffer with the request's
// headers appended; the caller appends the family header and attributes and
// hands the buffer back to End. flags chooses which replies come back:
// FlagAck for an acknowledgement, FlagEcho for the object as the kernel
// stored it; errors always come back.
func (b *Batch) Begin(family uint16, flags uint16, cmd, version uint8) []byte {
	buf, off := BeginMessage(b.buf, family, flags, cmd, version)
	b.msgs = append(b.msgs, batchMsg{off: off, end: -1, flags: flags | FlagRequest})
	return buf
}

// End completes the request begun last, whose bytes are buf (as returned by
// Begin and appended to), and returns its index in Results.
func (b *Batch) End(buf []byte) int {
	i := len(b.msgs) - 1
	m := &b.msgs[i]
	buf = EndMessage(buf, m.off)
	m.end = len(buf)
	b.buf = buf
	return i
}

// Results returns one Result per request, in the order they were added.
// The slice is valid until the next Reset.
func (b *Batch) Results() []Result { return b.results }

// Transact sends the batch's requests, as few per sendmsg as the batch
// limits allow, and collects their results, reading the replies after each
// sendmsg (after the last one when the batch is ErrorsOnly). Sequence
// numbers are chosen here, contiguously, so replies are matched to
// requests in O(1). Generic netlink runs a request to completion inside sendmsg, so
// once sendmsg returns every reply is already queued: Transact drains them
// without waiting, and a request whose reply never came succeeded (the
// kernel always reports errors; acks and echoes only when asked).
//
// If the receive buffer overflowed (ENOBUFS), replies were lost; the
// requests after the last one whose outcome is known are sent again, as OVS
// does. A request that succeeded the first time then runs twice, so a
// create may report EEXIST: callers that cannot tolerate that must ask for
// acks and keep the buffer small enough. Transact itself fails only when
// the socket does; per-request errors are in Results.
func (s *Socket) Transact(b *Batch) error {
	n := len(b.msgs)
	if cap(b.results) < n {
		b.results = make([]Result, n)
	}
	b.results = b.results[:n]
	clear(b.results)
	if s.rx == nil {
		s.rx = make([]byte, rxSize)
	}
	stall := 0
	for i := 0; i < n; {
		// Send from i: one chunk, or with ErrorsOnly every chunk left,
		// numbering the requests contiguously from base.
		base := s.NextSeq(n - i)
		for k := i; k < n; k++ {
			binary.NativeEndian.PutUint32(b.buf[b.msgs[k].off+8:], base+uint32(k-i))
			binary.NativeEndian.PutUint32(b.buf[b.msgs[k].off+12:], 0)
		}
		j := i
		for j < n {
			e, size := j, 0
			for e < n && e-j < BatchMaxMessages {
				l := b.msgs[e].end - b.msgs[e].off
				if e > j && size+l > BatchMaxBytes {
					break
				}
				size += l
				e++
			}
			s.sends.Add(1)
			if err := s.Send(b.buf[b.msgs[j].off:b.msgs[e-1].end]); err != nil {
				if Errno(err) == unix.ENOBUFS && stall < 3 {
					// Drain what was sent, then send again from here.
					stall++
					s.resends.Add(1)
					break
				}
				return err
			}
			j = e
			if !b.ErrorsOnly {
				break
			}
		}
		next, err := s.drain(b, i, j, base)
		if err != nil {
			return err
		}
		if next < j {
			// Replies were lost: resend from the first request whose
			// outcome is unknown.
			if next == i {
				stall++
				if stall > 3 {
					for k := i; k < j; k++ {
						b.results[k].Errno = unix.ENOBUFS
					}
					next = j
				}
			} else {
				stall = 0
			}
			if next < j {
				s.resends.Add(1)
			}
			i = next
			continue
		}
		if j > i {
			stall = 0
		}
		i = j
	}
	for k := range b.results {
		r := &b.results[k]
		if r.replyEnd > r.replyOff {
			r.Reply = b.replies[r.replyOff:r.replyEnd:r.replyEnd]
		}
	}
	return nil
}

// drain reads the replies to requests [i, j) numbered from base, without
// waiting. It returns j when all outcomes are known, or the index of the
// first request whose outcome was lost to a receive buffer overflow.
func (s *Socket) drain(b *Batch, i, j int, base uint32) (int, error) {
	// Requests before the last one that answered are done: the kernel
	// answers in order. known is one past the last answered request.
	known := i
	for {
		n, err := s.recv(s.rx, true)
		switch err {
		case nil:
		case unix.EAGAIN:
			return j, nil
		case unix.ENOBUFS:
			s.lost.Add(1)
			// Whatever is still queued is valid; read it, then resend
			// from the first request with no answer.
			for {
				n, err := s.recv(s.rx, true)
				if err != nil {
					break
				}
				if k := s.match(b, i, j, base, n); k > known {
					known = k
				}
			}
			return known, nil
		default:
			return 0, opError("recvmsg", err)
		}
		if k := s.match(b, i, j, base, n); k > known {
			known = k
		}
	}
}

// match records the replies in one received datagram of n bytes and
// returns one past the highest request index it answered, or 0.
func (s *Socket) match(b *Batch, i, j int, base uint32, n int) int {
	if n > len(s.rx) {
		// A reply bigger than rxSize: the payload is lost, the outcome is
		// not. Treat it as an answer without data.
		n = len(s.rx)
	}
	hi := 0
	it := NewMessageIter(s.rx[:n])
	for it.Next() {
		h := it.Header()
		k := int(h.Seq - base)
		if h.Seq-base >= uint32(j-i) {
			continue // a stale reply from an earlier batch
		}
		k += i
		r := &b.results[k]
		if h.Type == TypeError {
			r.Errno = ErrorCode(it.Data())
		} else if h.Type != TypeDone && h.Type != TypeNoop {
			off := len(b.replies)
			b.replies = append(b.replies, it.Data()...)
			r.replyOff, r.replyEnd = off, len(b.replies)
		}
		if k+1 > hi {
			hi = k + 1
		}
	}
	return hi
}
