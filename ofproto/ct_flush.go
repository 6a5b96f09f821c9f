package ofproto

import (
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// ctFlushZone carries out NXT_CT_FLUSH_ZONE: the NXT_CT_FLUSH of a zone
// with no tuple (ovs-vswitchd 3.1 takes both to one flush), through the
// same function (SetFlushCt).
func (c *Conn) ctFlushZone(raw []byte, m *openflow.CtFlushZone) error {
	return c.ctFlush(raw, &openflow.CtFlush{Envelope: m.Envelope, HasZone: true, Zone: m.Zone})
}

// ctFlush carries out NXT_CT_FLUSH (ovs-ofctl ct-flush): as in
// ovs-vswitchd 3.1 nothing answers it and a failed flush is only logged; a
// datapath without conntrack flushing refuses it as an unknown message.
func (c *Conn) ctFlush(raw []byte, m *openflow.CtFlush) error {
	if slave, err := c.isSlave(raw); slave {
		return err
	}
	flush := c.m.b.Backer.flushCt.Load()
	if flush == nil {
		return c.sendError(raw, openflow.ErrTypeBadRequest, openflow.BadRequestBadSubtype)
	}
	if err := (*flush)(m); err != nil {
		c.log.Warn("conntrack flush failed", "proto", m.Proto, "zone", m.Zone, "has_zone", m.HasZone, "err", err)
	}
	return nil
}

// SetFlushCt sets the function that deletes the connection tracking
// entries an NXT_CT_FLUSH selects; nil (the default) refuses the message.
// The function must not keep m. It may be called at any time.
func (bk *Backer) SetFlushCt(fn func(m *openflow.CtFlush) error) {
	if fn == nil {
		bk.flushCt.Store(nil)
		return
	}
	bk.flushCt.Store(&fn)
}
