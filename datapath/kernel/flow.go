package kernel

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/netlinkio"
	"golang.org/x/sys/unix"
)

// OVS_FLOW_* commands and attributes.
const (
	flowCmdNew = 1
	flowCmdDel = 2
	flowCmdGet = 3
	flowCmdSet = 4

	flowAttrKey       = 1
	flowAttrActions   = 2
	flowAttrStats     = 3
	flowAttrTCPFlags  = 4
	flowAttrUsed      = 5
	flowAttrClear     = 6
	flowAttrMask      = 7
	flowAttrProbe     = 8
	flowAttrUFID      = 9
	flowAttrUFIDFlags = 10

	ufidOmitKey     = 1 << 0
	ufidOmitMask    = 1 << 1
	ufidOmitActions = 1 << 2
	ufidOmitAll     = ufidOmitKey | ufidOmitMask | ufidOmitActions

	packetAttrPacket  = datapath.PacketAttrPacket
	packetAttrKey     = datapath.PacketAttrKey
	packetAttrActions = datapath.PacketAttrActions
)

func appendOVSHeader(b []byte, dpIndex int) []byte {
	return binary.NativeEndian.AppendUint32(b, uint32(int32(dpIndex)))
}

func appendNested(b []byte, typ uint16, data []byte) []byte {
	return netlinkio.AppendAttr(b, typ, data)
}

// appendPut adds an OVS_FLOW_CMD_NEW or _SET for f to the batch:
// create-only is NEW with NLM_F_CREATE|NLM_F_EXCL (EEXIST when the flow
// exists), modify-only is SET (ENOENT when it does not), either is a plain
// NEW. A reply is asked for only when echo; it then omits key, mask and
// actions, which the caller already has.
func (d *Datapath) appendPut(b *netlinkio.Batch, f *datapath.Flow, flags datapath.PutFlags, echo bool) int {
	if flags&(datapath.PutCreate|datapath.PutModify) == 0 {
		flags |= datapath.PutCreate | datapath.PutModify
	}
	cmd, nlflags := uint8(flowCmdNew), uint16(0)
	switch {
	case flags&datapath.PutModify == 0:
		nlflags = netlinkio.FlagCreate | netlinkio.FlagExcl
	case flags&datapath.PutCreate == 0:
		cmd = flowCmdSet
	}
	if echo {
		nlflags |= netlinkio.FlagEcho
	}
	buf := b.Begin(d.fams.flow.ID, nlflags, cmd, d.fams.flow.Version)
	buf = appendOVSHeader(buf, d.index)
	if !f.UFID.IsZero() {
		buf = netlinkio.AppendAttr(buf, flowAttrUFID, f.UFID[:])
	}
	var start int
	buf, start = netlinkio.BeginNested(buf, flowAttrKey)
	buf = d.fixKey(datapath.AppendFlowKey(buf, &f.Key, &f.Mask), start)
	buf = netlinkio.EndNested(buf, start)
	buf, start = netlinkio.BeginNested(buf, flowAttrMask)
	buf = d.fixMask(datapath.AppendMask(buf, &f.Key, &f.Mask), start)
	buf = netlinkio.EndNested(buf, start)
	buf = appendNested(buf, flowAttrActions, f.Actions)
	if cmd == flowCmdSet && flags&datapath.PutZeroStats != 0 {
		buf = netlinkio.AppendFlag(buf, flowAttrClear)
	}
	if echo {
		buf = netlinkio.AppendU32(buf, flowAttrUFIDFlags, ufidOmitAll)
	}
	if d.probing {
		buf = netlinkio.AppendFlag(buf, flowAttrProbe)
	}
	return b.End(buf)
}

// appendFlowID appends the UFID, or the key when the UFID is zero.
func (d *Datapath) appendFlowID(buf []byte, ufid datapath.UFID, k *flow.Key) []byte {
	if !ufid.IsZero() {
		return netlinkio.AppendAttr(buf, flowAttrUFID, ufid[:])
	}
	if k != nil {
		var start int
		buf, start = netlinkio.BeginNested(buf, flowAttrKey)
		buf = d.fixKey(datapath.AppendKey(buf, k), start)
		buf = netlinkio.EndNested(buf, start)
	}
	return buf
}

