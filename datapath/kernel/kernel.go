// Package kernel implements datapath.Datapath over the Linux openvswitch
// module, through generic netlink: the cold control plane (datapaths,
// vports) over a netlinkio.Conn, flows and packets over a batched
// netlinkio.Socket, upcalls over one netlinkio.Socket per handler.
//
// Everything here needs CAP_NET_ADMIN and the openvswitch module loaded;
// without the module every call fails with an error for which
// errors.Is(err, datapath.ErrNotSupported).
package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
	"golang.org/x/sys/unix"
)

// Generic netlink families and commands of linux/openvswitch.h.
const (
	dpCmdNew = 1
	dpCmdDel = 2
	dpCmdGet = 3
	dpCmdSet = 4

	dpAttrName           = 1
	dpAttrUpcallPID      = 2
	dpAttrStats          = 3
	dpAttrMegaflowStats  = 4
	dpAttrUserFeatures   = 5
	dpAttrMasksCacheSize = 7
	dpAttrPerCPUPIDs     = 8
	dpAttrIfindex        = 9

	packetCmdExecute = 3
)

// families are the openvswitch generic netlink families, resolved once per
// Datapath.
type families struct {
	dp, vport, flow, packet netlinkio.Family
}

func resolve(c *netlinkio.Conn) (*families, error) {
	var f families
	for _, x := range []struct {
		name string
		dst  *netlinkio.Family
	}{
		{"ovs_datapath", &f.dp}, {"ovs_vport", &f.vport}, {"ovs_flow", &f.flow}, {"ovs_packet", &f.packet},
	} {
		fam, err := c.Family(x.name)
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("generic netlink family %s (is the openvswitch module loaded?): %w: %w",
				x.name, datapath.ErrNotSupported, err)
		}
		if err != nil {
			return nil, err
		}
		*x.dst = fam
	}
	return &f, nil
}

// Provider creates, opens and deletes kernel datapaths. The zero Provider
// is ready to use.
type Provider struct{}

var _ datapath.Provider = Provider{}

// Create creates the datapath name and opens it (see datapath.Provider).
func (Provider) Create(name string, cfg datapath.Config) (datapath.Datapath, error) {
	return open(name, cfg, true)
}

// Open opens the existing datapath name (see datapath.Provider).
func (Provider) Open(name string, cfg datapath.Config) (datapath.Datapath, error) {
	return open(name, cfg, false)
}

// Delete deletes the datapath name.
func (Provider) Delete(name string) error {
	c, err := netlinkio.Dial()
	if err != nil {
		return datapath.WrapError("delete", name, err)
	}
	defer c.Close()
	fams, err := resolve(c)
	if err != nil {
		return datapath.WrapError("delete", name, err)
	}
	_, err = c.Execute("dp del", fams.dp, dpCmdDel, netlinkio.FlagEcho, dpRequest(0, name))
	return datapath.WrapError("delete", name, missingDP(err))
}

// missingDP makes the kernel's ENODEV for a datapath that does not exist
// also match ENOENT, which the datapath.Provider contract promises.
func missingDP(err error) error {
	if errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("%w (%w)", unix.ENOENT, err)
	}
	return err
}

// dpRequest returns an ovs_header for dpIndex followed by a name attribute
// (when name is not empty).
func dpRequest(dpIndex int, name string) []byte {
	b := binary.NativeEndian.AppendUint32(make([]byte, 0, 64), uint32(int32(dpIndex)))
	if name != "" {
		b = netlinkio.AppendAttr(b, dpAttrName, append([]byte(name), 0))
	}
	return b
}

