package openflow

// The Nicira conjunction action (NXAST_CONJUNCTION): conjunction(id, k/n)
// makes a flow clause k of n of conjunctive match id. An ActConj
// Action carries the id in Queue, the clause (k-1, 0-based as on the wire)
// in Table and n in TTL.

// NXASTConjunction is the conjunction action's Nicira subtype.
const NXASTConjunction uint16 = 34

// Conjunction returns conjunction(id, clause+1/n).
func Conjunction(id uint32, clause, n uint8) Action {
	return Action{Type: ActConj, Queue: id, Table: clause, TTL: n}
}

// errBadConjunction is OFPERR_NXBAC_BAD_CONJUNCTION: NX1.0-1.1 (2,526),
// NX1.2+ experimenter error 15.
func errBadConjunction(v uint8, format string, args ...any) *Error {
	e := errOf(v, kActBadArgument, format, args...)
	if v >= Version12 {
		e.Type, e.Code, e.Experimenter = Err13TypeExperimenter, 15, NXVendorID
	} else {
		e.Code, e.Experimenter = 526, NXVendorID // sent as a Nicira vendor error
	}
	return e
}

// decodeConjunction decodes a whole NXAST_CONJUNCTION: clause, n_clauses,
// id (16 bytes), with 2 <= n <= 64 and clause < n as ovs-vswitchd checks.
func decodeConjunction(v uint8, act []byte) (Action, error) {
	if len(act) != 16 {
		return Action{}, errOf(v, kActBadLen, "conjunction: length %d, want 16", len(act))
	}
	clause, n := act[10], act[11]
	if n < 2 || n > 64 || clause >= n {
		return Action{}, errBadConjunction(v, "conjunction: clause %d of %d", clause, n)
	}
	return Conjunction(u32(act[12:]), clause, n), nil
}

func appendConjunction(b []byte, a *Action) []byte {
	return be32(append(nxActionHeader(b, 16, NXASTConjunction), a.Table, a.TTL), a.Queue)
}

// CheckConjunctions refuses an action list that mixes conjunction with
// any action but note, as ovs-vswitchd does (NXBAC_BAD_CONJUNCTION).
func CheckConjunctions(v uint8, acts []Action) error {
	conj, other := false, ActNone
	for i := range acts {
		switch a := &acts[i]; {
		case a.Type == ActConj:
			conj = true
		case IsNote(a):
		default:
			other = a.Type
		}
	}
	if conj && other != ActNone {
		return errBadConjunction(v, "conjunction may be used with note but not with %s", other)
	}
	return nil
}
