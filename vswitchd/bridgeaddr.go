package vswitchd

import (
	"bytes"
	"fmt"

	"github.com/govswitch/govswitch/datapath/dummy"
	"github.com/govswitch/govswitch/ovsdb"
	"github.com/vishvananda/netlink"
)

// SetBridgeRuntime applies the settings a running bridge takes at every
// reconfiguration: forward-bpdu, multicast snooping, the switch
// description, and, as
// ovs-vswitchd's bridge_configure_datapath_id, the Ethernet address of its
// own port (the internal device named after the bridge) and its datapath
// id. The in-memory datapath's bridges have no device; they take the
// datapath id alone.
func (s *ovsdbSwitch) SetBridgeRuntime(bridge string, rt ovsdb.BridgeRuntime) error {
	b := s.d.Bridge(bridge)
	if b == nil {
		return fmt.Errorf("bridge %s: not running", bridge)
	}
	b.SetForwardBPDU(rt.ForwardBPDU)
	s.setMcastSnooping(b, bridge, rt.Mcast) // mcast.go
	b.SetDescription(rt.SerialNum, rt.DPDesc)
	mac, dpid := rt.MAC, rt.DatapathID
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