// Datapath is an open kernel datapath.
type Datapath struct {
	name     string
	index    int
	fams     *families
	conn     *netlinkio.Conn
	features datapath.Features
	handlers []*handler
	pids     []uint32 // handler PIDs, for vports
	// nextPID picks the handler of the next vport under per-vport
	// dispatch: one PID per vport, round robin, as OVS gives each vport
	// one channel. (Kernel 6.1 refuses an array of several PIDs.)
	nextPID   atomic.Uint32
	closeOnce sync.Once
	// probing marks the flow put of a feature probe, which asks the kernel
	// not to log the error it expects (OVS_FLOW_ATTR_PROBE).
	probing bool
	// noCtZone is set when the kernel was built without conntrack zones
	// and refuses an OVS_KEY_ATTR_CT_ZONE in keys and masks.
	noCtZone bool

	// op serialises the flow socket and its batch, which Operate and the
	// single-flow calls share.
	op    sync.Mutex
	sock  *netlinkio.Socket
	batch netlinkio.Batch

	dumpState
	meterState
}

var _ datapath.Datapath = (*Datapath)(nil)

func open(name string, cfg datapath.Config, create bool) (dp *Datapath, err error) {
	op := "open"
	if create {
		op = "create"
	}
	defer func() {
		if err != nil {
			err = datapath.WrapError(op, name, err)
		}
	}()
	conn, err := netlinkio.Dial()
	if err != nil {
		return nil, err
	}
	d := &Datapath{name: name, conn: conn}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if d.fams, err = resolve(conn); err != nil {
		return nil, err
	}
	if d.sock, err = netlinkio.OpenSocket(); err != nil {
		return nil, err
	}
	for range cfg.HandlerCount() {
		s, err := netlinkio.OpenSocket()
		if err != nil {
			return nil, err
		}
		d.handlers = append(d.handlers, &handler{sock: s})
		d.pids = append(d.pids, s.PID())
	}
	if err := d.negotiate(cfg, create); err != nil {
		return nil, err
	}
	for _, h := range d.handlers {
		h.dpIndex = d.index
	}
	if !create && !d.features.PerCPUDispatch {
		// Take over the upcalls of the existing ports.
		vs, err := d.Vports()
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			if err := d.setVportPID(v.PortNo); err != nil {
				return nil, err
			}
		}
	}
	d.features.UFID = d.probeUFID()
	d.features.MaxVLANHeaders = d.probeMaxVLAN()
	d.noCtZone = !d.probeCtZone()
	d.features.CtZone = !d.noCtZone
	d.probeCt()
	d.probeActions()
	d.probeMeters()
	return d, nil
}

// negotiate creates (or changes) the datapath asking for per-CPU upcall
// dispatch, and falls back to per-vport PIDs when the kernel refuses it.
func (d *Datapath) negotiate(cfg datapath.Config, create bool) error {
	want := []uint32{
		datapath.DPFeatureUnaligned | datapath.DPFeatureVportPIDs | datapath.DPFeaturePerCPUDispatch,
		datapath.DPFeatureUnaligned | datapath.DPFeatureVportPIDs,
	}
	if cfg.NoPerCPU {
		want = want[1:]
	}
	var err error
	for _, features := range want {
		cmd, flags := uint8(dpCmdSet), uint16(netlinkio.FlagEcho)
		if create {
			cmd = dpCmdNew
		}
		b := dpRequest(0, d.name)
		b = netlinkio.AppendU32(b, dpAttrUpcallPID, d.pids[0])
		b = netlinkio.AppendU32(b, dpAttrUserFeatures, features)
		if features&datapath.DPFeaturePerCPUDispatch != 0 {
			b = netlinkio.AppendAttr(b, dpAttrPerCPUPIDs, d.perCPUPIDs())
		}
		var msgs [][]byte
		msgs, err = d.conn.Execute("dp set features", d.fams.dp, cmd, flags, b)
		if errors.Is(err, unix.EOPNOTSUPP) {
			continue
		}
		if err != nil {
			return missingDP(err)
		}
		if len(msgs) == 0 {
			return fmt.Errorf("no reply to datapath request: %w", unix.EBADMSG)
		}
		info, err := parseDP(msgs[0])
		if err != nil {
			return err
		}
		d.index = info.index
		d.features.Raw = info.features
		d.features.PerCPUDispatch = info.features&datapath.DPFeaturePerCPUDispatch != 0
		if d.features.PerCPUDispatch && !d.validatesFeatures() {
			// A kernel that takes any bit would echo per-CPU dispatch
			// back without doing it: ask again without it.
			create = false
			continue
		}
		return nil
	}
	return fmt.Errorf("user features: %w: %w", datapath.ErrNotSupported, err)
}

