package ofproto

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/govswitch/govswitch/ofproto/openflow"
)

// The connection's side of groups and meters: group_mod and meter_mod,
// and the group and meter multipart requests.

// groupFeatureActions are the actions translation carries out in buckets,
// as OFPGFC action bitmaps (1 << OFPAT_*): in OpenFlow 1.0's numbering
// every 1.0 action; in 1.1+'s output, push/pop_vlan, set_queue, group,
// set/dec_nw_ttl and set_field. (ovs-vswitchd also lists the MPLS actions,
// which this switch refuses.)
const (
	groupFeatureActions10 = 0x00000fff
	groupFeatureActions13 = 1<<openflow.Act13Output | 1<<openflow.Act13PushVLAN | 1<<openflow.Act13PopVLAN |
		1<<openflow.Act13SetQueue | 1<<openflow.Act13Group | 1<<openflow.Act13SetNwTTL | 1<<openflow.Act13DecNwTTL |
		1<<openflow.Act13SetField
)

func (c *Conn) groupMod(raw []byte, m *openflow.GroupMod) error {
	if slave, err := c.isSlave(raw); slave {
		return err
	}
	err := c.m.b.Groups.Apply(m, time.Now())
	if err == nil {
		return nil
	}
	return c.sendGroupModError(raw, err)
}

// sendGroupModError answers raw with the error for a failed group mod.
func (c *Conn) sendGroupModError(raw []byte, err error) error {
	c.logRefusal("group mod", err)
	var ge *GroupError
	if errors.As(err, &ge) {
		if c.Version() == openflow.Version10 {
			return c.sendNXError(raw, openflow.Err13TypeGroupModFailed, ge.Code)
		}
		return c.sendError(raw, openflow.Err13TypeGroupModFailed, ge.Code)
	}
	return c.sendFlowModError(raw, err)
}

// sendFlowModError answers raw with the error for a failed flow mod (or
// bucket actions); OpenFlow 1.0 hears of a missing group as OVS tells it.
func (c *Conn) sendFlowModError(raw []byte, err error) error {
	if c.Version() == openflow.Version10 && ErrKind(err) == ErrBadOutGroup {
		return c.sendNXError(raw, openflow.ErrTypeBadAction, openflow.BadAction13BadOutGroup)
	}
	typ, code := flowModError(c.Version(), err)
	return c.sendError(raw, typ, code)
}

// NXETVendor is OVS's error type for an OpenFlow 1.1+ error sent over 1.0
// (NXET_VENDOR, code NXVC_VENDOR_ERROR).
const NXETVendor uint16 = 0xb0c2

// sendNXError answers raw over OpenFlow 1.0 with an error 1.0 has no code
// for, as ovs-vswitchd encodes it: NXET_VENDOR, then the Nicira vendor id
// and the 1.1+ type and code, then the whole request.
func (c *Conn) sendNXError(raw []byte, typ, code uint16) error {
	data := binary.BigEndian.AppendUint32(make([]byte, 0, 8+len(raw)), openflow.NXVendorID)
	data = binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(data, typ), code)
	if len(raw) > openflow.MaxMessageLen-openflow.HeaderLen-4-8 {
		raw = raw[:64]
	}
	var xid uint32
	if len(raw) >= openflow.HeaderLen {
		xid = binary.BigEndian.Uint32(raw[4:])
	}
	return c.queueMsg(&openflow.ErrorMsg{Envelope: openflow.Envelope{Version: openflow.Version10, Xid: xid},
		Type: NXETVendor, Data: append(data, raw...)})
}

func (c *Conn) meterMod(raw []byte, m *openflow.MeterMod) error {
	if slave, err := c.isSlave(raw); slave {
		return err
	}
	err := c.m.b.Meters.Apply(m, time.Now())
	if err == nil {
		return nil
	}
	var me *MeterError
	if errors.As(err, &me) {
		if me.Code == openflow.MeterModFailed13BadBand || me.Code == openflow.MeterModFailed13InvalidMeter {
			if warnOnce(err) {
				c.log.Warn("meter mod refused", "err", err)
			}
		} else {
			c.log.Debug("meter mod failed", "err", err)
		}
		return c.sendError(raw, openflow.Err13TypeMeterModFailed, me.Code)
	}
	c.log.Info("meter mod failed", "err", err)
	return c.sendError(raw, openflow.Err13TypeMeterModFailed, openflow.MeterModFailed13Unknown)
}

// groupsFor lists group id (openflow.GroupAll: every group).
func (m *ConnManager) groupsFor(id uint32) []*Group {
	if id == openflow.GroupAll {
		return m.b.Groups.List()
	}
	if g := m.b.Groups.Lookup(id); g != nil {
		return []*Group{g}
	}
	return nil
}

