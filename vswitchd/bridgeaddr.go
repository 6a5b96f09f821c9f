package vswitchd

import (
	"bytes"
	"fmt"
	"net"

	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/vishvananda/netlink"
)

// SetBridgeAddress gives the bridge's own port (the internal device named
// after the bridge) the Ethernet address mac, and the bridge the datapath
// id dpid, as ovs-vswitchd's bridge_configure_datapath_id does at every
// reconfiguration. The in-memory datapath's bridges have no device; they
// take the datapath id alone.
func (s *ovsdbSwitch) SetBridgeAddress(bridge string, mac net.HardwareAddr, dpid uint64) error {
	b := s.d.Bridge(bridge)
	if b == nil {
		return fmt.Errorf("bridge %s: not running", bridge)
	}
	if old := b.DatapathID(); old != dpid {
		b.SetDatapathID(dpid)
		s.d.log.Info(fmt.Sprintf("bridge %s: using datapath ID %016x", bridge, dpid))
	}
	if _, inMemory := s.d.provider.(*dummy.Provider); inMemory {
		return nil
	}
	l, err := netlink.LinkByName(bridge)
	if err != nil {
		return fmt.Errorf("device %s: %w", bridge, err)
	}
	if bytes.Equal(l.Attrs().HardwareAddr, mac) {
		return nil
	}
	if err := netlink.LinkSetHardwareAddr(l, mac); err != nil {
		return fmt.Errorf("setting %s on %s: %w", mac, bridge, err)
	}
	return nil
}
