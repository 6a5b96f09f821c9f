// Command bedcost measures what one unit of work costs where it runs: the
// Go half of the bed-distortion table in bench/README.md ("How the beds
// distort"). bench/scenarios/bedcost runs it, with its C half csrc/bedcost.c,
// on the host, in the uml bed and in the vm bed, and prints each bed's
// costs as ratios to the host's, so that a figure measured in a bed can be
// read for what it says about hardware.
//
// Each probe doubles its iteration count until one batch lasts at least
// -min, then repeats that batch -reps times and prints the fastest batch,
// one line per probe:
//
//	<probe> <ns per op> <iterations per batch>
//
// Probes (all, unless named on the command line):
//
//	cpu-go      one step of a xorshift64 loop, as cpu-c in C
//	syscall-go  getppid(2) through syscall.RawSyscall (no scheduler hooks)
//	clock-go    time.Now (vDSO where the kernel has one)
//	chan-go     a round trip between two goroutines over unbuffered
//	            channels: the Go runtime's park and wake-up, with futexes
//	            once the two run on different threads
//	netlink-go  a generic netlink request and its reply (CTRL_CMD_GETFAMILY
//	            for "nlctrl"), the shape of every control-plane call the
//	            switch makes to the datapath
//	ovsdp-go    OVS_DP_CMD_GET dump of the openvswitch module's datapaths,
//	            where the module is loaded (skipped, with a note on stderr,
//	            where it is not)
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

type probe struct {
	name  string
	start int
	// setup prepares the probe and returns its batch function and a
	// cleanup; it returns an error when the probe cannot run here.
	setup func() (run func(n int) error, done func(), err error)
}

var sink uint64

func main() {
	minDur := flag.Duration("min", 200*time.Millisecond, "shortest timed batch")
	reps := flag.Int("reps", 3, "timed batches per probe; the fastest is printed")
	flag.Parse()
	want := map[string]bool{}
	for _, a := range flag.Args() {
		want[a] = true
	}
	failed := false
	for _, p := range probes() {
		if len(want) > 0 && !want[p.name] {
			continue
		}
		ns, n, err := measure(p, *minDur, *reps)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bedcost: %s: %v\n", p.name, err)
			if p.name != "ovsdp-go" || len(want) > 0 {
				failed = true
			}
			continue
		}
		fmt.Printf("%s %.3f %d\n", p.name, ns, n)
	}
	if failed {
		os.Exit(1)
	}
}

func measure(p probe, minDur time.Duration, reps int) (nsPerOp float64, n int, err error) {
	run, done, err := p.setup()
	if err != nil {
		return 0, 0, err
	}
	defer done()
	n = p.start
	var t time.Duration
	for {
		t0 := time.Now()
		if err := run(n); err != nil {
			return 0, 0, err
		}
		t = time.Since(t0)
		if t >= minDur || n > 1<<40 {
			break
		}
		n *= 2
	}
	best := t
	for r := 1; r < reps; r++ {
		t0 := time.Now()
		if err := run(n); err != nil {
			return 0, 0, err
		}
		if t = time.Since(t0); t < best {
			best = t
		}
	}
	return float64(best.Nanoseconds()) / float64(n), n, nil
}

func noop() {}

func probes() []probe {
	return []probe{
		{"cpu-go", 1 << 20, func() (func(int) error, func(), error) {
			return func(n int) error {
				x := uint64(88172645463325252)
				for i := 0; i < n; i++ {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
				}
				sink = x
				return nil
			}, noop, nil
		}},
		{"syscall-go", 64, func() (func(int) error, func(), error) {
			return func(n int) error {
				for i := 0; i < n; i++ {
					r, _, _ := syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
					sink += uint64(r)
				}
				return nil
			}, noop, nil
		}},
		{"clock-go", 1024, func() (func(int) error, func(), error) {
			return func(n int) error {
				for i := 0; i < n; i++ {
					sink += uint64(time.Now().UnixNano())
				}
				return nil
			}, noop, nil
		}},
		{"chan-go", 16, chanSetup},
		{"netlink-go", 16, func() (func(int) error, func(), error) {
			c, err := genetlink.Dial(nil)
			if err != nil {
				return nil, nil, err
			}
			return func(n int) error {
				for i := 0; i < n; i++ {
					if _, err := c.GetFamily("nlctrl"); err != nil {
						return err
					}
				}
				return nil
			}, func() { c.Close() }, nil
		}},
		{"ovsdp-go", 16, ovsdpSetup},
	}
}

// chanSetup starts the echoing goroutine of chan-go. With GOMAXPROCS ≥ 2
// the two goroutines usually sit on different threads, so a round trip
// costs two runtime wake-ups, each a futex where the peer's thread slept.
func chanSetup() (func(int) error, func(), error) {
	ping, pong := make(chan struct{}), make(chan struct{})
	go func() {
		for range ping {
			pong <- struct{}{}
		}
	}()
	return func(n int) error {
		for i := 0; i < n; i++ {
			ping <- struct{}{}
			<-pong
		}
		return nil
	}, func() { close(ping) }, nil
}

// ovsdpSetup resolves the ovs_datapath family; without the openvswitch
// module there is none, and the probe reports that instead of a figure.
func ovsdpSetup() (func(int) error, func(), error) {
	c, err := genetlink.Dial(nil)
	if err != nil {
		return nil, nil, err
	}
	fam, err := c.GetFamily("ovs_datapath")
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("no ovs_datapath family here (openvswitch module not loaded): %w", err)
	}
	// struct ovs_header: the datapath ifindex; 0 with NLM_F_DUMP lists all.
	hdr := make([]byte, 4)
	const ovsDPCmdGet = 3
	req := genetlink.Message{Header: genetlink.Header{Command: ovsDPCmdGet, Version: fam.Version}, Data: hdr}
	return func(n int) error {
		for i := 0; i < n; i++ {
			if _, err := c.Execute(req, fam.ID, netlink.Request|netlink.Dump); err != nil {
				return err
			}
		}
		return nil
	}, func() { c.Close() }, nil
}

func init() {
	// A one-CPU bed gives one P; say so, since chan-go then measures two
	// goroutines on one thread (no futex) rather than a cross-thread wake.
	if runtime.GOMAXPROCS(0) < 2 {
		fmt.Fprintf(os.Stderr, "bedcost: GOMAXPROCS=%d: chan-go measures goroutine switches on one thread\n", runtime.GOMAXPROCS(0))
	}
}
