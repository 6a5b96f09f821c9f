package vswitchd

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ovsdb"
)

// setMcastSnooping applies a bridge's multicast snooping (nil: off),
// logging when it turns on or off as ovs-vswitchd's bridge does not, so
// that the log says which switch behaviour is in force.
func (s *ovsdbSwitch) setMcastSnooping(b *ofproto.Bridge, bridge string, mc *ovsdb.McastConfig) {
	was := b.McastSnooping() != nil
	if mc == nil {
		b.SetMcastSnooping(nil)
		if was {
			s.d.log.Info(fmt.Sprintf("bridge %s: multicast snooping disabled", bridge))
		}
		return
	}
	b.SetMcastSnooping(&ofproto.McastSnooping{Aging: mc.Aging, TableSize: mc.TableSize,
		DisableFloodUnregistered: mc.DisableFloodUnregistered, Flood: mc.Flood, FloodReports: mc.FloodReports})
	if !was {
		s.d.log.Info(fmt.Sprintf("bridge %s: multicast snooping enabled", bridge))
	}
}

// mdbShow is mdb/show BRIDGE: each group's member ports, then the ports
// with a multicast router behind them ("querier"), with the seconds
// since each was last heard from, in ovs-vswitchd's columns.
func (d *Daemon) mdbShow(args []string) (string, error) {
	b, err := d.bridgeArg(args[0])
	if err != nil {
		return "", err
	}
	ms := b.McastSnooping()
	if ms == nil {
		return "", fmt.Errorf("multicast snooping is disabled")
	}
	var sb strings.Builder
	sb.WriteString(" port  VLAN  GROUP                Age\n")
	for _, e := range ms.Entries(time.Now()) {
		if e.Querier {
			fmt.Fprintf(&sb, "%5s  %4d  querier             %3d\n", portName(e.Port), e.VLAN, e.Age)
			continue
		}
		fmt.Fprintf(&sb, "%5s  %4d  %s         %3d\n", portName(e.Port), e.VLAN, formatGroup(e.Group), e.Age)
	}
	return sb.String(), nil
}

// formatGroup writes an IPv4-mapped group as a dotted quad, others as
// IPv6, as OVS's ipv6_format_mapped.
func formatGroup(a [16]byte) string {
	var zero [10]byte
	if [10]byte(a[:10]) == zero && a[10] == 0xff && a[11] == 0xff {
		return fmt.Sprintf("%d.%d.%d.%d", a[12], a[13], a[14], a[15])
	}
	return netip.AddrFrom16(a).String()
}

// mdbFlush is mdb/flush [BRIDGE]: forget every group and router port of
// one bridge (an error when its snooping is off) or of every bridge that
// snoops.
func (d *Daemon) mdbFlush(args []string) (string, error) {
	bridges := d.Bridges()
	if len(args) == 1 {
		b, err := d.bridgeArg(args[0])
		if err != nil {
			return "", err
		}
		if b.McastSnooping() == nil {
			return "", fmt.Errorf("multicast snooping is disabled")
		}
		bridges = []*ofproto.Bridge{b}
	}
	for _, b := range bridges {
		if ms := b.McastSnooping(); ms != nil {
			ms.Flush()
			b.Udpif.Wake() // flows to the flushed groups flood again
		}
	}
	return "table successfully flushed\n", nil
}
