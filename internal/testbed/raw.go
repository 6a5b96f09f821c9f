package testbed

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// RawConn is an AF_PACKET socket bound to one interface: it sends whole
// Ethernet frames as given and receives every frame that arrives on the
// interface (not the ones it or anyone else sends out of it).
//
// Send may be called concurrently with Recv; two concurrent Recv calls are
// not allowed, nor is Close concurrent with either.
type RawConn struct {
	fd      int
	ifname  string
	ifindex int
	buf     []byte   // receive buffer, reused across Recv calls
	stats   RawStats // PACKET_STATISTICS so far (the kernel resets its own on each read)
}

// maxFrame bounds one received frame; larger ones are cut to it.
const maxFrame = 65536

// rawRcvBuf is the receive buffer each socket asks for (the kernel doubles
// it). The default, net.core.rmem_default (208 KiB), holds only about 250
// small frames: a test that sends a burst of hundreds while its receiver
// falls behind (UML's syscalls are slow, and a busy host slower) lost up to
// a quarter of them in its own socket, though the switch had delivered
// them all. 4 MiB holds any burst a test sends, however late the reader.
const rawRcvBuf = 4 << 20

// OpenRaw opens a packet socket on ifname in ns (nil: the caller's network
// namespace). The socket is bound before it receives anything, so Recv sees
// only frames that arrived on ifname after OpenRaw returned. It is closed
// in tb.Cleanup. Failures end the test with tb.Fatal.
func OpenRaw(tb testing.TB, ns *Netns, ifname string) *RawConn {
	tb.Helper()
	var c *RawConn
	open := func() error {
		var err error
		c, err = openRaw(ifname)
		return err
	}
	var err error
	if ns == nil {
		err = open()
	} else {
		err = ns.Do(open)
	}
	if err != nil {
		where := "root netns"
		if ns != nil {
			where = "netns " + ns.Name
		}
		tb.Fatalf("raw socket on %s in %s: %v", ifname, where, err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// openRaw opens and binds the socket in the calling thread's namespace.
func openRaw(ifname string) (*RawConn, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	// Protocol 0 at creation: the socket receives nothing until it is
	// bound, so no frame from another interface slips in before bind.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	// FORCE passes net.core.rmem_max; it needs CAP_NET_ADMIN, which the
	// bed has. Without it, take what SO_RCVBUF gives (up to rmem_max).
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rawRcvBuf); err != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rawRcvBuf)
	}
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("bind", err)
	}
	// Our own transmissions would otherwise come back to Recv. Kernels
	// before 4.20 lack the option; Recv drops outgoing frames as well.
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	return &RawConn{fd: fd, ifname: ifname, ifindex: ifi.Index, buf: make([]byte, maxFrame)}, nil
}

// htons returns the uint16 whose in-memory bytes are v in network byte
// order, as sockaddr_ll's protocol field wants it.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// Ifindex is the index of the interface the socket is bound to, in the
// namespace it was opened in.
func (c *RawConn) Ifindex() int { return c.ifindex }

// Send transmits frame, a whole Ethernet frame without FCS, out of the
// interface. The kernel copies it; the caller keeps frame.
func (c *RawConn) Send(frame []byte) error {
	n, err := unix.Write(c.fd, frame)
	if err != nil {
		return fmt.Errorf("send on %s: %w", c.ifname, os.NewSyscallError("write", err))
	}
	if n != len(frame) {
		return fmt.Errorf("send on %s: wrote %d of %d bytes", c.ifname, n, len(frame))
	}
	return nil
}

// Recv waits up to timeout for the first received frame for which match
// returns true (a nil match takes any frame) and returns a copy the caller
// owns. match sees each frame only for the duration of its call. Frames
// that do not match are dropped. When timeout passes first, the error wraps
// os.ErrDeadlineExceeded.
func (c *RawConn) Recv(timeout time.Duration, match func(frame []byte) bool) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("recv on %s: no matching frame within %v: %w", c.ifname, timeout, os.ErrDeadlineExceeded)
		}
		ms := int((left + time.Millisecond - 1) / time.Millisecond)
		pfd := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}}
		_, err := unix.Poll(pfd, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("recv on %s: %w", c.ifname, os.NewSyscallError("poll", err))
		}
		if pfd[0].Revents&unix.POLLIN == 0 {
			continue
		}
		n, from, err := unix.Recvfrom(c.fd, c.buf, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("recv on %s: %w", c.ifname, os.NewSyscallError("recvfrom", err))
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		frame := c.buf[:n]
		if match == nil || match(frame) {
			return append([]byte(nil), frame...), nil
		}
	}
}

// RawStats are a socket's receive counters since it was opened.
type RawStats struct {
	// Arrived counts the frames the kernel offered the socket, Dropped
	// among them included: every frame that reached the interface, as far
	// as the socket could see (outgoing ones excepted).
	Arrived uint64
	// Dropped counts frames the socket itself discarded because its
	// receive buffer was full: the network delivered them, the reader was
	// too slow. A test that counts received frames should report these as
	// its own loss, not the system under test's.
	Dropped uint64
}

// Stats returns the socket's PACKET_STATISTICS since it was opened. It may
// be called concurrently with Send, but not with Recv or Close.
func (c *RawConn) Stats() (RawStats, error) {
	st, err := unix.GetsockoptTpacketStats(c.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return c.stats, fmt.Errorf("stats of %s: %w", c.ifname, os.NewSyscallError("getsockopt", err))
	}
	// tp_packets already counts the dropped frames.
	c.stats.Arrived += uint64(st.Packets)
	c.stats.Dropped += uint64(st.Drops)
	return c.stats, nil
}

// Close closes the socket. It is safe to call more than once.
func (c *RawConn) Close() error {
	if c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}
