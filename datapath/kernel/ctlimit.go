package kernel

import (
	"encoding/binary"
	"fmt"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/netlinkio"
	"golang.org/x/sys/unix"
)

// Conntrack zone limits over the ovs_ct_limit family (linux/openvswitch.h).
// The one attribute, OVS_CT_LIMIT_ATTR_ZONE_LIMIT, holds an array of
// struct ovs_zone_limit {int32 zone_id; u32 limit; u32 count} in host
// byte order; zone_id -1 (OVS_ZONE_LIMIT_DEFAULT_ZONE) is the default.
const (
	ctLimitCmdSet = 1
	ctLimitCmdDel = 2
	ctLimitCmdGet = 3

	ctLimitAttrZoneLimit = 1

	zoneLimitLen     = 12
	zoneLimitDefault = -1
)

var _ datapath.CTLimiter = (*Datapath)(nil)

func (d *Datapath) ctLimitFamily() (netlinkio.Family, error) {
	fam, err := d.conn.Family("ovs_ct_limit")
	if err != nil {
		return fam, fmt.Errorf("generic netlink family ovs_ct_limit: %w: %w", datapath.ErrNotSupported, err)
	}
	return fam, nil
}

func appendZoneLimit(b []byte, zone int32, limit uint32) []byte {
	b = binary.NativeEndian.AppendUint32(b, uint32(zone))
	b = binary.NativeEndian.AppendUint32(b, limit)
	return binary.NativeEndian.AppendUint32(b, 0)
}

// ctLimitRequest is the ovs_header and one ZONE_LIMIT attribute holding
// the entries that add appends.
func (d *Datapath) ctLimitRequest(add func([]byte) []byte) []byte {
	b := binary.NativeEndian.AppendUint32(make([]byte, 0, 256), uint32(int32(d.index)))
	b, at := netlinkio.BeginNested(b, ctLimitAttrZoneLimit)
	b = add(b)
	return netlinkio.EndNested(b, at)
}

// SetCTLimits is OVS_CT_LIMIT_CMD_SET.
func (d *Datapath) SetCTLimits(def *uint32, zones []datapath.ZoneLimit) error {
	fam, err := d.ctLimitFamily()
	if err != nil {
		return err
	}
	b := d.ctLimitRequest(func(b []byte) []byte {
		if def != nil {
			b = appendZoneLimit(b, zoneLimitDefault, *def)
		}
		for _, z := range zones {
			b = appendZoneLimit(b, int32(z.Zone), z.Limit)
		}
		return b
	})
	if _, err := d.conn.Execute("ct limit set", fam, ctLimitCmdSet, netlinkio.FlagEcho, b); err != nil {
		return datapath.WrapError("ct limit set", d.name, err)
	}
	return nil
}

// DelCTLimits is OVS_CT_LIMIT_CMD_DEL.
func (d *Datapath) DelCTLimits(zones []uint16) error {
	fam, err := d.ctLimitFamily()
	if err != nil {
		return err
	}
	b := d.ctLimitRequest(func(b []byte) []byte {
		for _, z := range zones {
			b = appendZoneLimit(b, int32(z), 0)
		}
		return b
	})
	if _, err := d.conn.Execute("ct limit del", fam, ctLimitCmdDel, netlinkio.FlagEcho, b); err != nil {
		return datapath.WrapError("ct limit del", d.name, err)
	}
	return nil
}

// GetCTLimits is OVS_CT_LIMIT_CMD_GET. Asked for zones, the request
// carries the default zone first, as ovs-vswitchd's does, so that the
// reply always holds the default.
func (d *Datapath) GetCTLimits(zones []uint16) (uint32, []datapath.ZoneLimit, error) {
	fam, err := d.ctLimitFamily()
	if err != nil {
		return 0, nil, err
	}
	var b []byte
	if len(zones) == 0 {
		b = binary.NativeEndian.AppendUint32(nil, uint32(int32(d.index)))
	} else {
		b = d.ctLimitRequest(func(b []byte) []byte {
			b = appendZoneLimit(b, zoneLimitDefault, 0)
			for _, z := range zones {
				b = appendZoneLimit(b, int32(z), 0)
			}
			return b
		})
	}
	msgs, err := d.conn.Execute("ct limit get", fam, ctLimitCmdGet, netlinkio.FlagEcho, b)
	if err != nil {
		return 0, nil, datapath.WrapError("ct limit get", d.name, err)
	}
	if len(msgs) == 0 {
		return 0, nil, fmt.Errorf("ct limit get: no reply: %w", unix.EBADMSG)
	}
	return parseCTLimits(msgs[0])
}

// parseCTLimits reads an OVS_CT_LIMIT_CMD_GET reply: the ovs_header, then
// ZONE_LIMIT with the default entry and the zones' entries.
func parseCTLimits(b []byte) (def uint32, out []datapath.ZoneLimit, err error) {
	if len(b) < datapath.OVSHeaderLen {
		return 0, nil, fmt.Errorf("ct limit reply of %d bytes: %w", len(b), unix.EBADMSG)
	}
	haveDef := false
	it := netlinkio.NewAttrIter(b[datapath.OVSHeaderLen:])
	for it.Next() {
		if it.Type() != ctLimitAttrZoneLimit {
			continue
		}
		data := it.Data()
		if len(data)%zoneLimitLen != 0 {
			return 0, nil, fmt.Errorf("ct limit reply: zone limits of %d bytes: %w", len(data), unix.EBADMSG)
		}
		for ; len(data) > 0; data = data[zoneLimitLen:] {
			zone := int32(binary.NativeEndian.Uint32(data))
			limit := binary.NativeEndian.Uint32(data[4:])
			count := binary.NativeEndian.Uint32(data[8:])
			switch {
			case zone == zoneLimitDefault:
				def, haveDef = limit, true
			case zone < 0 || zone > 0xffff:
				return 0, nil, fmt.Errorf("ct limit reply: zone %d: %w", zone, unix.EBADMSG)
			default:
				out = append(out, datapath.ZoneLimit{Zone: uint16(zone), Limit: limit, Count: count})
			}
		}
	}
	if err := it.Err(); err != nil {
		return 0, nil, fmt.Errorf("ct limit reply: %w", err)
	}
	if !haveDef {
		return 0, nil, fmt.Errorf("ct limit reply without the default limit: %w", unix.EBADMSG)
	}
	return def, out, nil
}
