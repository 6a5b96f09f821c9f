package openflow

// fin_timeout(idle_timeout=N,hard_timeout=M) (NXAST_FIN_TIMEOUT): when a
// TCP packet with FIN or RST set hits the flow holding the action, the
// flow's idle and hard timeouts are lowered to N and M seconds (only
// lowered; a zero leaves that timeout as it is). The switch carries it
// out (ofproto/xlate_fintimeout.go); the codec only carries the numbers.
//
// Wire form, 16 bytes: the Nicira action header (type, length 16, vendor,
// subtype 19), fin_idle_timeout and fin_hard_timeout (big-endian), and
// two bytes of padding that ovs-vswitchd neither checks nor sets but to
// zero.

// NXASTFinTimeout is the fin_timeout action's Nicira subtype.
const NXASTFinTimeout uint16 = 19

// FinTimeout returns a fin_timeout action: idle and hard are the timeouts
// (seconds) a FIN or RST lowers the flow's to, 0 for "leave it".
func FinTimeout(idle, hard uint16) Action {
	return Action{Type: ActFinTimeout, Ofs: idle, NBits: hard}
}

// FinTimeouts returns an ActFinTimeout's idle and hard timeouts.
func (a *Action) FinTimeouts() (idle, hard uint16) { return a.Ofs, a.NBits }

// decodeFinTimeout decodes a whole NXAST_FIN_TIMEOUT. As ovs-vswitchd's
// decoder, it ignores the padding.
func decodeFinTimeout(v uint8, act []byte) (Action, error) {
	if len(act) != 16 {
		return Action{}, errOf(v, kActBadLen, "fin_timeout: length %d, want 16", len(act))
	}
	return FinTimeout(u16(act[10:]), u16(act[12:])), nil
}

func appendFinTimeout(b []byte, a *Action) []byte {
	idle, hard := a.FinTimeouts()
	return zeros(be16(be16(nxActionHeader(b, 16, NXASTFinTimeout), idle), hard), 2)
}
