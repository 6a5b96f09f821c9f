package netlinkio

import (
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Socket is a raw NETLINK_GENERIC socket for the hot paths: batched
// transactions (Transact), allocation-free dumps (Dump) and upcall batches
// (RecvBatch). It is non-blocking underneath and waits in the Go runtime's
// poller, so Close unblocks a waiting reader and read deadlines work.
//
// A Socket is not safe for concurrent use, except that Close and
// SetReadDeadline may be called while another goroutine is blocked in a
// receive. The datapath keeps one per upcall handler and a locked one for
// flow operations.
type Socket struct {
	f   *os.File
	rc  syscall.RawConn
	pid uint32
	seq uint32

	// Stats, updated atomically so Stats may be read from any goroutine.
	lost, truncated, sends, resends, foreign atomic.Uint64

	// State of the RawConn callbacks, which are method values bound once in
	// OpenSocket so that a receive allocates no closure.
	readFn, writeFn, batchFn func(fd uintptr) bool
	ioBuf                    []byte
	ioN                      int
	ioFlags                  int
	ioErr                    error
	mm                       []mmsghdr
	iov                      []unix.Iovec
	names                    []unix.RawSockaddrNetlink // senders of a RecvBatch
	bufs                     [][]byte
	sizes                    []int

	rx []byte // receive buffer of Transact and Dump
}

// RecvBufferSize is the receive buffer OpenSocket asks for with
// SO_RCVBUFFORCE (which needs CAP_NET_ADMIN; without it the kernel's
// rmem_max caps an SO_RCVBUF request instead). OVS uses the same 4 MiB so
// that a burst of upcalls is queued rather than lost.
const RecvBufferSize = 4 << 20

// rxSize is the size of the buffer replies and dump parts are read into.
// The kernel builds dump parts and replies of at most a page or two
// (NLMSG_GOODSIZE), well below it.
const rxSize = 64 << 10

// OpenSocket opens a NETLINK_GENERIC socket bound to a kernel-chosen port
// ID, with extended acks and capped acks (an error reply does not echo the
// request back) and a RecvBufferSize receive buffer where the process is
// allowed one. It needs no privilege; talking to the openvswitch families
// through it needs CAP_NET_ADMIN.
func OpenSocket() (*Socket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_GENERIC)
	if err != nil {
		return nil, opError("socket", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, opError("bind", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, opError("getsockname", err)
	}
	nsa, ok := sa.(*unix.SockaddrNetlink)
	if !ok {
		unix.Close(fd)
		return nil, &OpError{Op: "getsockname", Err: unix.EAFNOSUPPORT}
	}
	// Best effort: both are optimisations of error replies.
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, RecvBufferSize) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, RecvBufferSize)
	}
	f := os.NewFile(uintptr(fd), "netlink")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, opError("syscallconn", err)
	}
	s := &Socket{f: f, rc: rc, pid: nsa.Pid, seq: uint32(time.Now().UnixNano())}
	s.readFn = s.doRead
	s.writeFn = s.doWrite
	s.batchFn = s.doBatch
	return s, nil
}

// PID returns the socket's netlink port ID: the value to give the kernel as
// an upcall PID.
func (s *Socket) PID() uint32 { return s.pid }

// Close closes the socket, unblocking any receive in progress.
func (s *Socket) Close() error { return s.f.Close() }

// SetReadDeadline sets the deadline of receives; a receive past it fails
// with an error for which errors.Is(err, os.ErrDeadlineExceeded). The zero
// time means no deadline.
func (s *Socket) SetReadDeadline(t time.Time) error { return s.f.SetReadDeadline(t) }

// SetReceiveBuffer sets the socket's receive buffer to n bytes, forcing it
// past rmem_max when the process has CAP_NET_ADMIN.
func (s *Socket) SetReceiveBuffer(n int) error {
	var err error
	cerr := s.rc.Control(func(fd uintptr) {
		err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n)
		if err != nil {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, n)
		}
	})
	if cerr != nil {
		return opError("setsockopt", cerr)
	}
	return opError("setsockopt", err)
}

// ReceiveBuffer returns the socket's receive buffer size as the kernel
// reports it (twice what was asked, for bookkeeping overhead).
func (s *Socket) ReceiveBuffer() (int, error) {
	var n int
	var err error
	cerr := s.rc.Control(func(fd uintptr) {
		n, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
	})
	if cerr != nil {
		return 0, opError("getsockopt", cerr)
	}
	return n, opError("getsockopt", err)
}

