package openflow

import "fmt"

// Meters (OpenFlow 1.3+): OFPT_METER_MOD and the meter stats, meter config
// and meter features multipart messages. 1.3, 1.4 and 1.5 encode them
// alike.

// Meter mod commands (OFPMC_*).
const (
	MeterAdd    uint16 = 0
	MeterModify uint16 = 1
	MeterDelete uint16 = 2
)

// Meter flags (OFPMF_*).
const (
	MeterFlagKBPS  uint16 = 1 << 0
	MeterFlagPKTPS uint16 = 1 << 1
	MeterFlagBurst uint16 = 1 << 2
	MeterFlagStats uint16 = 1 << 3
)

// Meter band types (OFPMBT_*).
const (
	MeterBandDrop         uint16 = 1
	MeterBandDSCPRemark   uint16 = 2
	MeterBandExperimenter uint16 = 0xffff
)

// Meter numbers (OFPM_*).
const (
	MeterMax        uint32 = 0xffff0000
	MeterSlowpath   uint32 = 0xfffffffd
	MeterController uint32 = 0xfffffffe
	MeterAll        uint32 = 0xffffffff
)

// OFPET_METER_MOD_FAILED codes (OFPMMFC_*) beyond those in errors.go.
const (
	MeterModFailed13MeterExists  uint16 = 1
	MeterModFailed13BadFlags     uint16 = 5
	MeterModFailed13BadRate      uint16 = 6
	MeterModFailed13BadBurst     uint16 = 7
	MeterModFailed13BadBand      uint16 = 8
	MeterModFailed13BadBandValue uint16 = 9
	MeterModFailed13OutOfMeters  uint16 = 10
	MeterModFailed13OutOfBands   uint16 = 11
)

const (
	meterModLen      = 8
	meterBandLen     = 16
	meterStatsLen    = 40
	bandStatsLen     = 16
	meterConfigLen   = 8
	meterFeaturesLen = 16
)

// MeterBand is one band of a meter. PrecLevel is dscp_remark's,
// Experimenter the experimenter band's.
type MeterBand struct {
	Type         uint16
	Rate         uint32
	BurstSize    uint32
	PrecLevel    uint8
	Experimenter uint32
}

// MeterMod is OFPT_METER_MOD.
type MeterMod struct {
	Envelope
	Command uint16
	Flags   uint16
	MeterID uint32
	Bands   []MeterBand
}

func meterErr(v uint8, code uint16, format string, args ...any) *Error {
	return &Error{Version: v, Type: Err13TypeMeterModFailed, Code: code, Err: ErrUnsupported, Detail: fmt.Sprintf(format, args...)}
}

// decodeBands reads a run of ofp_meter_band_* as OVS does: each band is
// 16 bytes; an unknown type is OFPMMFC_BAD_BAND.
func decodeBands(v uint8, b []byte) ([]MeterBand, error) {
	var out []MeterBand
	for len(b) > 0 {
		if len(b) < meterBandLen {
			return nil, badLen(v, "meter band", len(b), meterBandLen)
		}
		n := int(u16(b[2:]))
		if n != meterBandLen {
			return nil, errOf(v, kBadLen, "meter band length %d", n)
		}
		mb := MeterBand{Type: u16(b), Rate: u32(b[4:]), BurstSize: u32(b[8:])}
		switch mb.Type {
		case MeterBandDrop:
		case MeterBandDSCPRemark:
			mb.PrecLevel = b[12]
		case MeterBandExperimenter:
			mb.Experimenter = u32(b[12:])
		default:
			return nil, meterErr(v, MeterModFailed13BadBand, "meter band type %d", mb.Type)
		}
		out = append(out, mb)
		b = b[n:]
	}
	return out, nil
}

func appendBands(b []byte, bands []MeterBand) []byte {
	for _, mb := range bands {
		b = be32(be32(be16(be16(b, mb.Type), meterBandLen), mb.Rate), mb.BurstSize)
		switch mb.Type {
		case MeterBandDSCPRemark:
			b = zeros(append(b, mb.PrecLevel), 3)
		case MeterBandExperimenter:
			b = be32(b, mb.Experimenter)
		default:
			b = zeros(b, 4)
		}
	}
	return b
}

