package testbed

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// VswitchdMinUptime is how long the system must have been up before
// ovs-vswitchd 3.1 is started. Its count of CPU cores is refreshed at most
// every 10 s of monotonic time, starting from time 0, so in the first 10 s
// after boot it reads 0 cores, configures 0 upcall handlers in per-CPU
// dispatch mode, and every miss is counted as lost ("lookups: ... lost:N")
// for as long as it runs. Fresh beds are seconds old; real machines are
// not, which is why nobody else meets this. A test that starts
// ovs-vswitchd calls WaitUptime(tb, VswitchdMinUptime) first.
const VswitchdMinUptime = 11 * time.Second

// WaitUptime blocks until the system has been up for at least d, as
// /proc/uptime tells. It ends the test with tb.Fatal if /proc/uptime cannot
// be read or parsed.
func WaitUptime(tb testing.TB, d time.Duration) {
	tb.Helper()
	for {
		b, err := os.ReadFile("/proc/uptime")
		if err != nil {
			tb.Fatalf("wait for uptime %v: %v", d, err)
		}
		up, err := parseUptime(string(b))
		if err != nil {
			tb.Fatalf("wait for uptime %v: %v", d, err)
		}
		if up >= d {
			return
		}
		time.Sleep(min(d-up, 100*time.Millisecond))
	}
}

// parseUptime reads the first field of /proc/uptime: seconds since boot,
// with a fractional part.
func parseUptime(s string) (time.Duration, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/uptime: empty")
	}
	secs, err := strconv.ParseFloat(f[0], 64)
	if err != nil || !(secs >= 0) || math.IsInf(secs, 1) {
		return 0, fmt.Errorf("/proc/uptime: bad uptime %q", f[0])
	}
	return time.Duration(secs * float64(time.Second)), nil
}