// fixKey adapts the key or mask attributes in b[start+AttrHeaderLen:] to
// the kernel: without conntrack zones it drops a zero
// OVS_KEY_ATTR_CT_ZONE, which such a kernel neither sends nor accepts.
func (d *Datapath) fixKey(b []byte, start int) []byte {
	if !d.noCtZone {
		return b
	}
	return stripZeroAttr(b, start+netlinkio.AttrHeaderLen, datapath.KeyAttrCtZone)
}

// fixMask is fixKey for masks: without conntrack zones every packet's zone
// is 0, so the zone's mask bits mean nothing and the attribute, which the
// key no longer has, is dropped whatever its value. A flow put with an
// exact mask therefore reads back with the zone wildcarded there.
func (d *Datapath) fixMask(b []byte, start int) []byte {
	if !d.noCtZone {
		return b
	}
	return stripAttr(b, start+netlinkio.AttrHeaderLen, datapath.KeyAttrCtZone, false)
}

// stripZeroAttr removes the attributes of type typ whose payload is all
// zeros from the attribute run b[from:], moving the rest down in place.
func stripZeroAttr(b []byte, from int, typ uint16) []byte {
	return stripAttr(b, from, typ, true)
}

// stripAttr removes the attributes of type typ (only those with an all-zero
// payload when onlyZero) from the attribute run b[from:].
func stripAttr(b []byte, from int, typ uint16, onlyZero bool) []byte {
	i := from
	for i+netlinkio.AttrHeaderLen <= len(b) {
		n := int(binary.NativeEndian.Uint16(b[i:]))
		if n < netlinkio.AttrHeaderLen || i+n > len(b) {
			return b
		}
		step := min(netlinkio.Align(n), len(b)-i)
		t := binary.NativeEndian.Uint16(b[i+2:]) &^ (netlinkio.AttrNested | netlinkio.AttrNetByteOrder)
		zero := true
		for _, c := range b[i+netlinkio.AttrHeaderLen : i+n] {
			zero = zero && c == 0
		}
		if t == typ && (zero || !onlyZero) {
			copy(b[i:], b[i+step:])
			b = b[:len(b)-step]
			continue
		}
		i += step
	}
	return b
}

// appendDel adds an OVS_FLOW_CMD_DEL by UFID or key.
func (d *Datapath) appendDel(b *netlinkio.Batch, ufid datapath.UFID, k *flow.Key, echo bool) int {
	var nlflags uint16
	if echo {
		nlflags = netlinkio.FlagEcho
	}
	buf := b.Begin(d.fams.flow.ID, nlflags, flowCmdDel, d.fams.flow.Version)
	buf = appendOVSHeader(buf, d.index)
	buf = d.appendFlowID(buf, ufid, k)
	if echo && !ufid.IsZero() {
		buf = netlinkio.AppendU32(buf, flowAttrUFIDFlags, ufidOmitAll)
	}
	return b.End(buf)
}

// appendExecute adds an OVS_PACKET_CMD_EXECUTE.
func (d *Datapath) appendExecute(b *netlinkio.Batch, pkt []byte, md *flow.Key, actions []byte) int {
	buf := b.Begin(d.fams.packet.ID, 0, packetCmdExecute, d.fams.packet.Version)
	buf = appendOVSHeader(buf, d.index)
	buf = netlinkio.AppendAttr(buf, packetAttrPacket, pkt)
	mk := datapath.MetadataKey(md)
	var start int
	buf, start = netlinkio.BeginNested(buf, packetAttrKey)
	buf = d.fixKey(datapath.AppendKey(buf, &mk), start)
	buf = netlinkio.EndNested(buf, start)
	buf = appendNested(buf, packetAttrActions, actions)
	return b.End(buf)
}

// transact runs the batch's single request (d.op is held) and returns its
// result and error. The error is wrapped by the caller, which names the
// object only when there is an error: naming a flow formats its key.
func (d *Datapath) transact() (netlinkio.Result, error) {
	if err := d.sock.Transact(&d.batch); err != nil {
		return netlinkio.Result{}, err
	}
	r := d.batch.Results()[0]
	return r, r.Err()
}

func flowName(ufid datapath.UFID, k *flow.Key) string {
	if !ufid.IsZero() || k == nil {
		return ufid.String()
	}
	exact := flow.ExactMask()
	return flow.Format(k, &exact)
}

// PutFlow installs or modifies a flow.
func (d *Datapath) PutFlow(f *datapath.Flow, flags datapath.PutFlags) error {
	d.op.Lock()
	defer d.op.Unlock()
	d.batch.Reset()
	d.appendPut(&d.batch, f, flags, false)
	if _, err := d.transact(); err != nil {
		return datapath.WrapError("put flow", flowName(f.UFID, &f.Key), err)
	}
	return nil
}

