package ofproto

import (
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// The stack of push and pop (NXAST_STACK_PUSH/POP), as ofproto-dpif-xlate
// keeps it: one per translation, holding bit strings of up to 128 bits
// (the widest field), empty when the translation starts.

// maxStack bounds the stack. ovs-vswitchd's grows without bound; ovn-
// controller pushes two or three values at a time.
const maxStack = 16

type xlateStack struct {
	n    int
	vals [maxStack]stackValue
}

// stackValue is a pushed bit string, right-aligned in a 128-bit big-endian
// value.
type stackValue [16]byte

// checkStack is what a flow mod must pass to hold push or pop: a field
// the switch reads (push) or writes (pop).
func checkStack(a *openflow.Action) error {
	if a.Type == openflow.ActStackPop {
		if a.Field == openflow.FieldCtMark || a.Field == openflow.FieldCtLabel {
			return errorf(ErrBadSetArgument, "cannot pop into %s outside of a ct action", a.Field)
		}
		if !settable(a.Field) {
			return errorf(ErrUnsupportedSetField, "pop into %s is not implemented", a.Field)
		}
	}
	if a.Field.Size() == 0 || a.Field.Size() > len(stackValue{}) {
		return errorf(ErrUnsupportedSetField, "%s of %s is not implemented", a.Type, a.Field)
	}
	return nil
}

// stackOp carries out push or pop. A push reads the field, so the field
// joins the megaflow as for move. Pushing onto a full stack or popping
// an empty one ends the translation in a drop (ovs-vswitchd logs an empty
// pop and goes on; its stack does not fill).
func (c *xctx) stackOp(a *openflow.Action) {
	n := a.Field.Size()
	if n == 0 || n > len(stackValue{}) || a.NBits == 0 || int(a.Ofs)+int(a.NBits) > 8*n {
		return
	}
	v, ok := a.Field.Value(c.scratch[0][:0], &c.flow)
	if !ok {
		return
	}
	s := &c.stack
	if a.Type == openflow.ActStackPush {
		if s.n == maxStack {
			c.stackFail("push onto a full stack")
			return
		}
		cover := a.Field.Cover()
		c.out.WC.Or(&cover)
		var sv stackValue
		for i := 0; i < int(a.NBits); i++ {
			p := int(a.Ofs) + i
			if v[n-1-p/8]>>(p%8)&1 != 0 {
				sv[15-i/8] |= 1 << (i % 8)
			}
		}
		s.vals[s.n] = sv
		s.n++
		return
	}
	if s.n == 0 {
		c.stackFail("pop from an empty stack")
		return
	}
	s.n--
	sv := &s.vals[s.n]
	for i := 0; i < int(a.NBits); i++ {
		p := int(a.Ofs) + i
		bit := byte(1) << (p % 8)
		if sv[15-i/8]>>(i%8)&1 != 0 {
			v[n-1-p/8] |= bit
		} else {
			v[n-1-p/8] &^= bit
		}
	}
	a.Field.SetValue(&c.flow, v)
}

func (c *xctx) stackFail(why string) {
	c.out.Actions = c.out.Actions[:0]
	c.out.Dropped = why
	c.exit = true
}
