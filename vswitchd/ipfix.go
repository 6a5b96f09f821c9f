package vswitchd

import (
	"fmt"
	"time"

	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ofproto/ipfix"
	"github.com/govswitch/govswitch/ovsdb"
)

var _ ovsdb.IPFIXSwitch = (*ovsdbSwitch)(nil)

// SetIPFIX runs the bridge's IPFIX row and its collector sets. With
// enable-tunnel-sampling (the default) records of traffic received on or
// sent to a vxlan, gre or geneve port carry the VMware tunnel elements,
// as ovs-vswitchd's do (ofproto/ipfix_bridge.go).
func (s *ovsdbSwitch) SetIPFIX(bridge string, c *ovsdb.IPFIXConfig) error {
	b := s.d.Bridge(bridge)
	if b == nil {
		return fmt.Errorf("bridge %s: not running", bridge)
	}
	if c == nil {
		return b.SetIPFIX(nil)
	}
	exporter := func(e *ovsdb.IPFIXExporterConfig) ipfix.Config {
		return ipfix.Config{Targets: e.Targets, ActiveTimeout: time.Duration(e.CacheActiveTimeout) * time.Second,
			MaxFlows: int(e.CacheMaxFlows), VirtualObsID: e.VirtualObsID,
			TunnelSampling: e.TunnelSampling}
	}
	cfg := ofproto.IPFIXConfig{Sets: map[uint32]ipfix.Config{}}
	if e := c.Bridge; e != nil {
		cfg.Bridge = &ofproto.IPFIXExporter{Config: exporter(e), Sampling: e.Sampling, ObsDomainID: e.ObsDomainID,
			ObsPointID: e.ObsPointID, InputSampling: e.InputSampling, OutputSampling: e.OutputSampling}
	}
	for i := range c.Sets {
		cfg.Sets[c.Sets[i].ID] = exporter(&c.Sets[i].IPFIXExporterConfig)
	}
	if err := b.SetIPFIX(&cfg); err != nil {
		b.SetIPFIX(nil) // what ran before is not what the rows ask for
		return err
	}
	return nil
}
