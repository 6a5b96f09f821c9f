package vswitchd

import (
	"fmt"
	"net"
	"time"

	"github.com/govswitch/govswitch/ofproto/netflow"
	"github.com/govswitch/govswitch/ovsdb"
)

var _ ovsdb.NetFlowSwitch = (*ovsdbSwitch)(nil)

// SetNetFlow runs the bridge's NetFlow row. The engine type and id the
// row leaves unset are the datapath's, as ovs-vswitchd's
// dpif_get_netflow_ids: the low byte of its device's ifindex.
func (s *ovsdbSwitch) SetNetFlow(bridge string, c *ovsdb.NetFlowConfig) error {
	b := s.d.Bridge(bridge)
	if b == nil {
		return fmt.Errorf("bridge %s: not running", bridge)
	}
	if c == nil {
		return b.SetNetFlow(nil)
	}
	def := uint8(0)
	if ifc, err := net.InterfaceByName(b.DP.Name()); err == nil {
		def = uint8(ifc.Index)
	}
	cfg := netflow.Config{Targets: c.Targets, EngineType: def, EngineID: def, AddIDToInterface: c.AddIDToInterface,
		ActiveTimeout: time.Duration(c.ActiveTimeout) * time.Second}
	if c.EngineType >= 0 {
		cfg.EngineType = uint8(c.EngineType)
	}
	if c.EngineID >= 0 {
		cfg.EngineID = uint8(c.EngineID)
	}
	if err := b.SetNetFlow(&cfg); err != nil {
		b.SetNetFlow(nil)
		return err
	}
	return nil
}