// validatesFeatures reports whether the kernel refuses user features it
// does not know, as OVS probes it: a set with bit 31 must fail with
// EOPNOTSUPP. Only then is an accepted per-CPU dispatch bit meaningful.
func (d *Datapath) validatesFeatures() bool {
	b := dpRequest(0, d.name)
	b = netlinkio.AppendU32(b, dpAttrUserFeatures, 1<<31)
	_, err := d.conn.Execute("dp probe features", d.fams.dp, dpCmdSet, netlinkio.FlagEcho, b)
	return errors.Is(err, unix.EOPNOTSUPP)
}

// perCPUPIDs lays the handlers out over the CPUs as OVS does: CPU i goes
// to handler i mod n. The kernel takes the CPU number modulo the array's
// length, so a short array still covers every CPU.
func (d *Datapath) perCPUPIDs() []byte {
	n := runtime.NumCPU()
	b := make([]byte, 0, 4*n)
	for i := range n {
		b = binary.NativeEndian.AppendUint32(b, d.pids[i%len(d.pids)])
	}
	return b
}

type dpInfo struct {
	index    int
	name     string
	features uint32
	stats    datapath.Stats
}

// parseDP decodes an OVS_DP_CMD_* reply payload (ovs_header, attributes).
func parseDP(b []byte) (dpInfo, error) {
	var info dpInfo
	if len(b) < datapath.OVSHeaderLen {
		return info, fmt.Errorf("datapath reply of %d bytes: %w", len(b), unix.EBADMSG)
	}
	info.index = int(int32(binary.NativeEndian.Uint32(b)))
	it := netlinkio.NewAttrIter(b[datapath.OVSHeaderLen:])
	for it.Next() {
		d := it.Data()
		switch it.Type() {
		case dpAttrName:
			info.name = it.String()
		case dpAttrUserFeatures:
			info.features = it.U32()
		case dpAttrStats:
			if len(d) >= 32 {
				info.stats.Hit = binary.NativeEndian.Uint64(d)
				info.stats.Missed = binary.NativeEndian.Uint64(d[8:])
				info.stats.Lost = binary.NativeEndian.Uint64(d[16:])
				info.stats.Flows = binary.NativeEndian.Uint64(d[24:])
			}
		case dpAttrMegaflowStats:
			if len(d) >= 24 {
				info.stats.MaskHit = binary.NativeEndian.Uint64(d)
				info.stats.Masks = binary.NativeEndian.Uint32(d[8:])
				info.stats.CacheHit = binary.NativeEndian.Uint64(d[16:])
			}
		}
	}
	return info, it.Err()
}

// Name returns the datapath's name.
func (d *Datapath) Name() string { return d.name }

// Index returns the datapath's ifindex.
func (d *Datapath) Index() int { return d.index }

// Features returns what was negotiated at open.
func (d *Datapath) Features() datapath.Features { return d.features }

// Stats reads the datapath's counters.
func (d *Datapath) Stats() (datapath.Stats, error) {
	msgs, err := d.conn.Execute("dp get", d.fams.dp, dpCmdGet, 0, dpRequest(d.index, ""))
	if err != nil {
		return datapath.Stats{}, datapath.WrapError("stats", d.name, err)
	}
	if len(msgs) == 0 {
		return datapath.Stats{}, datapath.WrapError("stats", d.name, unix.EBADMSG)
	}
	info, err := parseDP(msgs[0])
	return info.stats, datapath.WrapError("stats", d.name, err)
}

// Handlers returns the upcall handlers.
func (d *Datapath) Handlers() []datapath.Handler {
	hs := make([]datapath.Handler, len(d.handlers))
	for i, h := range d.handlers {
		hs[i] = h
	}
	return hs
}