// JoinGroup subscribes the socket to a multicast group (a family's
// notification group, say ovs_vport's).
func (s *Socket) JoinGroup(group uint32) error {
	var err error
	cerr := s.rc.Control(func(fd uintptr) {
		err = unix.SetsockoptInt(int(fd), unix.SOL_NETLINK, unix.NETLINK_ADD_MEMBERSHIP, int(group))
	})
	if cerr != nil {
		return opError("join group", cerr)
	}
	return opError("join group", err)
}

// SocketStats counts what a Socket lost. Upcalls the kernel could not
// queue because the receive buffer was full surface as ENOBUFS on the next
// receive; each such report is counted once in Lost (the kernel's own
// datapath "lost" counter has the exact number). Truncated counts messages
// longer than the buffer given to RecvBatch, which are dropped. Sends counts
// sendmsg calls made by Transact and Resends those repeated after ENOBUFS.
// Foreign counts datagrams RecvBatch dropped because they did not come from
// the kernel (a sender port id other than 0): another process cannot feed
// the switch forged upcalls.
type SocketStats struct {
	Lost, Truncated, Sends, Resends, Foreign uint64
}

// Stats returns the socket's counters. It is safe to call concurrently.
func (s *Socket) Stats() SocketStats {
	return SocketStats{
		Lost:      s.lost.Load(),
		Truncated: s.truncated.Load(),
		Sends:     s.sends.Load(),
		Resends:   s.resends.Load(),
		Foreign:   s.foreign.Load(),
	}
}

func (s *Socket) doRead(fd uintptr) bool {
	var n uintptr
	var errno syscall.Errno
	for {
		n, _, errno = unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(unsafe.SliceData(s.ioBuf))),
			uintptr(len(s.ioBuf)), uintptr(s.ioFlags|unix.MSG_TRUNC), 0, 0)
		if errno != unix.EINTR {
			break
		}
	}
	if errno == unix.EAGAIN && s.ioFlags&unix.MSG_DONTWAIT == 0 {
		return false
	}
	s.ioN = int(n)
	if errno != 0 {
		s.ioErr = errno
		s.ioN = 0
	}
	return true
}

func (s *Socket) doWrite(fd uintptr) bool {
	var errno syscall.Errno
	for {
		_, _, errno = unix.Syscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(s.ioBuf))), uintptr(len(s.ioBuf)))
		if errno != unix.EINTR {
			break
		}
	}
	if errno == unix.EAGAIN {
		return false
	}
	if errno != 0 {
		s.ioErr = errno
	}
	return true
}

// Send writes b, one or more complete netlink messages, in one sendmsg.
// Sequence numbers are the caller's; most callers want Transact instead.
func (s *Socket) Send(b []byte) error {
	s.ioBuf, s.ioErr = b, nil
	err := s.rc.Write(s.writeFn)
	s.ioBuf = nil
	if err == nil {
		err = s.ioErr
	}
	return opError("sendmsg", err)
}

// recv reads one datagram into b, waiting for it unless nonblock, and
// returns its full length, which exceeds len(b) when it was truncated. A
// non-blocking read with nothing queued returns unix.EAGAIN.
func (s *Socket) recv(b []byte, nonblock bool) (int, error) {
	s.ioBuf, s.ioN, s.ioErr, s.ioFlags = b, 0, nil, 0
	if nonblock {
		s.ioFlags = unix.MSG_DONTWAIT
	}
	err := s.rc.Read(s.readFn)
	s.ioBuf = nil
	if err == nil {
		err = s.ioErr
	}
	return s.ioN, err
}

// Recv reads one datagram (one or more netlink messages) into b, waiting
// for one to arrive, and returns its length. A datagram longer than b is
// truncated and reported as unix.EMSGSIZE with n = len(b).
func (s *Socket) Recv(b []byte) (int, error) {
	for {
		n, err := s.recv(b, false)
		if err == unix.ENOBUFS {
			s.lost.Add(1)
			continue
		}
		if err != nil {
			return 0, opError("recvmsg", err)
		}
		if n > len(b) {
			s.truncated.Add(1)
			return len(b), opError("recvmsg", unix.EMSGSIZE)
		}
		return n, nil
	}
}

// NextSeq reserves n consecutive sequence numbers and returns the first.
func (s *Socket) NextSeq(n int) uint32 {
	base := s.seq + 1
	s.seq += uint32(n)
	return base
}
