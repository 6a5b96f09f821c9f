package ofproto

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Recirculation: a ct(table=T) action sends the packet through the
// kernel's connection tracker and back into the datapath with a new
// recirc_id; the kernel looks it up again (recirc_id is part of every
// megaflow) and misses come up as upcalls whose key carries that id and
// the conntrack fields. The id names a frozen state: where in the
// OpenFlow pipeline the packet resumes and the pipeline metadata the
// datapath does not keep (registers, metadata, the OpenFlow in_port).
//
// Ids are allocated per frozen state, not per packet: every packet that
// freezes the same state shares one id, so the second stage's megaflows
// are shared as the first stage's are. Ids are global to the process, as
// they are to the kernel (one datapath may serve several bridges).

// frozenState is what a recirculated packet resumes with.
type frozenState struct {
	x        *Xlator // the bridge whose tables the packet resumes in
	table    uint8
	inPort   uint32 // OpenFlow in_port
	metadata uint64
	regs     [16]uint32
	// instr and act, when instr is set, resume in the middle of a rule:
	// its apply-actions from act on, then its other instructions (a
	// recirculation after pop_mpls, xlate_mpls.go). Otherwise the
	// packet resumes at the lookup in table.
	instr *openflow.Instructions
	act   int
	// cookie is the frozen rule's cookie, restored with its table when
	// the packet resumes (OVS's unroll_xlate).
	cookie uint64
	// cont, when set, is a frozen translation that resumes as a
	// continuation does (recircEntry.cont, decoded; this is its encoding,
	// by which equal freezes share an id): a recirculation after pop_mpls
	// frozen inside a resubmit, clone or packet-out (xlate_mpls.go).
	cont string
	// bond, when set, is a balance-tcp bond's output after the kernel
	// hashed the packet (xlate_bond.go): the packet leaves by the member
	// of its dp_hash's bucket. Nothing else of the state counts then.
	bond *Bond
}

type recircEntry struct {
	id    uint32
	state frozenState
	cont  *openflow.Continuation // state.cont decoded
	// used is the unix nanosecond time of the last translation that
	// emitted or resumed this id; the sweep keeps entries used recently
	// even when no ukey names them yet (a handler may be installing one).
	used atomic.Int64
}

// recircRegistry maps recirculation ids to frozen states and back.
type recircRegistry struct {
	mu      sync.RWMutex
	byID    map[uint32]*recircEntry
	byState map[frozenState]*recircEntry
	next    uint32
}

var recircs = recircRegistry{byID: map[uint32]*recircEntry{}, byState: map[frozenState]*recircEntry{}, next: 1}

// maxRecircIDs bounds the registry: past it, ct(table=T) translates to a
// drop rather than let a rule set that freezes per-packet state (a
// register holding a counter) grow memory without bound.
const maxRecircIDs = 1 << 20

// recircGrace is how long an entry no ukey names is kept after its last use.
const recircGrace = 30 * time.Second

// id returns the recirculation id of s, allocating one if needed; 0 when
// the registry is full. It does not allocate when s has an id.
func (r *recircRegistry) id(s *frozenState, now time.Time) uint32 {
	return r.idCont(s, nil, now)
}

// idCont is id for a state frozen as a continuation: cont (which the
// entry keeps; the caller must not change it) is what s.cont encodes.
func (r *recircRegistry) idCont(s *frozenState, cont *openflow.Continuation, now time.Time) uint32 {
	r.mu.RLock()
	e := r.byState[*s]
	r.mu.RUnlock()
	if e == nil {
		r.mu.Lock()
		if e = r.byState[*s]; e == nil {
			if len(r.byID) >= maxRecircIDs {
				r.mu.Unlock()
				return 0
			}
			for r.next == 0 || r.byID[r.next] != nil {
				r.next++
			}
			e = &recircEntry{id: r.next, state: *s, cont: cont}
			r.next++
			r.byID[e.id] = e
			r.byState[*s] = e
		}
		r.mu.Unlock()
	}
	e.used.Store(now.UnixNano())
	return e.id
}

// lookup returns the frozen state of id, or false.
func (r *recircRegistry) lookup(id uint32, now time.Time) (frozenState, bool) {
	s, _, ok := r.lookupCont(id, now)
	return s, ok
}

// lookupCont returns the frozen state of id and, for a continuation, the
// continuation, or false.
func (r *recircRegistry) lookupCont(id uint32, now time.Time) (frozenState, *openflow.Continuation, bool) {
	r.mu.RLock()
	e := r.byID[id]
	r.mu.RUnlock()
	if e == nil {
		return frozenState{}, nil, false
	}
	e.used.Store(now.UnixNano())
	return e.state, e.cont, true
}

// len returns the number of ids in use.
func (r *recircRegistry) len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.byID)
}

// sweep frees the ids of bridge x that no ukey of u names, neither as its
// key's recirc_id nor in a recirc action, and that no translation used
// within recircGrace of now.
func (r *recircRegistry) sweep(u *Udpif, now time.Time) int {
	r.mu.RLock()
	mine := 0
	for _, e := range r.byID {
		if u.serves(e.state.x) {
			mine++
		}
	}
	r.mu.RUnlock()
	if mine == 0 {
		return 0
	}
	live := map[uint32]bool{}
	u.ukeys.Range(func(k *ukey) {
		if id := k.recircID(); id != 0 {
			live[id] = true
		}
		it := datapath.NewActionIter(k.actions)
		for it.Next() {
			if a := it.Action(); a.Type == datapath.ActionRecirc {
				live[a.ID] = true
			}
		}
	})
	cutoff := now.Add(-recircGrace).UnixNano()
	freed := 0
	r.mu.Lock()
	for id, e := range r.byID {
		if u.serves(e.state.x) && !live[id] && e.used.Load() < cutoff {
			delete(r.byID, id)
			delete(r.byState, e.state)
			freed++
		}
	}
	r.mu.Unlock()
	return freed
}

// serves reports whether x's upcalls come to u: x is u's translator, or one
// of the bridges of the backer (the shared datapath) u handles upcalls for.
func (u *Udpif) serves(x *Xlator) bool {
	if x == nil {
		return false
	}
	if ux, ok := u.x.(*Xlator); ok {
		return ux == x
	}
	return x.backer != nil && x.backer.Udpif == u
}

// forget frees every id of the bridges u handles upcalls for, whose
// upcalls have stopped for good.
func (r *recircRegistry) forget(u *Udpif) {
	r.mu.Lock()
	for id, e := range r.byID {
		if u.serves(e.state.x) {
			delete(r.byID, id)
			delete(r.byState, e.state)
		}
	}
	r.mu.Unlock()
}

// recircID returns the recirc_id the ukey's flow matches, without
// unpacking the whole key.
func (k *ukey) recircID() uint32 {
	if k.key.spill != nil {
		return k.key.spill.RecircID
	}
	var key flow.Key
	k.key.get(&key)
	return key.RecircID
}

// sweepRecirc is the revalidator's hook: every recircSweepEvery, free the
// recirculation ids of this bridge that nothing uses any more.
func (u *Udpif) sweepRecirc(now time.Time) {
	if last := u.recircSweptAt.Load(); now.UnixNano()-last < int64(recircSweepEvery) {
		return
	}
	u.recircSweptAt.Store(now.UnixNano())
	recircs.sweep(u, now)
}

const recircSweepEvery = 10 * time.Second
