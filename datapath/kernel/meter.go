package kernel

import (
	"encoding/binary"
	"fmt"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/netlinkio"
	"golang.org/x/sys/unix"
)

// Meters over the ovs_meter family (linux/openvswitch.h).
const (
	meterCmdFeatures = 1
	meterCmdSet      = 2
	meterCmdDel      = 3
	meterCmdGet      = 4

	meterAttrID        = 1
	meterAttrKBPS      = 2
	meterAttrStats     = 3
	meterAttrBands     = 4
	meterAttrMaxMeters = 7
	meterAttrMaxBands  = 8

	bandAttrType  = 1
	bandAttrRate  = 2
	bandAttrBurst = 3
	bandAttrStats = 4

	meterBandTypeDrop = 1

	// The ids of the broken-meter probe: ovs-vswitchd's, chosen to fit
	// the kernel's smallest meter array (1024) without wrapping.
	probeMeter1 = 1021
	probeMeter2 = 1022
)

var _ datapath.Meterer = (*Datapath)(nil)

// meterState is what open learned of the kernel's meters.
type meterState struct {
	meterFam *netlinkio.Family
	meters   datapath.MeterFeatures
	meterErr error
}

// probeMeters looks the ovs_meter family up, checks the kernel's meters
// work as ovs-vswitchd checks them (Linux 4.15-4.17 created every meter
// with id 0: two meters set must read back by their own ids), and reads
// the features. It never fails the open: without meters, meter calls fail
// with datapath.ErrNotSupported.
func (d *Datapath) probeMeters() {
	fam, err := d.conn.Family("ovs_meter")
	if err != nil {
		d.meterErr = fmt.Errorf("generic netlink family ovs_meter: %w: %w", datapath.ErrNotSupported, err)
		return
	}
	d.meterFam = &fam
	if d.brokenMeters() {
		d.meterErr = fmt.Errorf("the kernel's meters do not keep their ids: %w", datapath.ErrNotSupported)
		return
	}
	msgs, err := d.conn.Execute("meter features", fam, meterCmdFeatures, netlinkio.FlagEcho, d.meterHeader())
	if err != nil || len(msgs) == 0 {
		d.meterErr = fmt.Errorf("meter features: %w: %v", datapath.ErrNotSupported, err)
		return
	}
	f, err := parseMeterFeatures(msgs[0])
	if err != nil {
		d.meterErr = fmt.Errorf("meter features reply: %w: %w", datapath.ErrNotSupported, err)
		return
	}
	d.meters = f
}

// brokenMeters is ovs-vswitchd's probe_broken_meters.
func (d *Datapath) brokenMeters() bool {
	if _, err := d.GetMeter(probeMeter1); err == nil {
		return false
	}
	if _, err := d.GetMeter(probeMeter2); err == nil {
		return false
	}
	band := []datapath.MeterBand{{Rate: 1, Burst: 1}}
	d.setMeter(&datapath.Meter{ID: probeMeter1, KBPS: true, Bands: band})
	d.setMeter(&datapath.Meter{ID: probeMeter2, KBPS: true, Bands: band})
	_, err1 := d.GetMeter(probeMeter1)
	_, err2 := d.GetMeter(probeMeter2)
	d.deleteMeter(probeMeter1)
	d.deleteMeter(probeMeter2)
	return err1 != nil || err2 != nil
}

func (d *Datapath) meterHeader() []byte {
	return binary.NativeEndian.AppendUint32(make([]byte, 0, 128), uint32(int32(d.index)))
}

// MeterFeatures returns the meter features probed at open.
func (d *Datapath) MeterFeatures() (datapath.MeterFeatures, error) {
	if d.meterErr != nil {
		return datapath.MeterFeatures{}, d.meterErr
	}
	return d.meters, nil
}

func (d *Datapath) meterFamily() (netlinkio.Family, error) {
	if d.meterFam == nil {
		return netlinkio.Family{}, d.meterErr
	}
	return *d.meterFam, nil
}

// SetMeter adds or replaces a meter (OVS_METER_CMD_SET).
func (d *Datapath) SetMeter(m *datapath.Meter) error {
	if d.meterErr != nil {
		return d.meterErr
	}
	return d.setMeter(m)
}

func (d *Datapath) setMeter(m *datapath.Meter) error {
	fam, err := d.meterFamily()
	if err != nil {
		return err
	}
	b := netlinkio.AppendU32(d.meterHeader(), meterAttrID, m.ID)
	if m.KBPS {
		b = netlinkio.AppendFlag(b, meterAttrKBPS)
	}
	b, bands := netlinkio.BeginNested(b, meterAttrBands)
	for _, band := range m.Bands {
		var at int
		b, at = netlinkio.BeginNested(b, 0)
		b = netlinkio.AppendU32(b, bandAttrType, meterBandTypeDrop)
		b = netlinkio.AppendU32(b, bandAttrRate, band.Rate)
		b = netlinkio.AppendU32(b, bandAttrBurst, band.Burst)
		b = netlinkio.EndNested(b, at)
	}
	b = netlinkio.EndNested(b, bands)
	_, err = d.conn.Execute("meter set", fam, meterCmdSet, netlinkio.FlagEcho, b)
	if err != nil {
		return datapath.WrapError("meter set", d.name, err)
	}
	return nil
}

