package datapath

// Meters of the kernel datapath (the ovs_meter generic netlink family,
// Linux 4.15+): rate limiters that OVS_ACTION_ATTR_METER runs packets
// through. A Datapath that has them implements Meterer.

// MeterBand is one drop band of a meter: packets above Rate (kbit/s, or
// packets/s) beyond a bucket of Burst are dropped. The kernel has no other
// band type.
type MeterBand struct {
	Rate  uint32
	Burst uint32
}

// Meter is a meter's configuration. ID is the datapath's meter id.
type Meter struct {
	ID    uint32
	KBPS  bool // rates in kbit/s; otherwise packets/s
	Bands []MeterBand
}

// MeterStats are a meter's counters: what entered it, and what each band
// dropped.
type MeterStats struct {
	Packets, Bytes uint64
	Bands          []FlowStats
}

// MeterFeatures is what OVS_METER_CMD_FEATURES reports.
type MeterFeatures struct {
	MaxMeters uint32
	MaxBands  uint32
	// DropBand is set when the datapath lists the drop band type.
	DropBand bool
}

// Meterer is a datapath with meters.
type Meterer interface {
	// MeterFeatures returns the datapath's meter features, probed once
	// when it was opened; an error for which errors.Is(err,
	// ErrNotSupported) means the datapath has no (working) meters.
	MeterFeatures() (MeterFeatures, error)
	// SetMeter adds or replaces meter m.ID.
	SetMeter(m *Meter) error
	// DeleteMeter deletes meter id. Linux answers the delete of a missing
	// meter without an error.
	DeleteMeter(id uint32) error
	// GetMeter returns meter id's counters; a missing meter is an error
	// for which errors.Is(err, unix.ENOENT).
	GetMeter(id uint32) (MeterStats, error)
}
