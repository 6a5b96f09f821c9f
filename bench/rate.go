package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Options are the generator's settings, ovs-benchmark's flags.
type Options struct {
	Remote  Endpoint      // -r: where to connect (required)
	Local   Endpoint      // -l: what to bind client sockets to (optional)
	Sockets int           // -s: attempts outstanding at once (1..MaxSockets)
	Batches int           // -b: latency batches
	MaxRate float64       // -c: attempts per second; 0 = unlimited
	Timeout time.Duration // -T: stop after this long; 0 = run until ctx ends
	Order   Order         // port cycling
}

// RateResult is what a rate run counted.
type RateResult struct {
	Elapsed   time.Duration
	Completed uint64 // attempts that ended (connected, refused or failed)
	Failed    uint64 // attempts that ended in an error (POLLERR, refusal)
}

// OK returns the attempts that connected.
func (r RateResult) OK() uint64 { return r.Completed - r.Failed }

// Rate returns the average completed attempts per second.
func (r RateResult) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Completed) / r.Elapsed.Seconds()
}

// Line formats r as ovs-benchmark's once-a-second line.
func (r RateResult) Line() string {
	return fmt.Sprintf("%.3f s elapsed, %d OK, %d failed, avg %.1f/s",
		r.Elapsed.Seconds(), r.OK(), r.Failed, r.Rate())
}

// connector opens non-blocking client sockets per the options.
type connector struct {
	opts  *Options
	ports *portCycle
	rsa   unix.Sockaddr
	lsa   unix.Sockaddr
	v6    bool
}

func newConnector(o *Options) (*connector, error) {
	if o.Remote.IP == nil {
		return nil, errors.New("-r (remote address) is required")
	}
	c := &connector{opts: o, v6: o.Remote.IP.To4() == nil}
	if o.Local.IP != nil && (o.Local.IP.To4() == nil) != c.v6 {
		return nil, errors.New("-l and -r must be the same address family")
	}
	c.ports = newPortCycle(o.Local.Ports, o.Remote.Ports, o.Order)
	c.rsa = sockaddr(o.Remote.IP, 0)
	if o.Local.IP != nil || o.Local.Ports.Min != 0 {
		c.lsa = sockaddr(o.Local.IP, 0)
	}
	return c, nil
}

func sockaddr(ip []byte, port uint16) unix.Sockaddr {
	if v4 := to4(ip); v4 != nil || ip == nil {
		sa := &unix.SockaddrInet4{Port: int(port)}
		copy(sa.Addr[:], v4)
		return sa
	}
	sa := &unix.SockaddrInet6{Port: int(port)}
	copy(sa.Addr[:], ip)
	return sa
}

func to4(ip []byte) []byte {
	if len(ip) == 4 {
		return ip
	}
	if len(ip) == 16 {
		for i := 0; i < 10; i++ {
			if ip[i] != 0 {
				return nil
			}
		}
		if ip[10] == 0xff && ip[11] == 0xff {
			return ip[12:]
		}
	}
	return nil
}

func setPort(sa unix.Sockaddr, port uint16) {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		sa.Port = int(port)
	case *unix.SockaddrInet6:
		sa.Port = int(port)
	}
}

// connect starts one attempt. It returns the socket and done=false while
// the connection is in progress; done=true when it ended at once (the fd
// is then closed), with failed telling how.
func (c *connector) connect() (fd int, done, failed bool, err error) {
	domain := unix.AF_INET
	if c.v6 {
		domain = unix.AF_INET6
	}
	fd, err = unix.Socket(domain, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, false, false, fmt.Errorf("socket: %w", err)
	}
	if c.lsa != nil {
		if err := c.bind(fd); err != nil {
			unix.Close(fd)
			return -1, false, false, err
		}
	}
	setPort(c.rsa, c.ports.rp)
	c.ports.next()
	switch err := unix.Connect(fd, c.rsa); err {
	case unix.EINPROGRESS:
		return fd, false, false, nil
	case nil:
		closeConn(fd)
		return -1, true, false, nil
	case unix.ECONNREFUSED:
		// ovs-benchmark leaked this fd and did not count the attempt; we
		// close it and count a failure.
		unix.Close(fd)
		return -1, true, true, nil
	default:
		unix.Close(fd)
		return -1, false, false, fmt.Errorf("connect %s: %w", c.opts.Remote, err)
	}
}

