package ofproto

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// The meter table: OpenFlow meters backed one for one by the datapath's
// meters, as ofproto-dpif backs them. Each OpenFlow meter gets a datapath
// meter id from a dense pool (ovs-vswitchd's id_pool); translation emits
// OVS_ACTION_ATTR_METER with it, and the kernel does the rate limiting.
// Where the datapath has no meters every meter_mod but delete is refused
// with OFPMMFC_INVALID_METER, as ovs-vswitchd refuses it.

// Meter is one OpenFlow meter. It is immutable once published.
type Meter struct {
	ID      uint32 // OpenFlow meter id
	DPID    uint32 // the datapath's meter id
	Flags   uint16
	Bands   []openflow.MeterBand
	Created time.Time
}

type meterSet map[uint32]*Meter

// Meters is a bridge's meter table.
type Meters struct {
	mu   sync.Mutex // serialises meter mods and the id pool
	cur  atomic.Pointer[meterSet]
	ts   *Tables
	dp   datapath.Meterer // nil: no meters
	feat datapath.MeterFeatures
	// why says why there are no meters, for the log.
	why error
	// ids is the pool of datapath meter ids. The kernel's meter ids are
	// per datapath, so every bridge on one datapath (ovs-system) must
	// draw from the same pool: the Backer's.
	ids *meterIDPool
}

// meterIDPool hands out a datapath's meter ids, lowest free first.
type meterIDPool struct {
	mu   sync.Mutex
	free []uint32
	next uint32
}

// alloc returns the lowest free id below max.
func (p *meterIDPool) alloc(max uint32) (uint32, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		slices.Sort(p.free)
		id := p.free[0]
		p.free = p.free[1:]
		return id, true
	}
	if p.next >= max {
		return 0, false
	}
	id := p.next
	p.next++
	return id, true
}

func (p *meterIDPool) release(id uint32) {
	p.mu.Lock()
	p.free = append(p.free, id)
	p.mu.Unlock()
}

// NewMeters returns an empty meter table over dp's meters (none when dp
// has none). Deleting a meter deletes ts's flows that use it.
func NewMeters(ts *Tables, dp datapath.Datapath) *Meters {
	return newMeters(ts, dp, &meterIDPool{})
}

// newMeters is NewMeters drawing datapath meter ids from ids, the pool of
// the datapath's every bridge.
func newMeters(ts *Tables, dp datapath.Datapath, ids *meterIDPool) *Meters {
	m := &Meters{ts: ts, ids: ids}
	empty := meterSet{}
	m.cur.Store(&empty)
	md, ok := dp.(datapath.Meterer)
	if !ok {
		m.why = fmt.Errorf("the %T datapath has no meters: %w", dp, datapath.ErrNotSupported)
		return m
	}
	f, err := md.MeterFeatures()
	switch {
	case err != nil:
		m.why = err
	case f.MaxMeters == 0:
		m.why = fmt.Errorf("the datapath offers no meters: %w", datapath.ErrNotSupported)
	default:
		m.dp, m.feat = md, f
	}
	return m
}

// Supported reports whether the switch has meters, and if not why.
func (ms *Meters) Supported() (bool, error) { return ms.dp != nil, ms.why }

// Lookup returns meter id, or nil. It never blocks.
func (ms *Meters) Lookup(id uint32) *Meter {
	if ms == nil {
		return nil
	}
	return (*ms.cur.Load())[id]
}

// List returns every meter, ordered by id.
func (ms *Meters) List() []*Meter {
	return slices.SortedFunc(maps.Values(*ms.cur.Load()), func(a, b *Meter) int { return cmp.Compare(a.ID, b.ID) })
}

// Features describes the meters as OFPMP_METER_FEATURES does:
// ovs-vswitchd's dpif-netlink features (drop bands only; kbps, pktps,
// burst and stats), zero where there are none.
func (ms *Meters) Features() (maxMeters, bandTypes, capabilities uint32, maxBands uint8) {
	if ms.dp == nil {
		return 0, 0, 0, 0
	}
	if ms.feat.DropBand {
		bandTypes = 1 << openflow.MeterBandDrop
	}
	mb := ms.feat.MaxBands
	if mb > 255 {
		mb = 255
	}
	return ms.feat.MaxMeters, bandTypes, uint32(openflow.MeterFlagKBPS | openflow.MeterFlagPKTPS |
		openflow.MeterFlagBurst | openflow.MeterFlagStats), uint8(mb)
}

// MeterError is a failed meter mod with the OFPMMFC_* code the controller
// is told.
type MeterError struct {
	Code uint16
	Msg  string
}

func (e *MeterError) Error() string { return e.Msg }

