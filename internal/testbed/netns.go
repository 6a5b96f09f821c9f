package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Netns is a named network namespace, made with `ip netns add` so that
// `ip netns exec`, ovs-dpctl and friends see it under /run/netns/Name.
type Netns struct {
	// Name is the namespace's name under /run/netns. Unique per process and
	// per test binary run.
	Name string

	handle netns.NsHandle  // open fd of the namespace, for setns
	nl     *netlink.Handle // rtnetlink socket living inside the namespace
}

// netnsSeq makes namespace names unique within one test binary; the pid
// makes them unique across binaries run side by side.
var netnsSeq atomic.Uint32

// NewNetns makes a fresh network namespace with its loopback up. It is
// deleted in tb.Cleanup, together with every interface still inside it.
// Failures end the test with tb.Fatal.
func NewNetns(tb testing.TB) *Netns {
	tb.Helper()
	name := fmt.Sprintf("gvs%d-%d", os.Getpid(), netnsSeq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		tb.Fatalf("ip netns add %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	n := &Netns{Name: name, handle: -1}
	tb.Cleanup(func() {
		if n.nl != nil {
			n.nl.Close()
		}
		if n.handle >= 0 {
			n.handle.Close()
		}
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			tb.Errorf("ip netns del %s: %v: %s", name, err, strings.TrimSpace(string(out)))
		}
	})

	h, err := netns.GetFromName(name)
	if err != nil {
		tb.Fatalf("open netns %s: %v", name, err)
	}
	n.handle = h
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		tb.Fatalf("rtnetlink in netns %s: %v", name, err)
	}
	n.nl = nl
	lo, err := nl.LinkByName("lo")
	if err != nil {
		tb.Fatalf("netns %s: find lo: %v", name, err)
	}
	if err := nl.LinkSetUp(lo); err != nil {
		tb.Fatalf("netns %s: set lo up: %v", name, err)
	}
	return n
}

// Do runs fn with the calling goroutine locked to its OS thread and that
// thread inside n, then moves the thread back to the namespace it was in.
// Sockets fn opens stay in n after Do returns; goroutines fn starts do not
// run in n. Do returns fn's error, or an error if the thread could not
// enter n. Should the thread fail to return to its namespace, Do leaves the
// goroutine locked to it, so that the runtime discards the thread when the
// goroutine ends instead of reusing it in the wrong namespace. Do may be
// called from several goroutines at once; each moves only its own thread.
func (n *Netns) Do(fn func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns %s: current namespace: %w", n.Name, err)
	}
	defer orig.Close()
	if err := netns.Set(n.handle); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns %s: enter: %w", n.Name, err)
	}
	fnErr := fn()
	if err := netns.Set(orig); err != nil {
		return fmt.Errorf("netns %s: return to original namespace (thread discarded): %w", n.Name, err)
	}
	runtime.UnlockOSThread()
	return fnErr
}

// Exec runs a command inside n with `ip netns exec` and returns its
// combined stdout and stderr. A non-zero exit is an error that carries the
// output as well.
func (n *Netns) Exec(name string, args ...string) (string, error) {
	argv := append([]string{"netns", "exec", n.Name, name}, args...)
	out, err := exec.Command("ip", argv...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip netns exec %s %s %s: %w: %s",
			n.Name, name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
