package ofproto

import (
	"fmt"

	"github.com/govswitch/govswitch/ofproto/openflow"
)

// portConfig is the OFPPC_* bits of p's configuration (NO_FLOOD is
// OpenFlow 1.0's bit; callers for later versions leave it out).
func portConfig(p *Port) uint32 {
	var c uint32
	for _, f := range []struct {
		on  bool
		bit uint32
	}{{p.Down, openflow.PortConfigDown}, {p.NoRecv, openflow.PortConfigNoRecv}, {p.NoFwd, openflow.PortConfigNoFwd},
		{p.NoPacketIn, openflow.PortConfigNoPacket}, {p.NoFlood, openflow.Port10ConfigNoFlood}} {
		if f.on {
			c |= f.bit
		}
	}
	return c
}

// ModPort applies a port mod's config bits under mask to OpenFlow port
// ofport (ovs-ofctl mod-port): down/up also set the network device
// administratively down or up, as ovs-vswitchd does, through the backer's
// SetLinkUp; no-receive, no-forward and no-packet-in take effect in
// translation, and no-flood (OpenFlow 1.0's bit, v10) in flooding. Every
// datapath flow is re-translated. changed is false when nothing changed.
func (b *Bridge) ModPort(ofport, config, mask uint32, v10 bool) (p Port, changed bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.Ports.Snapshot().ByOF(ofport)
	if old == nil {
		return Port{}, false, fmt.Errorf("OpenFlow port %d: %w", ofport, ErrNoPort)
	}
	np := *old
	set := func(field *bool, bit uint32) {
		if mask&bit != 0 {
			*field = config&bit != 0
		}
	}
	set(&np.Down, openflow.PortConfigDown)
	set(&np.NoRecv, openflow.PortConfigNoRecv)
	set(&np.NoFwd, openflow.PortConfigNoFwd)
	set(&np.NoPacketIn, openflow.PortConfigNoPacket)
	if v10 {
		set(&np.NoFlood, openflow.Port10ConfigNoFlood)
	}
	if np.Equal(old) {
		return np, false, nil
	}
	if np.Down != old.Down && !np.IsPatch() {
		if fn := b.Backer.SetLinkUp; fn != nil {
			if err := fn(np.Name, !np.Down); err != nil {
				return *old, false, fmt.Errorf("port %s: set the device %s: %w", np.Name, upDown(!np.Down), err)
			}
		}
	}
	if err := b.Ports.Add(np); err != nil {
		return *old, false, err
	}
	b.Tables.Invalidate()
	return np, true, nil
}

func upDown(up bool) string {
	if up {
		return "up"
	}
	return "down"
}

// Equal reports whether p and q are the same port configuration.
func (p *Port) Equal(q *Port) bool {
	return p.OFPort == q.OFPort && p.DPPort == q.DPPort && p.Name == q.Name && p.HWAddr == q.HWAddr &&
		p.Type == q.Type && p.NoFlood == q.NoFlood && p.Down == q.Down && p.NoRecv == q.NoRecv &&
		p.NoFwd == q.NoFwd && p.NoPacketIn == q.NoPacketIn && p.VLAN.Equal(&q.VLAN) && p.Peer == q.Peer
}
