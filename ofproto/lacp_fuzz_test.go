package ofproto

import (
	"testing"
	"time"
)

// FuzzLACPDU: any frame a member receives never panics the decoder or the
// LACP machine; a PDU the decoder takes re-encodes to the same
// information; and whatever the partner says, a member LACP lets carry
// traffic is attached (the seed corpus in testdata/fuzz/FuzzLACPDU holds
// the PDUs of a Linux 802.3ad bond and of govswitchd from the bed).
func FuzzLACPDU(f *testing.F) {
	f.Add(partnerPDU(1))
	f.Add(appendLACPFrame(nil, [6]byte{2}, &lacpInfo{SysID: [6]byte{2, 0, 0, 0, 0, 1}, State: 0xff}, &lacpInfo{}))
	f.Add([]byte{1, 0x80, 0xc2, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0x09, 2, 1})
	f.Fuzz(func(t *testing.T, frame []byte) {
		pl, ok := slowPayload(frame)
		if !ok {
			return
		}
		pdu, kind := parseLACPDU(pl)
		if kind == lacpPDULACP {
			again, k2 := parseLACPDU(appendLACPFrame(nil, [6]byte{}, &pdu.Actor, &pdu.Partner)[14:])
			if k2 != lacpPDULACP || again != pdu {
				t.Fatalf("re-encoded %+v as %+v (%d)", pdu, again, k2)
			}
		}
		l := NewLACP("bond0", LACPConfig{Active: true, SysID: [6]byte{2, 0, 0, 0, 0, 1}, SysPriority: 65534}, nil)
		l.RegisterMember("a", 1, 0xffff, 0)
		l.RegisterMember("b", 2, 0xffff, 0)
		l.carrierFirst("a", true)
		now := time.Now()
		l.ProcessPDU("a", pl, now)
		l.ProcessPDU("b", pl, now)
		l.Run(now, nil)
		for _, m := range l.Show().Members {
			if m.MayEnable && !m.Attached {
				t.Fatalf("member %s may be enabled but is not attached: %+v", m.Name, m)
			}
		}
	})
}