// DeleteMeter deletes a meter (OVS_METER_CMD_DEL).
func (d *Datapath) DeleteMeter(id uint32) error {
	if d.meterErr != nil {
		return d.meterErr
	}
	return d.deleteMeter(id)
}

func (d *Datapath) deleteMeter(id uint32) error {
	fam, err := d.meterFamily()
	if err != nil {
		return err
	}
	_, err = d.conn.Execute("meter del", fam, meterCmdDel, netlinkio.FlagEcho,
		netlinkio.AppendU32(d.meterHeader(), meterAttrID, id))
	if err != nil {
		return datapath.WrapError("meter del", d.name, err)
	}
	return nil
}

// GetMeter reads a meter's counters (OVS_METER_CMD_GET).
func (d *Datapath) GetMeter(id uint32) (datapath.MeterStats, error) {
	var st datapath.MeterStats
	fam, err := d.meterFamily()
	if err != nil {
		return st, err
	}
	msgs, err := d.conn.Execute("meter get", fam, meterCmdGet, netlinkio.FlagEcho,
		netlinkio.AppendU32(d.meterHeader(), meterAttrID, id))
	if err != nil {
		return st, datapath.WrapError("meter get", d.name, err)
	}
	if len(msgs) == 0 {
		return st, fmt.Errorf("meter get %d: no reply: %w", id, unix.EBADMSG)
	}
	return parseMeterStats(msgs[0], id)
}

// parseMeterFeatures reads an OVS_METER_CMD_FEATURES reply (ovs_header
// and attributes).
func parseMeterFeatures(b []byte) (datapath.MeterFeatures, error) {
	var f datapath.MeterFeatures
	if len(b) < datapath.OVSHeaderLen {
		return f, fmt.Errorf("meter features reply of %d bytes: %w", len(b), unix.EBADMSG)
	}
	it := netlinkio.NewAttrIter(b[datapath.OVSHeaderLen:])
	for it.Next() {
		switch it.Type() {
		case meterAttrMaxMeters:
			f.MaxMeters = it.U32()
		case meterAttrMaxBands:
			f.MaxBands = it.U32()
		case meterAttrBands:
			bands := it.Nested()
			for bands.Next() {
				band := bands.Nested()
				for band.Next() {
					if band.Type() == bandAttrType && len(band.Data()) == 4 && band.U32() == meterBandTypeDrop {
						f.DropBand = true
					}
				}
				if err := band.Err(); err != nil {
					return f, err
				}
			}
			if err := bands.Err(); err != nil {
				return f, err
			}
		}
	}
	return f, it.Err()
}

// parseMeterStats reads an OVS_METER_CMD_GET (or DEL) reply for meter id.
func parseMeterStats(b []byte, id uint32) (datapath.MeterStats, error) {
	var st datapath.MeterStats
	if len(b) < datapath.OVSHeaderLen {
		return st, fmt.Errorf("meter get %d: reply of %d bytes: %w", id, len(b), unix.EBADMSG)
	}
	gotID := false
	it := netlinkio.NewAttrIter(b[datapath.OVSHeaderLen:])
	for it.Next() {
		switch it.Type() {
		case meterAttrID:
			if got := it.U32(); got != id {
				return st, fmt.Errorf("meter get %d: the kernel answered for meter %d: %w", id, got, unix.EBADMSG)
			}
			gotID = true
		case meterAttrStats:
			st.Packets, st.Bytes = flowStatsOf(it.Data())
		case meterAttrBands:
			bands := it.Nested()
			for bands.Next() {
				var bs datapath.FlowStats
				band := bands.Nested()
				for band.Next() {
					if band.Type() == bandAttrStats {
						bs.Packets, bs.Bytes = flowStatsOf(band.Data())
					}
				}
				if err := band.Err(); err != nil {
					return st, fmt.Errorf("meter get %d: %w", id, err)
				}
				st.Bands = append(st.Bands, bs)
			}
			if err := bands.Err(); err != nil {
				return st, fmt.Errorf("meter get %d: %w", id, err)
			}
		}
	}
	if err := it.Err(); err != nil {
		return st, fmt.Errorf("meter get %d: %w", id, err)
	}
	if !gotID {
		return st, fmt.Errorf("meter get %d: reply without an id: %w", id, unix.EBADMSG)
	}
	return st, nil
}

// flowStatsOf reads a struct ovs_flow_stats (two native-endian u64s,
// 4-byte aligned in the attribute).
func flowStatsOf(b []byte) (packets, bytes uint64) {
	if len(b) < 16 {
		return 0, 0
	}
	return binary.NativeEndian.Uint64(b), binary.NativeEndian.Uint64(b[8:])
}
