package ofproto

import "github.com/govswitch/govswitch/ofproto/openflow"

// invalidTTL sends the packet whose TTL a dec_ttl found expired to the
// controllers: plain dec_ttl to controller id 0, dec_ttl(ids) to each id it
// lists (none for dec_ttl(), as ovn-controller writes it: the packet is
// just dropped), as OVS's compose_dec_ttl does.
func (c *xctx) invalidTTL(a *openflow.Action) {
	if a.IDs == nil {
		c.controller(ReasonInvalidTTL, c.table, 0xffff, c.cookie)
		return
	}
	for _, id := range a.IDs {
		if id == 0 {
			c.controller(ReasonInvalidTTL, c.table, 0xffff, c.cookie)
			continue
		}
		c.controller2(&openflow.ControllerAction{Reason: ReasonInvalidTTL, MaxLen: 0xffff, ID: id})
	}
}
