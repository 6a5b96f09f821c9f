package ofproto

import (
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
	c.logRefusal("group mod", err)
	var ge *GroupError
	if errors.As(err, &ge) {
		return c.sendError(raw, openflow.Err13TypeGroupModFailed, ge.Code)
	}
	typ, code := flowModError(c.Version(), err)
	return c.sendError(raw, typ, code)
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
			PacketCount: p, ByteCount: b, DurationSec: uint32(d / time.Second), DurationNsec: uint32(d % time.Second),
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