// Close closes the datapath's sockets, unblocking handlers; the kernel
// datapath stays. Calls after Close fail (the sockets are closed); a second
// Close returns nil.
func (d *Datapath) Close() error {
	var err error
	d.closeOnce.Do(func() {
		var errs []error
		for _, h := range d.handlers {
			errs = append(errs, h.sock.Close())
		}
		if d.sock != nil {
			errs = append(errs, d.sock.Close())
		}
		if d.conn != nil {
			errs = append(errs, d.conn.Close())
		}
		d.dump.Lock()
		if d.dumpSock != nil {
			errs = append(errs, d.dumpSock.Close())
		}
		d.dumpClosed = true
		d.dump.Unlock()
		err = errors.Join(errs...)
	})
	return err
}

// probeUFID reports whether the kernel indexes flows by UFID: a get of a
// UFID no flow has fails with ENOENT there, and with EINVAL (no key) on a
// kernel that does not know the attribute.
func (d *Datapath) probeUFID() bool {
	probe := datapath.UFID{0x67, 0x6f, 0x76, 0x73, 0x77, 0x69, 0x74, 0x63, 0x68, 0x2d, 0x70, 0x72, 0x6f, 0x62, 0x65, 0x21}
	var f datapath.Flow
	err := d.GetFlow(probe, nil, &f)
	return errors.Is(err, unix.ENOENT) || err == nil
}

// probeMaxVLAN finds how many VLAN headers the kernel accepts in a flow
// key, as ovs-vswitchd does: it puts a flow for an IPv4 packet under one
// tag, then under two (nested encapsulations), and stops at the first the
// kernel refuses. Each accepted probe flow is deleted again.
func (d *Datapath) probeMaxVLAN() int {
	probe := datapath.Flow{
		UFID: datapath.UFID{'g', 'o', 'v', 's', 'w', 'i', 't', 'c', 'h', '-', 'v', 'l', 'a', 'n', 's', '?'},
		Key:  flow.Key{InPort: 65534, EthType: flow.EthTypeIPv4},
	}
	probe.Mask.InPort = ^uint32(0)
	probe.Mask.EthType = 0xffff
	n := 0
	for ; n < len(probe.Key.VLANs); n++ {
		probe.Key.VLANs[n] = flow.VLAN{TPID: flow.EthTypeVLAN, TCI: flow.VLANPresent | 1}
		probe.Mask.VLANs[n] = flow.VLAN{TPID: 0xffff, TCI: 0xffff}
		d.probing = true
		err := d.PutFlow(&probe, datapath.PutCreate)
		d.probing = false
		if err != nil {
			break
		}
		d.DeleteFlow(probe.UFID, nil)
	}
	return n
}

// probeCtZone reports whether the kernel matches on conntrack zones (it
// was built with CONFIG_NF_CONNTRACK_ZONES). Kernels without them accept a
// zero OVS_KEY_ATTR_CT_ZONE in a key but refuse one in a mask with EINVAL,
// so the probe puts a flow that masks the zone, on an ethertype no packet
// carries and a port that cannot exist, and deletes it again.
func (d *Datapath) probeCtZone() bool {
	probe := datapath.Flow{
		UFID: datapath.UFID{'g', 'o', 'v', 's', 'w', 'i', 't', 'c', 'h', '-', 'z', 'o', 'n', 'e', '?', '!'},
		Key:  flow.Key{InPort: 65534, EthType: 0x88b5},
	}
	probe.Mask.InPort = ^uint32(0)
	probe.Mask.EthType = 0xffff
	probe.Mask.CtZone = 0xffff
	d.probing = true
	err := d.PutFlow(&probe, datapath.PutCreate)
	d.probing = false
	if errors.Is(err, unix.EINVAL) {
		return false
	}
	if err == nil {
		d.DeleteFlow(probe.UFID, nil)
	}
	return true
}
