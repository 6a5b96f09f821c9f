package vswitchd

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/govswitch/govswitch/ofproto/sflow"
	"github.com/govswitch/govswitch/ovsdb"
)

var _ ovsdb.SFlowSwitch = (*ovsdbSwitch)(nil)

// SetSFlow runs the bridge's sFlow row: the agent address is chosen as
// ovs-vswitchd's sflow_choose_agent_address chooses it, and a row whose
// agent address cannot be found is refused (ovs-vswitchd logs "could not
// determine IP address for sFlow agent" and runs no sFlow).
func (s *ovsdbSwitch) SetSFlow(bridge string, c *ovsdb.SFlowConfig) error {
	b := s.d.Bridge(bridge)
	if b == nil {
		return fmt.Errorf("bridge %s: not running", bridge)
	}
	if c == nil {
		return b.SetSFlow(nil)
	}
	agent, err := sflowAgentAddress(c.Agent, c.Targets)
	if err == nil {
		cfg := sflow.Config{Agent: agent, SubAgentID: uint32(c.SubID), Targets: c.Targets,
			Sampling: uint32(c.Sampling), Polling: time.Duration(c.Polling) * time.Second, Header: c.Header}
		err = b.SetSFlow(&cfg)
	}
	if err != nil {
		b.SetSFlow(nil) // what ran before is not what the row asks for
		return err
	}
	s.d.log.Info("creating sFlow agent", "bridge", bridge, "sub_id", c.SubID, "agent", agent.String())
	return nil
}

// sflowAgentAddress is the address the bridge's sFlow datagrams name as
// their agent: the agent device's first address that is not link-local;
// else the agent column itself when it is an IP address; else the source
// address the kernel's routes give for the first collector that has one.
func sflowAgentAddress(agent string, targets []string) (netip.Addr, error) {
	if agent != "" {
		if ifc, err := net.InterfaceByName(agent); err == nil {
			if addrs, err := ifc.Addrs(); err == nil {
				for _, a := range addrs {
					if ipn, ok := a.(*net.IPNet); ok {
						if ip, ok := netip.AddrFromSlice(ipn.IP); ok && !ip.Unmap().IsLinkLocalUnicast() {
							return ip.Unmap(), nil
						}
					}
				}
			}
		}
		if ip, err := netip.ParseAddr(agent); err == nil {
			return ip, nil
		}
	}
	for _, t := range targets {
		ap, err := sflow.ParseTarget(t)
		if err != nil {
			continue
		}
		// A connected UDP socket sends nothing; its local address is the
		// one the routing table picks for the collector.
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(ap))
		if err != nil {
			continue
		}
		la := c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
		c.Close()
		if la.IsValid() && !la.IsUnspecified() {
			return la, nil
		}
	}
	return netip.Addr{}, errors.New("could not determine IP address for sFlow agent")
}