func decodeMeterMod(env Envelope, body []byte) (Msg, error) {
	v := env.Version
	if len(body) < meterModLen {
		return nil, badLen(v, "meter mod", len(body), meterModLen)
	}
	m := &MeterMod{Envelope: env, Command: u16(body), Flags: u16(body[2:]), MeterID: u32(body[4:])}
	if m.Command > MeterDelete {
		return nil, meterErr(v, MeterModFailed13BadCommand, "meter command %d", m.Command)
	}
	if m.Command == MeterDelete {
		// OVS ignores whatever follows a delete.
		return m, nil
	}
	if m.Flags&^(MeterFlagKBPS|MeterFlagPKTPS|MeterFlagBurst|MeterFlagStats) != 0 {
		return nil, meterErr(v, MeterModFailed13BadFlags, "meter flags %#x", m.Flags)
	}
	bands, err := decodeBands(v, body[meterModLen:])
	if err != nil {
		return nil, err
	}
	m.Bands = bands
	return m, nil
}

func (m *MeterMod) Append(b []byte) ([]byte, error) {
	if err := checkVersion(m.Version); err != nil {
		return b, err
	}
	if m.Version < Version13 {
		return b, fmt.Errorf("openflow: meter mod in version 0x%02x: %w", m.Version, ErrBadVersion)
	}
	b, start := begin(b, m.Version, Type13MeterMod, m.Xid)
	b = be32(be16(be16(b, m.Command), m.Flags), m.MeterID)
	b = appendBands(b, m.Bands)
	return finish(b, start)
}

// MeterStatsRequest asks for the counters (OFPMP_METER) or, as a
// MeterConfigRequest, the configuration (OFPMP_METER_CONFIG) of MeterID
// (MeterAll: every meter).
type MeterStatsRequest struct {
	Envelope
	Flags   uint16
	MeterID uint32
}

// MeterConfigRequest asks for meter configurations.
type MeterConfigRequest MeterStatsRequest

// BandStats are one band's counters.
type BandStats struct {
	PacketCount uint64
	ByteCount   uint64
}

// MeterStats are one meter's counters.
type MeterStats struct {
	MeterID       uint32
	FlowCount     uint32
	PacketInCount uint64
	ByteInCount   uint64
	DurationSec   uint32
	DurationNsec  uint32
	Bands         []BandStats
}

// MeterStatsReply answers a MeterStatsRequest.
type MeterStatsReply struct {
	Envelope
	Flags uint16
	Stats []MeterStats
}

// MeterConfig is one meter's configuration.
type MeterConfig struct {
	Flags   uint16
	MeterID uint32
	Bands   []MeterBand
}

// MeterConfigReply answers a MeterConfigRequest.
type MeterConfigReply struct {
	Envelope
	Flags   uint16
	Configs []MeterConfig
}

// MeterFeaturesRequest asks for the meter features.
type MeterFeaturesRequest struct {
	Envelope
	Flags uint16
}

// MeterFeaturesReply describes the switch's meters.
type MeterFeaturesReply struct {
	Envelope
	Flags        uint16
	MaxMeter     uint32
	BandTypes    uint32 // bitmap of 1 << MeterBand*
	Capabilities uint32 // bitmap of Meter* flags
	MaxBands     uint8
	MaxColor     uint8
}

func decodeMeterStats(env Envelope, typ, flags uint16, b []byte, reply bool) (Msg, bool, error) {
	v := env.Version
	switch typ {
	case StatsMeter, StatsMeterConfig:
		if !reply {
			if len(b) != 8 {
				return nil, true, badLen(v, "meter request", len(b), 8)
			}
			r := &MeterStatsRequest{Envelope: env, Flags: flags, MeterID: u32(b)}
			if typ == StatsMeterConfig {
				return (*MeterConfigRequest)(r), true, nil
			}
			return r, true, nil
		}
		if typ == StatsMeter {
			m, err := decodeMeterStatsReply(env, flags, b)
			return m, true, err
		}
		m, err := decodeMeterConfigReply(env, flags, b)
		return m, true, err
	case StatsMeterFeatures:
		if !reply {
			if len(b) != 0 {
				return nil, true, badLen(v, "meter features request", len(b), 0)
			}
			return &MeterFeaturesRequest{Envelope: env, Flags: flags}, true, nil
		}
		if len(b) != meterFeaturesLen {
			return nil, true, badLen(v, "meter features reply", len(b), meterFeaturesLen)
		}
		return &MeterFeaturesReply{Envelope: env, Flags: flags, MaxMeter: u32(b), BandTypes: u32(b[4:]),
			Capabilities: u32(b[8:]), MaxBands: b[12], MaxColor: b[13]}, true, nil
	}
	return nil, false, nil
}

