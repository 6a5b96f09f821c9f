package vswitchd

import (
	"fmt"

	"github.com/vishvananda/netlink"
)

// setLinkUp sets the host's network device name administratively up or
// down: what ovs-vswitchd does for ovs-ofctl mod-port up and down.
func setLinkUp(name string, up bool) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("device %s: %w", name, err)
	}
	if up {
		err = netlink.LinkSetUp(l)
	} else {
		err = netlink.LinkSetDown(l)
	}
	if err != nil {
		return fmt.Errorf("device %s: %w", name, err)
	}
	return nil
}