// bind binds fd to the local address and the cycle's current local port,
// moving on to the next port while the current one is in use.
func (c *connector) bind(fd int) error {
	r := c.opts.Local.Ports
	tries := int(r.Max) - int(r.Min) + 1
	for i := 0; i < tries; i++ {
		setPort(c.lsa, c.ports.lp)
		err := unix.Bind(fd, c.lsa)
		if err == nil {
			return nil
		}
		if err != unix.EADDRINUSE && err != unix.EINTR {
			return fmt.Errorf("bind %s port %d: %w", c.opts.Local, c.ports.lp, err)
		}
		c.ports.lp, _ = step(c.ports.lp, r)
	}
	return fmt.Errorf("bind %s: every local port is in use", c.opts.Local)
}

func closeConn(fd int) {
	unix.Shutdown(fd, unix.SHUT_RDWR)
	unix.Close(fd)
}

// RunRate runs the rate benchmark: it keeps up to Sockets attempts
// outstanding (at most MaxRate per second when set), counts each attempt
// that ends, and writes ovs-benchmark's line to out about once a second.
// It stops after Timeout (checked, as ovs-benchmark does, right after a
// line is written) or when ctx ends, and returns the totals.
func RunRate(ctx context.Context, o *Options, out io.Writer) (RateResult, error) {
	if o.Sockets < 1 || o.Sockets > MaxSockets {
		return RateResult{}, fmt.Errorf("-s must be between 1 and %d", MaxSockets)
	}
	c, err := newConnector(o)
	if err != nil {
		return RateResult{}, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	fds := make([]unix.PollFd, 0, o.Sockets)
	defer func() {
		for _, p := range fds {
			unix.Close(int(p.Fd))
		}
	}()
	var res RateResult
	start := time.Now()
	lastLine := start
	for {
		now := time.Now()
		allowed := o.Sockets - len(fds)
		if o.MaxRate > 0 {
			ms := float64(now.Sub(start).Milliseconds())
			budget := int64(math.Floor(ms*o.MaxRate/1000)) - int64(res.Completed) - int64(len(fds))
			if budget < int64(allowed) {
				allowed = int(max(budget, 0))
			}
		}
		for i := 0; i < allowed; i++ {
			fd, done, failed, err := c.connect()
			if err != nil {
				return res, err
			}
			if done {
				res.Completed++
				if failed {
					res.Failed++
				}
				continue
			}
			fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLOUT})
		}

		timeout := 1000
		if o.MaxRate > 0 && len(fds) < o.Sockets {
			timeout = int(1000 / o.MaxRate)
		}
		if _, err := unix.Poll(fds, timeout); err != nil && err != unix.EINTR {
			return res, fmt.Errorf("poll: %w", err)
		}
		kept := fds[:0]
		for _, p := range fds {
			if p.Revents == 0 {
				kept = append(kept, p)
				continue
			}
			closeConn(int(p.Fd))
			res.Completed++
			if p.Revents&unix.POLLERR != 0 {
				res.Failed++
			}
		}
		fds = kept

		now = time.Now()
		if now.Sub(lastLine) >= time.Second {
			lastLine = now
			res.Elapsed = now.Sub(start)
			if out != nil {
				fmt.Fprintln(out, res.Line())
			}
			if o.Timeout > 0 && res.Elapsed > o.Timeout {
				return res, nil
			}
		}
		if ctx.Err() != nil {
			res.Elapsed = time.Since(start)
			return res, nil
		}
	}
}
