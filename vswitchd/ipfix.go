package vswitchd

import (
	"fmt"
	"time"

	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ofproto/ipfix"
	"github.com/govswitch/govswitch/ovsdb"
)

var _ ovsdb.IPFIXSwitch = (*ovsdbSwitch)(nil)

// SetIPFIX runs the bridge's IPFIX row and its collector sets. Tunnel
// sampling (the VMware tunnel elements ovs-vswitchd adds to records of
// tunnel traffic with enable-tunnel-sampling, its default) is not done:
// a bridge with tunnel ports is warned that its records carry no tunnel
// fields.
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
	tunnelSampling := false
	if e := c.Bridge; e != nil {
		cfg.Bridge = &ofproto.IPFIXExporter{Config: exporter(e), Sampling: e.Sampling, ObsDomainID: e.ObsDomainID,
			ObsPointID: e.ObsPointID, InputSampling: e.InputSampling, OutputSampling: e.OutputSampling}
		tunnelSampling = e.TunnelSampling
	}
	for i := range c.Sets {
		cfg.Sets[c.Sets[i].ID] = exporter(&c.Sets[i].IPFIXExporterConfig)
		tunnelSampling = tunnelSampling || c.Sets[i].TunnelSampling
	}
	if err := b.SetIPFIX(&cfg); err != nil {
		b.SetIPFIX(nil) // what ran before is not what the rows ask for
		return err
	}
	if tunnelSampling {
		for _, p := range b.Ports.Snapshot().List() {
			if p.IsTunnel() {
				s.d.log.Warn("IPFIX tunnel sampling is not supported by govswitchd: records of tunnel traffic carry no tunnel elements",
					"bridge", bridge, "port", p.Name)
				break
			}
		}
	}
	return nil
}