func decodeMeterStatsReply(env Envelope, flags uint16, b []byte) (Msg, error) {
	v := env.Version
	r := &MeterStatsReply{Envelope: env, Flags: flags}
	for len(b) > 0 {
		if len(b) < meterStatsLen {
			return nil, badLen(v, "meter stats entry", len(b), meterStatsLen)
		}
		n := int(u16(b[4:]))
		if n < meterStatsLen || n > len(b) || (n-meterStatsLen)%bandStatsLen != 0 {
			return nil, errOf(v, kBadLen, "meter stats entry length %d in %d bytes", n, len(b))
		}
		s := MeterStats{MeterID: u32(b), FlowCount: u32(b[12:]), PacketInCount: u64(b[16:]), ByteInCount: u64(b[24:]),
			DurationSec: u32(b[32:]), DurationNsec: u32(b[36:])}
		for c := b[meterStatsLen:n]; len(c) > 0; c = c[bandStatsLen:] {
			s.Bands = append(s.Bands, BandStats{PacketCount: u64(c), ByteCount: u64(c[8:])})
		}
		r.Stats = append(r.Stats, s)
		b = b[n:]
	}
	return r, nil
}

func decodeMeterConfigReply(env Envelope, flags uint16, b []byte) (Msg, error) {
	v := env.Version
	r := &MeterConfigReply{Envelope: env, Flags: flags}
	for len(b) > 0 {
		if len(b) < meterConfigLen {
			return nil, badLen(v, "meter config entry", len(b), meterConfigLen)
		}
		n := int(u16(b))
		if n < meterConfigLen || n > len(b) {
			return nil, errOf(v, kBadLen, "meter config entry length %d in %d bytes", n, len(b))
		}
		bands, err := decodeBands(v, b[meterConfigLen:n])
		if err != nil {
			return nil, err
		}
		r.Configs = append(r.Configs, MeterConfig{Flags: u16(b[2:]), MeterID: u32(b[4:]), Bands: bands})
		b = b[n:]
	}
	return r, nil
}

func meterStatsHeader(b []byte, e *Envelope, reply bool, typ, flags uint16) ([]byte, int, error) {
	if e.Version < Version13 {
		return b, 0, fmt.Errorf("openflow: meter multipart in version 0x%02x: %w", e.Version, ErrBadVersion)
	}
	return statsHeader(b, e, reply, typ, flags, false, 0)
}

func (m *MeterStatsRequest) Append(b []byte) ([]byte, error) {
	return appendMeterRequest(b, &m.Envelope, StatsMeter, m.Flags, m.MeterID)
}

func (m *MeterConfigRequest) Append(b []byte) ([]byte, error) {
	return appendMeterRequest(b, &m.Envelope, StatsMeterConfig, m.Flags, m.MeterID)
}

func appendMeterRequest(b []byte, e *Envelope, typ, flags uint16, id uint32) ([]byte, error) {
	b, start, err := meterStatsHeader(b, e, false, typ, flags)
	if err != nil {
		return b, err
	}
	return finish(zeros(be32(b, id), 4), start)
}

func (m *MeterFeaturesRequest) Append(b []byte) ([]byte, error) {
	b, start, err := meterStatsHeader(b, &m.Envelope, false, StatsMeterFeatures, m.Flags)
	if err != nil {
		return b, err
	}
	return finish(b, start)
}

