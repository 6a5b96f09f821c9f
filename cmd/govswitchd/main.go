// Command govswitchd is a Go replacement for ovs-vswitchd over the Linux
// openvswitch kernel datapath. It takes ovs-vswitchd's command line and
// environment; see vswitchd.Usage, or govswitchd --help.
package main

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/govswitch/govswitch/vswitchd"
)

// init turns transparent huge pages off for the process before the heap
// grows. Where the kernel says THP "always" (Debian's does), the first
// touch of any 2 MB-aligned stretch of a Go heap arena can fault in a whole
// huge page, so a daemon whose live heap is 3 MB showed 15 MB resident
// (measured in the vm bed). The switch's hot data is small and reused
// (preallocated batch buffers), so it gains nothing from huge pages.
// The flag is the process's: it holds for every later fault and is kept
// across the fork and exec of --detach and --monitor. A kernel without
// THP refuses it (EINVAL), which changes nothing.
func init() {
	_ = unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0)
}

func main() { os.Exit(vswitchd.Main()) }