// GetFlow reads a flow by UFID, or by key when ufid is zero.
func (d *Datapath) GetFlow(ufid datapath.UFID, k *flow.Key, f *datapath.Flow) error {
	d.op.Lock()
	defer d.op.Unlock()
	d.batch.Reset()
	buf := d.batch.Begin(d.fams.flow.ID, 0, flowCmdGet, d.fams.flow.Version)
	buf = appendOVSHeader(buf, d.index)
	buf = d.appendFlowID(buf, ufid, k)
	d.batch.End(buf)
	r, err := d.transact()
	if err != nil {
		return datapath.WrapError("get flow", flowName(ufid, k), err)
	}
	if r.Reply == nil {
		return datapath.WrapError("get flow", flowName(ufid, k), unix.EBADMSG)
	}
	_, _, rest, _ := netlinkio.Genl(r.Reply)
	if err := decodeFlow(rest, f); err != nil {
		return datapath.WrapError("get flow", flowName(ufid, k), err)
	}
	return nil
}

// DeleteFlow deletes a flow by UFID, or by key when ufid is zero, and
// returns its last stats.
func (d *Datapath) DeleteFlow(ufid datapath.UFID, k *flow.Key) (datapath.FlowStats, error) {
	d.op.Lock()
	defer d.op.Unlock()
	d.batch.Reset()
	d.appendDel(&d.batch, ufid, k, true)
	r, err := d.transact()
	if err != nil {
		return datapath.FlowStats{}, datapath.WrapError("delete flow", flowName(ufid, k), err)
	}
	if r.Reply == nil {
		return datapath.FlowStats{}, nil
	}
	return decodeStats(r.Reply), nil
}

// FlushFlows deletes every flow of the datapath.
func (d *Datapath) FlushFlows() error {
	d.op.Lock()
	defer d.op.Unlock()
	d.batch.Reset()
	d.appendDel(&d.batch, datapath.UFID{}, nil, false)
	_, err := d.transact()
	return datapath.WrapError("flush flows", d.name, err)
}

// Execute sends packet through actions.
func (d *Datapath) Execute(packet []byte, md *flow.Key, actions []byte) error {
	d.op.Lock()
	defer d.op.Unlock()
	d.batch.Reset()
	d.appendExecute(&d.batch, packet, md, actions)
	_, err := d.transact()
	return datapath.WrapError("execute", d.name, err)
}

// Operate runs ops in as few sendmsg calls as the batch limits allow (see
// netlinkio.Socket.Transact). ops[i].Err is the bare unix.Errno the kernel
// returned (nil on success), so that a batch of failures allocates nothing.
// A reply is asked for only for ops with WantStats. In steady state Operate
// allocates nothing.
func (d *Datapath) Operate(ops []datapath.Op) error {
	d.op.Lock()
	defer d.op.Unlock()
	d.batch.Reset()
	// Without stats to return, the kernel answers only errors: the replies
	// are read once for the whole batch, not after each sendmsg.
	d.batch.ErrorsOnly = true
	for i := range ops {
		op := &ops[i]
		op.Err, op.Stats = nil, datapath.FlowStats{}
		if op.WantStats {
			d.batch.ErrorsOnly = false
		}
		switch op.Kind {
		case datapath.OpPut:
			d.appendPut(&d.batch, &op.Flow, op.Flags, op.WantStats)
		case datapath.OpDelete:
			d.appendDel(&d.batch, op.Flow.UFID, &op.Flow.Key, op.WantStats)
		case datapath.OpExecute:
			d.appendExecute(&d.batch, op.Packet, &op.Flow.Key, op.Flow.Actions)
		default:
			// Keep indexes aligned: a no-op the kernel answers silently.
			d.batch.End(d.batch.Begin(netlinkio.TypeNoop, 0, 0, 0))
		}
	}
	if err := d.sock.Transact(&d.batch); err != nil {
		return datapath.WrapError("operate", d.name, err)
	}
	for i, r := range d.batch.Results() {
		op := &ops[i]
		if op.Kind != datapath.OpPut && op.Kind != datapath.OpDelete && op.Kind != datapath.OpExecute {
			op.Err = unix.EINVAL
			continue
		}
		if r.Errno != 0 {
			op.Err = r.Errno
			continue
		}
		if op.WantStats && r.Reply != nil {
			op.Stats = decodeStats(r.Reply)
		}
	}
	return nil
}