func meterErrorf(code uint16, format string, args ...any) error {
	return &MeterError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// checkMeterConfig is dpif_meter_set's and dpif-netlink's checks, with
// the OpenFlow errors ofproto-dpif turns their errnos into.
func checkMeterConfig(m *openflow.MeterMod) error {
	units := m.Flags & (openflow.MeterFlagKBPS | openflow.MeterFlagPKTPS)
	if units == 0 || units == openflow.MeterFlagKBPS|openflow.MeterFlagPKTPS {
		return meterErrorf(openflow.MeterModFailed13BadFlags, "meter %d: flags %#x need exactly one of kbps and pktps", m.MeterID, m.Flags)
	}
	if len(m.Bands) == 0 {
		return meterErrorf(openflow.MeterModFailed13OutOfBands, "meter %d has no bands", m.MeterID)
	}
	for _, b := range m.Bands {
		if b.Rate == 0 {
			return meterErrorf(openflow.MeterModFailed13BadRate, "meter %d: a band of rate 0", m.MeterID)
		}
	}
	for _, b := range m.Bands {
		if b.Type != openflow.MeterBandDrop {
			// The kernel's meters drop; they cannot remark DSCP.
			return meterErrorf(openflow.MeterModFailed13BadBand,
				"meter %d: band type %d: the kernel datapath's meters have drop bands only", m.MeterID, b.Type)
		}
	}
	return nil
}

func dpMeter(id uint32, m *openflow.MeterMod) *datapath.Meter {
	d := &datapath.Meter{ID: id, KBPS: m.Flags&openflow.MeterFlagKBPS != 0}
	for _, b := range m.Bands {
		burst := b.Rate
		if m.Flags&openflow.MeterFlagBurst != 0 {
			burst = b.BurstSize
		}
		d.Bands = append(d.Bands, datapath.MeterBand{Rate: b.Rate, Burst: burst})
	}
	return d
}

// Apply carries out a decoded meter mod at time now. Errors are
// *MeterError (OFPMMFC_*).
func (ms *Meters) Apply(m *openflow.MeterMod, now time.Time) error {
	id := m.MeterID
	if m.Command != openflow.MeterDelete {
		if ms.dp == nil {
			return meterErrorf(openflow.MeterModFailed13InvalidMeter, "meter %d: the switch has no meters (%v)", id, ms.why)
		}
		if id == 0 || id > openflow.MeterMax && id != openflow.MeterController {
			// The controller meter limits packet-ins
			// (xctx.appendPacketIn). OVS also takes the slowpath meter,
			// which rate-limits its own slow-path upcalls; govswitchd
			// does not implement it and says so rather than accept and
			// ignore it.
			return meterErrorf(openflow.MeterModFailed13InvalidMeter, "meter id %#x is not one govswitchd implements", id)
		}
		if len(m.Bands) > int(ms.feat.MaxBands) {
			return meterErrorf(openflow.MeterModFailed13OutOfBands, "meter %d: %d bands, the datapath takes %d", id, len(m.Bands), ms.feat.MaxBands)
		}
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	old := *ms.cur.Load()
	next := make(meterSet, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	var deleted []*Meter
	switch m.Command {
	case openflow.MeterAdd:
		if old[id] != nil {
			return meterErrorf(openflow.MeterModFailed13MeterExists, "meter %d exists", id)
		}
		if err := checkMeterConfig(m); err != nil {
			return err
		}
		dpid, ok := ms.ids.alloc(ms.feat.MaxMeters)
		if !ok {
			return meterErrorf(openflow.MeterModFailed13OutOfMeters, "meter %d: all %d datapath meters are in use", id, ms.feat.MaxMeters)
		}
		if err := ms.dp.SetMeter(dpMeter(dpid, m)); err != nil {
			ms.ids.release(dpid)
			return meterErrorf(openflow.MeterModFailed13Unknown, "meter %d: %v", id, err)
		}
		next[id] = &Meter{ID: id, DPID: dpid, Flags: m.Flags, Bands: slices.Clone(m.Bands), Created: now}
	case openflow.MeterModify:
		cur := old[id]
		if cur == nil {
			return meterErrorf(openflow.MeterModFailed13UnknownMeter, "no meter %d", id)
		}
		if err := checkMeterConfig(m); err != nil {
			return err
		}
		if err := ms.dp.SetMeter(dpMeter(cur.DPID, m)); err != nil {
			return meterErrorf(openflow.MeterModFailed13Unknown, "meter %d: %v", id, err)
		}
		next[id] = &Meter{ID: id, DPID: cur.DPID, Flags: m.Flags, Bands: slices.Clone(m.Bands), Created: cur.Created}
	case openflow.MeterDelete:
		for k, v := range old {
			if id == openflow.MeterAll || k == id {
				deleted = append(deleted, v)
				delete(next, k)
			}
		}
	default:
		return meterErrorf(openflow.MeterModFailed13BadCommand, "meter command %d", m.Command)
	}
	ms.cur.Store(&next)
	for _, d := range deleted {
		// Flows that use the meter go first, so no datapath flow is
		// left running packets through a meter that is gone.
		ms.ts.deleteUsing(refMeter, d.ID, now)
		if ms.dp != nil {
			// An error means the kernel lost the meter already; its id
			// is free either way.
			_ = ms.dp.DeleteMeter(d.DPID)
		}
		ms.ids.release(d.DPID)
	}
	return nil
}

// Stats returns meter m's counters at now, as OFPMP_METER reports them.
func (ms *Meters) Stats(m *Meter, now time.Time) openflow.MeterStats {
	d := now.Sub(m.Created)
	if d < 0 {
		d = 0
	}
	s := openflow.MeterStats{MeterID: m.ID, FlowCount: ms.ts.countUsing(refMeter, m.ID),
		DurationSec: uint32(d / time.Second), DurationNsec: msNsec(d),
		Bands: make([]openflow.BandStats, len(m.Bands))}
	if ms.dp != nil {
		if st, err := ms.dp.GetMeter(m.DPID); err == nil {
			s.PacketInCount, s.ByteInCount = st.Packets, st.Bytes
			for i := range s.Bands {
				if i < len(st.Bands) {
					s.Bands[i] = openflow.BandStats{PacketCount: st.Bands[i].Packets, ByteCount: st.Bands[i].Bytes}
				}
			}
		}
	}
	return s
}

// msNsec is the nanoseconds part of d to the millisecond, as ovs-vswitchd
// reports group and meter durations (it keeps time in milliseconds), so
// ovs-ofctl prints them alike ("duration:6.359s").
func msNsec(d time.Duration) uint32 {
	return uint32(d % time.Second / time.Millisecond * time.Millisecond)
}
