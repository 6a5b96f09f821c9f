package openflow

import (
	"errors"
	"fmt"
	"io"
)

// DefaultMaxMessageLen is the message size limit a Framer uses when given
// zero: 64 KiB, the most the 16-bit length field can express.
const DefaultMaxMessageLen = MaxMessageLen

// ErrFrame reports a header whose length is below 8 or above the Framer's
// limit. The byte stream cannot be resynchronised after it; close the
// connection.
var ErrFrame = errors.New("openflow: bad message length in stream")

// Framer reassembles whole messages from a byte stream (a TCP or unix
// socket) into one fixed buffer of the maximum message size. It never grows
// that buffer, so a peer cannot make it buffer without bound, and after
// NewFramer it allocates nothing.
//
// Use it push-style — read into Space, Commit what was read, then call Next
// until it returns nil — or let ReadMsg do that against an io.Reader.
// A Framer is not safe for concurrent use.
type Framer struct {
	buf        []byte
	start, end int // buf[start:end] holds unconsumed bytes
	max        int
	err        error
}

// NewFramer returns a Framer that accepts messages of at most max bytes
// (header included). max is clamped to [HeaderLen, MaxMessageLen]; zero
// means DefaultMaxMessageLen.
func NewFramer(max int) *Framer {
	if max <= 0 || max > MaxMessageLen {
		max = DefaultMaxMessageLen
	}
	if max < HeaderLen {
		max = HeaderLen
	}
	return &Framer{buf: make([]byte, max), max: max}
}

// Space returns the free tail of the buffer for the next read. It moves
// buffered bytes to the front first, which invalidates messages returned
// earlier by Next. It is empty only after an ErrFrame.
func (f *Framer) Space() []byte {
	if f.err != nil {
		return nil
	}
	if f.start > 0 {
		n := copy(f.buf, f.buf[f.start:f.end])
		f.start, f.end = 0, n
	}
	return f.buf[f.end:]
}

// Commit records that n bytes were written into the slice Space returned.
// An n outside that slice is a caller bug and panics; peer input never
// reaches this check.
func (f *Framer) Commit(n int) {
	if n < 0 || f.end+n > len(f.buf) {
		panic("openflow: Framer.Commit beyond Space")
	}
	f.end += n
}

// Buffered returns how many bytes wait for the rest of their message.
func (f *Framer) Buffered() int { return f.end - f.start }

// Next returns the next whole message, or nil if the buffered bytes do not
// yet hold one. The slice aliases the Framer's buffer and stays valid until
// the next call to Space or ReadMsg. A bad length yields ErrFrame, then and
// on every later call.
func (f *Framer) Next() ([]byte, error) {
	if f.err != nil {
		return nil, f.err
	}
	avail := f.buf[f.start:f.end]
	if len(avail) < HeaderLen {
		return nil, nil
	}
	n := int(u16(avail[2:]))
	if n < HeaderLen || n > f.max {
		f.err = fmt.Errorf("%w: header says %d bytes, limit %d (version 0x%02x type %d)",
			ErrFrame, n, f.max, avail[0], avail[1])
		return nil, f.err
	}
	if len(avail) < n {
		return nil, nil
	}
	f.start += n
	return avail[:n:n], nil
}

// ReadMsg returns the next whole message from r, reading as needed. The
// slice stays valid until the next ReadMsg or Space. At a clean end of
// stream between messages it returns io.EOF; in the middle of one,
// io.ErrUnexpectedEOF.
func (f *Framer) ReadMsg(r io.Reader) ([]byte, error) {
	for {
		m, err := f.Next()
		if m != nil || err != nil {
			return m, err
		}
		n, err := r.Read(f.Space())
		f.Commit(n)
		if err != nil {
			if n > 0 {
				if m, ferr := f.Next(); m != nil || ferr != nil {
					return m, ferr
				}
			}
			if errors.Is(err, io.EOF) && f.Buffered() > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}
