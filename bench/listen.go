package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Listener accepts and at once closes connections on a range of ports:
// the far end of a rate or latency run.
type Listener struct {
	fds      []int
	Accepted atomic.Uint64 // connections accepted so far; safe to read while serving
}

// Listen binds one socket per port of local's range (DefaultPort when it
// has none) with SO_REUSEADDR and a backlog of 10000. Unlike ovs-benchmark,
// it binds to local's IP when one is given instead of ignoring it.
func Listen(local Endpoint) (*Listener, error) {
	ports := local.Ports
	if ports.Min == 0 {
		ports = PortRange{DefaultPort, DefaultPort}
	}
	domain := unix.AF_INET
	if local.IP != nil && to4(local.IP) == nil {
		domain = unix.AF_INET6
	}
	l := &Listener{}
	for p := int(ports.Min); p <= int(ports.Max); p++ {
		fd, err := unix.Socket(domain, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("socket: %w", err)
		}
		l.fds = append(l.fds, fd)
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			l.Close()
			return nil, fmt.Errorf("SO_REUSEADDR: %w", err)
		}
		if err := unix.Bind(fd, sockaddr(local.IP, uint16(p))); err != nil {
			l.Close()
			return nil, fmt.Errorf("bind %s port %d: %w", local, p, err)
		}
		if err := unix.Listen(fd, 10000); err != nil {
			l.Close()
			return nil, fmt.Errorf("listen port %d: %w", p, err)
		}
	}
	return l, nil
}

// Serve accepts and closes connections until ctx ends.
func (l *Listener) Serve(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pfds := make([]unix.PollFd, len(l.fds))
	for i, fd := range l.fds {
		pfds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	}
	for ctx.Err() == nil {
		n, err := unix.Poll(pfds, 100)
		if err != nil && err != unix.EINTR {
			return fmt.Errorf("poll: %w", err)
		}
		if n <= 0 {
			continue
		}
		for i := range pfds {
			if pfds[i].Revents == 0 {
				continue
			}
			for {
				nfd, _, err := unix.Accept4(l.fds[i], unix.SOCK_CLOEXEC)
				if err != nil {
					break // EAGAIN: drained; other errors: try again next poll
				}
				unix.Close(nfd)
				l.Accepted.Add(1)
			}
		}
	}
	return nil
}

// Close closes the listening sockets.
func (l *Listener) Close() error {
	for _, fd := range l.fds {
		unix.Close(fd)
	}
	l.fds = nil
	return nil
}
