package ofproto

import (
	"fmt"

	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Packet-in formats and controller ids, per connection, as ovs-vswitchd
// keeps them: NXT_SET_PACKET_IN_FORMAT chooses standard packet-ins,
// NXT_PACKET_IN or NXT_PACKET_IN2 (the only one that carries a controller
// action's userdata and a pause's continuation); NXT_SET_CONTROLLER_ID
// names the connection for controller(id=N) actions, which go only to
// connections of that id (0 by default, as plain CONTROLLER outputs).

func (c *Conn) setPacketInFormat(raw []byte, m *openflow.NXSetPacketInFormat) error {
	switch m.Format {
	case openflow.NXPacketInOpenFlow10, openflow.NXPacketInNXM, openflow.NXPacketIn2Format:
	default:
		c.log.Warn("NXT_SET_PACKET_IN_FORMAT with an invalid format", "format", m.Format)
		return c.sendError(raw, openflow.ErrTypeBadRequest, openflow.BadRequestEPerm)
	}
	c.mu.Lock()
	c.pinFormat = m.Format
	c.mu.Unlock()
	return nil
}

// setServiceAsync records a service connection's miss_send_len: as in
// ovs-vswitchd, a service connection (ovs-ofctl monitor on the mgmt
// socket) receives packet-ins once it sets a nonzero one.
func (c *Conn) setServiceAsync(missSendLen uint16) {
	if c.kind != ConnService {
		return
	}
	on := missSendLen != 0
	if c.svcAsync.Swap(on) != on {
		if on {
			c.m.nSvcAsync.Add(1)
		} else {
			c.m.nSvcAsync.Add(-1)
		}
	}
}

// wantsControllerID reports whether a packet-in goes to c: a controller
// action with an id goes to the connections of that id only.
func (c *Conn) wantsControllerID(pin *PacketIn) bool {
	var id uint16
	if pin.Ext != nil {
		id = pin.Ext.ControllerID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctrlID == id
}

// pinReason maps an internal packet-in reason to what version v can say,
// as ovs-vswitchd's encode_packet_in_reason: action_set, group and
// packet_out are "action" before OpenFlow 1.4.
func pinReason(r, v uint8) uint8 {
	if r >= 3 && r <= 5 && v < openflow.Version14 {
		return openflow.PacketInAction
	}
	return r
}

// encodePacketInExt encodes a packet-in that carries a controller
// action's extras, or any packet-in to a connection that asked for
// NXT_PACKET_IN2. It runs on the dispatcher and may allocate: these
// packet-ins are not the table-miss path.
func (m *ConnManager) encodePacketInExt(c *Conn, pin *PacketIn, p *Port, reason uint8, format uint32, b []byte) ([]byte, error) {
	v := c.Version()
	env := openflow.Envelope{Version: v}
	reason = pinReason(reason, v)
	var md openflow.Match
	if pin.Ext != nil {
		if err := openflow.DecodeNXM(v, pin.Ext.Metadata, &md); err != nil {
			return b, fmt.Errorf("packet-in metadata: %w", err)
		}
	} else {
		md.Key.InPort, md.Mask.InPort = p.OFPort, ^uint32(0)
	}
	inPort := md.Key.InPort // p is nil for a packet-in from behind a patch port
	if pin.Conntracked {
		pinCtMetadata(&md, &pin.Key) // packetin_ct.go
	}
	if format != openflow.NXPacketIn2Format {
		// Userdata and continuations travel in packet-in2 only.
		msg := openflow.PacketIn{Envelope: env, NXM: format == openflow.NXPacketInNXM, BufferID: openflow.NoBuffer,
			TotalLen: uint16(len(pin.Packet)), InPort: inPort, Reason: reason, TableID: pin.Table,
			Cookie: pin.Cookie, Match: md, Data: pin.Packet}
		return msg.Append(b)
	}
	msg := openflow.PacketIn2{Envelope: env, BufferID: openflow.NoBuffer, Packet: pin.Packet, TableID: pin.Table, Cookie: pin.Cookie,
		Reason: reason, Metadata: md}
	if pin.Ext != nil {
		msg.Userdata = pin.Ext.Userdata
		if pin.Ext.Pause {
			cont, err := m.continuation(v, pin)
			if err != nil {
				return b, err
			}
			msg.Continuation = cont
		}
	}
	return msg.Append(b)
}
