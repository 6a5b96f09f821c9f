package openflow

import "fmt"

// Nicira actions for the controller and for notes. They decode as ActVendor
// (Vendor NXVendorID, Data from the subtype on), so that a flow dump gives
// ovs-ofctl back the very bytes it sent; ParseController and IsNote read
// them.
const (
	NXASTNote        uint16 = 8
	NXASTController  uint16 = 20
	NXASTController2 uint16 = 37
)

// NXAST_CONTROLLER2 property types (NXAC2PT_*).
const (
	nxac2MaxLen       = 0
	nxac2ControllerID = 1
	nxac2Reason       = 2
	nxac2Userdata     = 3
	nxac2Pause        = 4
	nxac2MeterID      = 5
)

// NXCtlrNoMeter is NX_CTLR_NO_METER: a controller action with no meter.
const NXCtlrNoMeter uint32 = 0

// ControllerAction is a decoded NXAST_CONTROLLER or NXAST_CONTROLLER2:
// controller(reason=..,max_len=..,id=..,userdata=..,pause,meter_id=..).
// The zero value is not the default; DefaultController is.
type ControllerAction struct {
	MaxLen   uint16 // bytes of the packet to send; 0xffff the whole packet
	ID       uint16 // controller id (NXT_SET_CONTROLLER_ID) to send to
	Reason   uint8  // packet-in reason (PacketInAction by default)
	Pause    bool   // freeze translation; NXT_RESUME continues it
	MeterID  uint32 // NXCtlrNoMeter for none
	Userdata []byte // aliases the action's Data
}

// DefaultController is a controller action with every property at its
// default.
var DefaultController = ControllerAction{MaxLen: 0xffff, Reason: PacketInAction, MeterID: NXCtlrNoMeter}

// nxSubtype returns the NXAST subtype of a Nicira ActVendor action.
func nxSubtype(a *Action) (uint16, bool) {
	if a.Type != ActVendor || a.Vendor != NXVendorID || len(a.Data) < 2 {
		return 0, false
	}
	return u16(a.Data), true
}

// IsNote reports whether a is an NXAST_NOTE action.
func IsNote(a *Action) bool {
	sub, ok := nxSubtype(a)
	return ok && sub == NXASTNote
}

// IsController reports whether a is NXAST_CONTROLLER or NXAST_CONTROLLER2.
func IsController(a *Action) bool {
	sub, ok := nxSubtype(a)
	return ok && (sub == NXASTController || sub == NXASTController2)
}

// ParseController decodes a controller action (IsController). The result's
// Userdata aliases a.Data.
func ParseController(a *Action) (ControllerAction, error) {
	sub, ok := nxSubtype(a)
	if !ok || sub != NXASTController && sub != NXASTController2 {
		return ControllerAction{}, fmt.Errorf("openflow: not a Nicira controller action: %w", ErrUnsupported)
	}
	return parseController(Version10, sub, a.Data)
}

// checkNXController validates a Nicira controller, controller2 or note
// action's body (from the subtype on) as ovs-vswitchd does at flow_mod
// time.
func checkNXController(v uint8, sub uint16, body []byte) error {
	switch sub {
	case NXASTNote:
		return nil // any bytes at all; splitAction checked the length
	case NXASTController, NXASTController2:
		_, err := parseController(v, sub, body)
		return err
	}
	return nil
}

