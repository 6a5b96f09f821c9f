package netlinkio

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsghdr is struct mmsghdr of recvmmsg(2).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
	_   [4]byte
}

// RecvBatch reads up to min(len(bufs), len(sizes)) datagrams, one per
// buffer, with recvmmsg: it waits until at least one is queued, then takes
// whatever else is already queued without waiting more. It returns the
// number of buffers filled; sizes[i] is the length of the datagram in
// bufs[i]. The buffers are the caller's and are not retained.
//
// A datagram longer than its buffer is dropped and counted in
// Stats().Truncated; buffers of 64 KiB cannot be overrun by an upcall of a
// non-GSO packet. An ENOBUFS report (the kernel dropped messages because
// the receive buffer was full) is counted in Stats().Lost and the read goes
// on. A datagram whose sender is not the kernel (netlink port id 0) is
// dropped and counted in Stats().Foreign. In steady state RecvBatch
// allocates nothing.
func (s *Socket) RecvBatch(bufs [][]byte, sizes []int) (int, error) {
	n := min(len(bufs), len(sizes))
	if n == 0 {
		return 0, nil
	}
	if cap(s.mm) < n {
		s.mm = make([]mmsghdr, n)
		s.iov = make([]unix.Iovec, n)
		s.names = make([]unix.RawSockaddrNetlink, n)
	}
	s.mm, s.iov, s.names = s.mm[:n], s.iov[:n], s.names[:n]
	for i := range n {
		s.iov[i].Base = unsafe.SliceData(bufs[i])
		s.iov[i].SetLen(len(bufs[i]))
		s.mm[i] = mmsghdr{}
		s.mm[i].hdr.Iov = &s.iov[i]
		s.mm[i].hdr.SetIovlen(1)
		s.mm[i].hdr.Name = (*byte)(unsafe.Pointer(&s.names[i]))
		s.mm[i].hdr.Namelen = unix.SizeofSockaddrNetlink
	}
	for {
		s.ioN, s.ioErr = 0, nil
		err := s.rc.Read(s.batchFn)
		if err == nil {
			err = s.ioErr
		}
		if err == unix.ENOBUFS {
			s.lost.Add(1)
			continue
		}
		if err != nil {
			s.clearIov()
			return 0, opError("recvmmsg", err)
		}
		got := 0
		for i := range s.ioN {
			m := &s.mm[i]
			if m.hdr.Flags&unix.MSG_TRUNC != 0 || int(m.n) > len(bufs[i]) {
				s.truncated.Add(1)
				continue
			}
			if s.names[i].Pid != 0 {
				s.foreign.Add(1)
				continue
			}
			if got != i {
				if len(bufs[got]) < int(m.n) {
					s.truncated.Add(1)
					continue
				}
				// Compact: move the datagram into the next free buffer so
				// that bufs[:got] are the filled ones.
				copy(bufs[got], bufs[i][:m.n])
			}
			sizes[got] = int(m.n)
			got++
		}
		if got > 0 {
			s.clearIov()
			return got, nil
		}
	}
}

// clearIov drops the references to the caller's buffers.
func (s *Socket) clearIov() {
	for i := range s.iov {
		s.iov[i].Base = nil
	}
}

func (s *Socket) doBatch(fd uintptr) bool {
	var n uintptr
	var errno syscall.Errno
	for {
		n, _, errno = unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&s.mm[0])), uintptr(len(s.mm)),
			unix.MSG_DONTWAIT, 0, 0)
		if errno != unix.EINTR {
			break
		}
	}
	if errno == unix.EAGAIN {
		return false
	}
	if errno != 0 {
		s.ioErr = errno
		return true
	}
	s.ioN = int(n)
	return true
}