func (c *Conn) groupStats(env openflow.Envelope, req *openflow.GroupStatsRequest) error {
	now := time.Now()
	groups := c.m.groupsFor(req.GroupID)
	stats := make([]openflow.GroupStats, len(groups))
	for i, g := range groups {
		p, b, buckets := g.Stats()
		d := now.Sub(g.Created)
		if d < 0 {
			d = 0
		}
		stats[i] = openflow.GroupStats{GroupID: g.ID, RefCount: c.m.b.Tables.countUsing(refGroup, g.ID),
			PacketCount: p, ByteCount: b, DurationSec: uint32(d / time.Second), DurationNsec: msNsec(d),
			Buckets: buckets}
	}
	return c.sendParts(len(stats), func(lo, hi int) openflow.Msg {
		return &openflow.GroupStatsReply{Envelope: env, Stats: stats[lo:hi]}
	})
}

func (c *Conn) groupDesc(env openflow.Envelope, req *openflow.GroupDescRequest) error {
	groups := c.m.groupsFor(req.GroupID)
	descs := make([]openflow.GroupDesc, len(groups))
	for i, g := range groups {
		descs[i] = openflow.GroupDesc{Type: g.Type, GroupID: g.ID, Buckets: g.Buckets, Selection: g.Selection}
	}
	return c.sendParts(len(descs), func(lo, hi int) openflow.Msg {
		return &openflow.GroupDescReply{Envelope: env, Groups: descs[lo:hi]}
	})
}

func (c *Conn) groupFeatures(env openflow.Envelope) error {
	r := &openflow.GroupFeaturesReply{Envelope: env,
		Types:        1<<openflow.GroupTypeAll | 1<<openflow.GroupTypeSelect | 1<<openflow.GroupTypeIndirect | 1<<openflow.GroupTypeFF,
		Capabilities: openflow.GroupCapSelectWeight | openflow.GroupCapSelectLiveness | openflow.GroupCapChaining}
	acts := uint32(groupFeatureActions13)
	if env.Version == openflow.Version10 {
		acts = groupFeatureActions10
	}
	for i := range r.MaxGroups {
		r.MaxGroups[i], r.Actions[i] = openflow.GroupMax, acts
	}
	return c.queueMsg(r)
}

// metersFor lists meter id (openflow.MeterAll: every meter).
func (m *ConnManager) metersFor(id uint32) []*Meter {
	if id == openflow.MeterAll {
		return m.b.Meters.List()
	}
	if mt := m.b.Meters.Lookup(id); mt != nil {
		return []*Meter{mt}
	}
	return nil
}

func (c *Conn) meterStats(env openflow.Envelope, req *openflow.MeterStatsRequest) error {
	now := time.Now()
	meters := c.m.metersFor(req.MeterID)
	stats := make([]openflow.MeterStats, len(meters))
	for i, mt := range meters {
		stats[i] = c.m.b.Meters.Stats(mt, now)
	}
	return c.sendParts(len(stats), func(lo, hi int) openflow.Msg {
		return &openflow.MeterStatsReply{Envelope: env, Stats: stats[lo:hi]}
	})
}

func (c *Conn) meterConfig(env openflow.Envelope, req *openflow.MeterConfigRequest) error {
	meters := c.m.metersFor(req.MeterID)
	cfgs := make([]openflow.MeterConfig, len(meters))
	for i, mt := range meters {
		cfgs[i] = openflow.MeterConfig{Flags: mt.Flags, MeterID: mt.ID, Bands: mt.Bands}
	}
	return c.sendParts(len(cfgs), func(lo, hi int) openflow.Msg {
		return &openflow.MeterConfigReply{Envelope: env, Configs: cfgs[lo:hi]}
	})
}

func (c *Conn) meterFeatures(env openflow.Envelope) error {
	maxMeters, bandTypes, caps, maxBands := c.m.b.Meters.Features()
	return c.queueMsg(&openflow.MeterFeaturesReply{Envelope: env, MaxMeter: maxMeters, BandTypes: bandTypes,
		Capabilities: caps, MaxBands: maxBands})
}

// handleGroupMeter handles the group and meter messages; ok is false for
// any other message.
func (c *Conn) handleGroupMeter(raw []byte, env openflow.Envelope, msg openflow.Msg) (ok bool, err error) {
	switch m := msg.(type) {
	case *openflow.GroupMod:
		return true, c.groupMod(raw, m)
	case *openflow.MeterMod:
		return true, c.meterMod(raw, m)
	case *openflow.GroupStatsRequest:
		return true, c.groupStats(env, m)
	case *openflow.GroupDescRequest:
		return true, c.groupDesc(env, m)
	case *openflow.GroupFeaturesRequest:
		return true, c.groupFeatures(env)
	case *openflow.MeterStatsRequest:
		return true, c.meterStats(env, m)
	case *openflow.MeterConfigRequest:
		return true, c.meterConfig(env, m)
	case *openflow.MeterFeaturesRequest:
		return true, c.meterFeatures(env)
	}
	return false, nil
}