// parseController decodes the body (from the subtype on) of the 16-byte
// NXAST_CONTROLLER (max_len, controller_id, reason, pad) or of
// NXAST_CONTROLLER2: 6 bytes of padding after the subtype, then
// properties, each type, length (of type, length and value, without the
// padding to 8) and value.
func parseController(v uint8, sub uint16, body []byte) (ControllerAction, error) {
	c := DefaultController
	if sub == NXASTController {
		if len(body) != 8 {
			return c, errOf(v, kActBadLen, "controller: length %d, want 16", 8+len(body))
		}
		c.MaxLen, c.ID, c.Reason = u16(body[2:]), u16(body[4:]), body[6]
		return c, nil
	}
	if len(body) < 8 {
		return c, errOf(v, kActBadLen, "controller2: length %d", 8+len(body))
	}
	seen := uint32(0)
	for p := body[8:]; len(p) > 0; {
		if len(p) < 4 {
			return c, errOf(v, kActBadLen, "controller2: %d trailing bytes", len(p))
		}
		typ, n := u16(p), int(u16(p[2:]))
		padded := (n + 7) &^ 7
		if n < 4 || padded > len(p) {
			return c, errOf(v, kActBadLen, "controller2 property %d: length %d in %d bytes", typ, n, len(p))
		}
		val := p[4:n:n]
		p = p[padded:]
		if typ < 32 {
			if seen&(1<<typ) != 0 {
				return c, errOf(v, kActBadArgument, "controller2: property %d twice", typ)
			}
			seen |= 1 << typ
		}
		switch typ {
		case nxac2MaxLen, nxac2ControllerID:
			// OVS writes 16-bit properties with 2 bytes of padding
			// inside the length, as the OpenFlow specs do.
			if len(val) != 2 && len(val) != 4 {
				return c, errOf(v, kActBadLen, "controller2 property %d: %d bytes", typ, len(val))
			}
			if typ == nxac2MaxLen {
				c.MaxLen = u16(val)
			} else {
				c.ID = u16(val)
			}
		case nxac2Reason:
			if len(val) != 1 {
				return c, errOf(v, kActBadLen, "controller2 reason: %d bytes", len(val))
			}
			c.Reason = val[0]
		case nxac2Userdata:
			c.Userdata = val
		case nxac2Pause:
			if len(val) != 0 {
				return c, errOf(v, kActBadLen, "controller2 pause: %d bytes", len(val))
			}
			c.Pause = true
		case nxac2MeterID:
			if len(val) != 4 {
				return c, errOf(v, kActBadLen, "controller2 meter_id: %d bytes", len(val))
			}
			c.MeterID = u32(val)
		default:
			return c, errOf(v, kActBadArgument, "controller2: unknown property %d", typ)
		}
	}
	return c, nil
}

// AppendController appends c as ovs-ofctl encodes it: OFPAT_OUTPUT to the
// controller when only max_len differs from the defaults, NXAST_CONTROLLER
// when reason or id do too, NXAST_CONTROLLER2 for userdata, pause or a
// meter. The output form is version v's; the Nicira forms are the same in
// every version.
func AppendController(b []byte, v uint8, c *ControllerAction) ([]byte, error) {
	switch {
	case len(c.Userdata) > 0 || c.Pause || c.MeterID != NXCtlrNoMeter:
		start := len(b)
		b = zeros(nxActionHeader(b, 0, NXASTController2), 6)
		prop := func(typ uint16, val []byte) {
			ps := len(b)
			b = append(be16(be16(b, typ), uint16(4+len(val))), val...)
			b = pad8(b, ps)
		}
		if c.MaxLen != 0xffff {
			prop(nxac2MaxLen, []byte{byte(c.MaxLen >> 8), byte(c.MaxLen), 0, 0})
		}
		if c.ID != 0 {
			prop(nxac2ControllerID, []byte{byte(c.ID >> 8), byte(c.ID), 0, 0})
		}
		if c.Reason != PacketInAction {
			prop(nxac2Reason, []byte{c.Reason})
		}
		if len(c.Userdata) > 0 {
			prop(nxac2Userdata, c.Userdata)
		}
		if c.Pause {
			prop(nxac2Pause, nil)
		}
		if c.MeterID != NXCtlrNoMeter {
			prop(nxac2MeterID, be32(nil, c.MeterID))
		}
		if len(b)-start > 0xffff {
			return b[:start], fmt.Errorf("openflow: controller action of %d bytes: %w", len(b)-start, ErrTooLong)
		}
		b[start+2], b[start+3] = byte((len(b)-start)>>8), byte(len(b)-start)
		return b, nil
	case c.Reason != PacketInAction || c.ID != 0:
		return append(be16(be16(nxActionHeader(b, 16, NXASTController), c.MaxLen), c.ID), c.Reason, 0), nil
	}
	a := Output(PortController, c.MaxLen)
	if v == Version10 {
		return appendAction10(b, &a)
	}
	return appendAction13(b, &a, v)
}
