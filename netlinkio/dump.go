package netlinkio

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// Dump sends msg, one request built with BeginMessage/EndMessage (FlagDump
// is added), and calls fn with the generic netlink payload of each message
// of the reply (genlmsghdr, family header, attributes) until the kernel
// says done. The payload aliases the socket's buffer and is valid only
// during the call. If fn returns an error the rest of the dump is read and
// discarded, so the socket stays usable, and that error is returned. A
// kernel error ends the dump with an *OpError wrapping the errno.
//
// Dump allocates nothing once the socket's buffer exists.
func (s *Socket) Dump(msg []byte, fn func(payload []byte) error) error {
	if len(msg) < HeaderLen+GenlHeaderLen {
		return &OpError{Op: "dump", Err: unix.EINVAL}
	}
	if s.rx == nil {
		s.rx = make([]byte, rxSize)
	}
	seq := s.NextSeq(1)
	flags := binary.NativeEndian.Uint16(msg[6:])
	binary.NativeEndian.PutUint16(msg[6:], flags|FlagDump|FlagRequest)
	binary.NativeEndian.PutUint32(msg[8:], seq)
	binary.NativeEndian.PutUint32(msg[12:], 0)
	if err := s.Send(msg); err != nil {
		return err
	}
	var fnErr error
	for {
		n, err := s.recv(s.rx, false)
		if err == unix.ENOBUFS {
			// The dump's state lives in the kernel and resumes on the
			// next read; a multicast or an upcall may have been lost,
			// not the dump.
			s.lost.Add(1)
			continue
		}
		if err != nil {
			return opError("dump", err)
		}
		if n > len(s.rx) {
			return opError("dump", unix.EMSGSIZE)
		}
		it := NewMessageIter(s.rx[:n])
		for it.Next() {
			h := it.Header()
			if h.Seq != seq {
				continue
			}
			switch h.Type {
			case TypeDone:
				if d := it.Data(); len(d) >= 4 {
					if e := ErrorCode(d); e != 0 {
						return &OpError{Op: "dump", Err: e}
					}
				}
				return fnErr
			case TypeError:
				if e := ErrorCode(it.Data()); e != 0 {
					return &OpError{Op: "dump", Err: e}
				}
				return fnErr
			}
			if fnErr == nil {
				fnErr = fn(it.Data())
			}
		}
		if err := it.Err(); err != nil {
			return opError("dump", err)
		}
	}
}