func (m *MeterFeaturesReply) Append(b []byte) ([]byte, error) {
	b, start, err := meterStatsHeader(b, &m.Envelope, true, StatsMeterFeatures, m.Flags)
	if err != nil {
		return b, err
	}
	b = be32(be32(be32(b, m.MaxMeter), m.BandTypes), m.Capabilities)
	b = zeros(append(b, m.MaxBands, m.MaxColor), 2)
	return finish(b, start)
}

func (m *MeterStatsReply) Append(b []byte) ([]byte, error) {
	if m.Version < Version13 {
		return b, fmt.Errorf("openflow: meter stats in version 0x%02x: %w", m.Version, ErrBadVersion)
	}
	return appendReply(b, replyBody{env: &m.Envelope, typ: StatsMeter, flags: m.Flags, n: len(m.Stats),
		entry: func(b []byte, i int) ([]byte, error) {
			s := &m.Stats[i]
			n := meterStatsLen + bandStatsLen*len(s.Bands)
			if n > 0xffff {
				return b, fmt.Errorf("openflow: meter %d stats of %d bytes: %w", s.MeterID, n, ErrTooLong)
			}
			b = be32(zeros(be16(be32(b, s.MeterID), uint16(n)), 6), s.FlowCount)
			b = be32(be32(be64(be64(b, s.PacketInCount), s.ByteInCount), s.DurationSec), s.DurationNsec)
			for _, c := range s.Bands {
				b = be64(be64(b, c.PacketCount), c.ByteCount)
			}
			return b, nil
		}}, 0, false)
}

func (m *MeterConfigReply) Append(b []byte) ([]byte, error) {
	if m.Version < Version13 {
		return b, fmt.Errorf("openflow: meter config in version 0x%02x: %w", m.Version, ErrBadVersion)
	}
	return appendReply(b, replyBody{env: &m.Envelope, typ: StatsMeterConfig, flags: m.Flags, n: len(m.Configs),
		entry: func(b []byte, i int) ([]byte, error) {
			c := &m.Configs[i]
			n := meterConfigLen + meterBandLen*len(c.Bands)
			if n > 0xffff {
				return b, fmt.Errorf("openflow: meter %d config of %d bytes: %w", c.MeterID, n, ErrTooLong)
			}
			b = be32(be16(be16(b, uint16(n)), c.Flags), c.MeterID)
			return appendBands(b, c.Bands), nil
		}}, 0, false)
}

// OpenFlow 1.5 made the meter instruction an action; OVS's model keeps it
// an instruction, which runs before the apply actions, and takes a meter
// action only first among them (else OFPBAC_UNSUPPORTED_ORDER). So a 1.5
// meter action decodes into Instructions.Meter, and Instructions.Meter
// encodes in 1.5 as a meter action first in the apply actions, as
// ovs-vswitchd writes it; a flow added over one version dumps over any.

// decodeInstructionsV is DecodeInstructions13 for version v.
func decodeInstructionsV(v uint8, b []byte, in *Instructions) error {
	if err := decodeInstructions13(v, b, in); err != nil {
		return err
	}
	for i := range in.Write {
		if in.Write[i].Type == ActMeter {
			return &Error{Version: v, Type: ErrTypeBadAction, Code: BadAction13UnsupOrder, Err: ErrUnsupported,
				Detail: "meter in write actions"}
		}
	}
	if len(in.Apply) > 0 && in.Apply[0].Type == ActMeter && in.Meter == 0 {
		in.Meter = in.Apply[0].Queue
		in.Apply = in.Apply[1:]
	}
	for i := range in.Apply {
		if in.Apply[i].Type == ActMeter {
			return &Error{Version: v, Type: ErrTypeBadAction, Code: BadAction13UnsupOrder, Err: ErrUnsupported,
				Detail: "a meter action must come first, once"}
		}
	}
	return nil
}

// appendInstructionsV is AppendInstructions13 for version v.
func appendInstructionsV(b []byte, v uint8, in *Instructions) ([]byte, error) {
	if v < Version15 || in.Meter == 0 {
		return appendInstructions13(b, v, in)
	}
	c := *in
	c.Meter = 0
	c.Apply = append([]Action{{Type: ActMeter, Queue: in.Meter}}, in.Apply...)
	return appendInstructions13(b, v, &c)
}