// DumpFlows calls fn for every flow. It uses a socket of its own, so fn may
// call the other methods (deleting the flows it sees, say), but not
// DumpFlows.
func (d *Datapath) DumpFlows(terse bool, fn func(f *datapath.Flow) error) error {
	d.dump.Lock()
	defer d.dump.Unlock()
	if d.dumpClosed {
		return datapath.WrapError("dump flows", d.name, os.ErrClosed)
	}
	if d.dumpSock == nil {
		s, err := netlinkio.OpenSocket()
		if err != nil {
			return datapath.WrapError("dump flows", d.name, err)
		}
		d.dumpSock = s
	}
	msg, start := netlinkio.BeginMessage(d.dumpMsg[:0], d.fams.flow.ID, 0, flowCmdGet, d.fams.flow.Version)
	msg = appendOVSHeader(msg, d.index)
	if terse {
		msg = netlinkio.AppendU32(msg, flowAttrUFIDFlags, ufidOmitAll)
	}
	msg = netlinkio.EndMessage(msg, start)
	d.dumpMsg = msg
	f := &d.dumpFlow
	err := d.dumpSock.Dump(msg, func(p []byte) error {
		_, _, rest, ok := netlinkio.Genl(p)
		if !ok {
			return unix.EBADMSG
		}
		*f = datapath.Flow{Actions: f.Actions[:0]}
		if err := decodeFlow(rest, f); err != nil {
			return err
		}
		f.Terse = terse
		return fn(f)
	})
	return datapath.WrapError("dump flows", d.name, err)
}

// dumpState is the dump socket and its scratch, under its own lock.
type dumpState struct {
	dump       sync.Mutex
	dumpSock   *netlinkio.Socket
	dumpClosed bool
	dumpMsg    []byte
	dumpFlow   datapath.Flow
}

// decodeStats reads the stats of a flow reply (genl header included).
func decodeStats(reply []byte) datapath.FlowStats {
	var f datapath.Flow
	if _, _, rest, ok := netlinkio.Genl(reply); ok {
		_ = decodeFlowAttrs(rest, &f, false)
	}
	return f.Stats
}

// decodeFlow decodes a flow message payload into f: b is the ovs_header and
// attributes, after the genl header. f.Actions is appended to
// f.Actions[:0]; key and mask are zero when the message omits them.
func decodeFlow(b []byte, f *datapath.Flow) error {
	return decodeFlowAttrs(b, f, true)
}

func decodeFlowAttrs(b []byte, f *datapath.Flow, full bool) error {
	if len(b) < datapath.OVSHeaderLen {
		return fmt.Errorf("flow message of %d bytes: %w", len(b), unix.EBADMSG)
	}
	var key, mask []byte
	var haveKey, haveMask bool
	f.Actions = f.Actions[:0]
	it := netlinkio.NewAttrIter(b[datapath.OVSHeaderLen:])
	for it.Next() {
		data := it.Data()
		switch it.Type() {
		case flowAttrUFID:
			f.UFID = datapath.UFID{}
			copy(f.UFID[:], data)
		case flowAttrKey:
			key, haveKey = data, true
		case flowAttrMask:
			mask, haveMask = data, true
		case flowAttrActions:
			f.Actions = append(f.Actions, data...)
		case flowAttrStats:
			if len(data) >= 16 {
				f.Stats.Packets = binary.NativeEndian.Uint64(data)
				f.Stats.Bytes = binary.NativeEndian.Uint64(data[8:])
			}
		case flowAttrUsed:
			f.Stats.Used = it.U64()
		case flowAttrTCPFlags:
			switch len(data) {
			case 1:
				f.Stats.TCPFlags = uint16(data[0])
			case 2:
				f.Stats.TCPFlags = binary.BigEndian.Uint16(data)
			}
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if !full {
		return nil
	}
	f.Key, f.Mask = flow.Key{}, flow.Mask{}
	if haveKey {
		if err := datapath.DecodeKey(key, &f.Key); err != nil {
			return err
		}
		if haveMask {
			if err := datapath.DecodeMask(mask, &f.Key, &f.Mask); err != nil {
				return err
			}
		} else {
			f.Mask = flow.ExactMask()
		}
	}
	return nil
}
