package vswitchd

import (
	"fmt"

	"github.com/govswitch/govswitch/datapath"
)

// logProbes logs what the kernel datapath was probed to support, in
// ovs-vswitchd's words and module (ofproto_dpif, INFO), once per daemon as
// ovs-vswitchd logs it once per datapath type. OVS's test suite reads the
// VLAN line: OVS_CHECK_8021AD skips the 802.1ad tests unless it says 2 or
// more. The probes themselves live with the datapath (datapath/kernel) and
// dpif/show-dp-features reports them.
func (d *Daemon) logProbes(dp datapath.Datapath) {
	d.probeLog.Do(func() {
		log := d.moduleLogger("ofproto_dpif")
		f := dp.Features()
		name := "system@" + dp.Name()
		if f.UFID {
			log.Info(name + ": Datapath supports unique flow ids")
		} else {
			log.Info(name + ": Datapath does not support unique flow ids")
		}
		log.Info(fmt.Sprintf("%s: VLAN header stack length probed as %d", name, f.MaxVLANHeaders))
	})
}
