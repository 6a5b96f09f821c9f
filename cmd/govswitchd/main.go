// Command govswitchd is a Go replacement for ovs-vswitchd over the Linux
// openvswitch kernel datapath. It takes ovs-vswitchd's command line and
// environment; see vswitchd.Usage, or govswitchd --help.
package main

import (
	"os"

	"github.com/govswitch/govswitch/internal/nothp"
	"github.com/govswitch/govswitch/vswitchd"
)

func main() {
	nothp.Reexec() // transparent huge pages off, from the first page on
	os.Exit(vswitchd.Main())
}
