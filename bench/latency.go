package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// LatencyResult is what a latency run measured, in whole milliseconds as
// ovs-benchmark reports them.
type LatencyResult struct {
	Attempts int
	Errors   int
	MinMS    int
	MaxMS    int
	TotalMS  int
}

// AvgMS is the integer average over every attempt.
func (r LatencyResult) AvgMS() int {
	if r.Attempts == 0 {
		return 0
	}
	return r.TotalMS / r.Attempts
}

// Line is ovs-benchmark's final latency line.
func (r LatencyResult) Line() string {
	return fmt.Sprintf("min %d ms, max %d ms, avg %d ms", r.MinMS, r.MaxMS, r.AvgMS())
}

// RunLatency runs Batches batches of Sockets simultaneous attempts and
// draws ovs-benchmark's bar chart to out: a new row whenever the completion
// time in milliseconds changes, the time right-aligned in five columns,
// then one mark per attempt that ended in that millisecond ('.' connected,
// '!' failed). The final line gives min, max and average.
//
// Unlike ovs-benchmark, an attempt refused at once is counted as a failure
// at 0 ms instead of leaking its socket and vanishing from the total.
func RunLatency(ctx context.Context, o *Options, out io.Writer) (LatencyResult, error) {
	if o.Sockets < 1 || o.Sockets > MaxSockets {
		return LatencyResult{}, fmt.Errorf("-s must be between 1 and %d", MaxSockets)
	}
	if o.Batches < 0 {
		return LatencyResult{}, fmt.Errorf("-b must not be negative")
	}
	c, err := newConnector(o)
	if err != nil {
		return LatencyResult{}, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w := bufio.NewWriter(out)
	defer w.Flush()

	res := LatencyResult{MinMS: -1}
	prev := -1
	mark := func(ms int, failed bool) {
		res.Attempts++
		res.TotalMS += ms
		if res.MinMS < 0 || ms < res.MinMS {
			res.MinMS = ms
		}
		if ms > res.MaxMS {
			res.MaxMS = ms
		}
		if ms != prev {
			fmt.Fprintf(w, "\n%5d ", ms)
			prev = ms
		}
		ch := byte('.')
		if failed {
			ch = '!'
			res.Errors++
		}
		w.WriteByte(ch)
	}
	fds := make([]unix.PollFd, 0, o.Sockets)
	for b := 0; b < o.Batches && ctx.Err() == nil; b++ {
		start := time.Now()
		fds = fds[:0]
		for i := 0; i < o.Sockets; i++ {
			fd, done, failed, err := c.connect()
			if err != nil {
				for _, p := range fds {
					unix.Close(int(p.Fd))
				}
				return res, err
			}
			if done {
				mark(0, failed)
				continue
			}
			fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLOUT})
		}
		for len(fds) > 0 {
			if _, err := unix.Poll(fds, 1000); err != nil && err != unix.EINTR {
				return res, fmt.Errorf("poll: %w", err)
			}
			ms := int(time.Since(start).Milliseconds())
			kept := fds[:0]
			for _, p := range fds {
				if p.Revents == 0 {
					kept = append(kept, p)
					continue
				}
				closeConn(int(p.Fd))
				mark(ms, p.Revents&(unix.POLLERR|unix.POLLHUP) != 0)
			}
			fds = kept
			if ctx.Err() != nil {
				for _, p := range fds {
					unix.Close(int(p.Fd))
				}
				return res, nil
			}
		}
		w.WriteByte('\n')
	}
	if res.MinMS < 0 {
		res.MinMS = 0
	}
	fmt.Fprintln(w, res.Line())
	return res, nil
}
