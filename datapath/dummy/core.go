package dummy

import (
	"slices"
	"sync"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"golang.org/x/sys/unix"
)

// core is one datapath, shared by every Datapath that opened it.
type core struct {
	p     *Provider
	name  string
	index int
	epoch time.Time // the zero of FlowStats.Used

	mu       sync.Mutex
	ports    map[uint32]*port
	nextPort uint32
	masks    []*maskEntry // in insertion order, as the kernel's mask array
	flows    []*dpFlow    // in insertion order, for dumps
	byUFID   map[datapath.UFID]*dpFlow
	stats    datapath.Stats
	// handlers receive upcalls; those of the last open. pidHandler maps
	// their PIDs for userspace actions.
	handlers  []*handler
	perCPU    bool
	watchers  map[int]func(datapath.VportEvent)
	nextWatch int
	destroyed bool

	// The executor and its state while it runs (c.mu held): cur is the
	// flow key of the packet being run, recircQ the packets it sent
	// back for another lookup.
	ex      datapath.Executor
	cur     flow.Key
	recircQ []recirc

	// freeFlows are removed flows kept for reuse and flowSlab the rest of
	// the last block of new ones: a flow put, like the kernel's slab
	// allocation, makes no garbage per flow.
	freeFlows []*dpFlow
	flowSlab  []dpFlow
}

// flowSlabLen is how many flows one block holds, and flowActionsCap the
// room for actions each new flow starts with (more is appended).
const (
	flowSlabLen    = 1024
	flowActionsCap = 96
)

// newFlowLocked returns a zeroed flow with room for actions.
func (c *core) newFlowLocked() *dpFlow {
	if n := len(c.freeFlows); n > 0 {
		f := c.freeFlows[n-1]
		c.freeFlows = c.freeFlows[:n-1]
		acts := f.actions[:0]
		*f = dpFlow{actions: acts}
		return f
	}
	if len(c.flowSlab) == 0 {
		c.flowSlab = make([]dpFlow, flowSlabLen)
		arena := make([]byte, flowSlabLen*flowActionsCap)
		for i := range c.flowSlab {
			c.flowSlab[i].actions = arena[i*flowActionsCap : i*flowActionsCap : (i+1)*flowActionsCap]
		}
	}
	f := &c.flowSlab[0]
	c.flowSlab = c.flowSlab[1:]
	return f
}

type port struct {
	dp   *core
	v    datapath.Vport
	dev  *Netdev // nil for tunnel ports
	pids []uint32
}

// maskEntry holds the flows of one mask, by their key under it: as in the
// kernel, a lookup costs one probe per mask, however many flows there are.
// maskEntry is one mask's flows, by the hash of their masked key, each
// bucket a chain through dpFlow.next. (A map keyed by flow.Key itself
// would allocate on every insert: keys that large are stored out of line.)
type maskEntry struct {
	mask  flow.Mask
	flows map[uint64]*dpFlow
	n     int
}

func (me *maskEntry) get(masked *flow.Key) *dpFlow {
	for f := me.flows[masked.HashWide(0)]; f != nil; f = f.next {
		if f.masked == *masked {
			return f
		}
	}
	return nil
}

func (me *maskEntry) put(f *dpFlow) {
	h := f.masked.HashWide(0)
	f.next = me.flows[h]
	me.flows[h] = f
	me.n++
}

func (me *maskEntry) remove(f *dpFlow) {
	h := f.masked.HashWide(0)
	if head := me.flows[h]; head == f {
		if f.next == nil {
			delete(me.flows, h)
		} else {
			me.flows[h] = f.next
		}
	} else {
		for p := head; p != nil; p = p.next {
			if p.next == f {
				p.next = f.next
				break
			}
		}
	}
	f.next = nil
	me.n--
}

type dpFlow struct {
	ufid    datapath.UFID
	key     flow.Key // as put (unmasked)
	masked  flow.Key // key under mask
	mask    flow.Mask
	actions []byte
	stats   datapath.FlowStats
	me      *maskEntry
	next    *dpFlow // in me's bucket
	idx     int     // position in core.flows
}

func newCore(p *Provider, name string, index int) *core {
	c := &core{
		p: p, name: name, index: index, epoch: time.Now(),
		ports: map[uint32]*port{}, nextPort: 1,
		byUFID: map[datapath.UFID]*dpFlow{}, watchers: map[int]func(datapath.VportEvent){},
	}
	c.bindExecutor()
	return c
}

// now returns the datapath's monotonic milliseconds, never 0.
func (c *core) now() uint64 { return uint64(time.Since(c.epoch).Milliseconds()) + 1 }

// ---- ports

func (c *core) addVport(spec datapath.VportSpec, pids []uint32) (datapath.Vport, error) {
	if spec.Name == "" || len(spec.Name) > 15 {
		return datapath.Vport{}, unix.EINVAL
	}
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.destroyed {
		return datapath.Vport{}, unix.ENODEV
	}
	for _, pt := range c.ports {
		if pt.v.Name == spec.Name {
			return datapath.Vport{}, unix.EEXIST
		}
	}
	no := spec.PortNo
	if no == 0 && len(c.ports) > 0 {
		for c.ports[c.nextPort] != nil {
			c.nextPort++
		}
		no = c.nextPort
	} else if c.ports[no] != nil {
		return datapath.Vport{}, unix.EBUSY
	}
	pt := &port{dp: c, v: datapath.Vport{PortNo: no, Type: spec.Type, Name: spec.Name}, pids: slices.Clone(pids)}
	switch spec.Type {
	case datapath.VportNetdev:
		dev := c.p.devs[spec.Name]
		if dev == nil {
			return datapath.Vport{}, unix.ENODEV
		}
		if dev.port.Load() != nil {
			return datapath.Vport{}, unix.EBUSY
		}
		pt.dev = dev
	case datapath.VportInternal:
		if c.p.devs[spec.Name] != nil {
			return datapath.Vport{}, unix.EEXIST
		}
		pt.dev = c.p.addNetdevLocked(spec.Name)
	case datapath.VportVXLAN, datapath.VportGeneve:
		pt.v.DstPort = spec.DstPort
		if pt.v.DstPort == 0 {
			pt.v.DstPort = 4789
			if spec.Type == datapath.VportGeneve {
				pt.v.DstPort = 6081
			}
		}
	case datapath.VportGRE:
	default:
		return datapath.Vport{}, unix.EAFNOSUPPORT
	}
	if pt.dev != nil {
		pt.dev.port.Store(pt)
		pt.v.IfIndex = uint32(1000 + c.index*100 + int(no))
	}
	c.ports[no] = pt
	c.notifyLocked(datapath.VportAdded, pt)
	return c.vportLocked(pt), nil
}

func (c *core) vportLocked(pt *port) datapath.Vport {
	v := pt.v
	v.UpcallPIDs = slices.Clone(pt.pids)
	return v
}

func (c *core) notifyLocked(kind datapath.VportEventKind, pt *port) {
	ev := datapath.VportEvent{Kind: kind, Index: c.index, Vport: c.vportLocked(pt)}
	for _, fn := range c.watchers {
		go fn(ev)
	}
}

func (c *core) deleteVport(no uint32) error {
	if no == 0 {
		return unix.EINVAL
	}
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	pt := c.ports[no]
	if pt == nil {
		return unix.ENODEV
	}
	c.removePortLocked(pt)
	return nil
}

// removePortLocked detaches a port; c.p.mu and c.mu are held.
func (c *core) removePortLocked(pt *port) {
	delete(c.ports, pt.v.PortNo)
	if pt.dev != nil {
		pt.dev.port.Store(nil)
		if pt.v.Type == datapath.VportInternal {
			delete(c.p.devs, pt.dev.name)
		}
	}
	c.notifyLocked(datapath.VportDeleted, pt)
}

func (c *core) destroy() {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, pt := range c.ports {
		c.removePortLocked(pt)
	}
	c.flows, c.masks = nil, nil
	clear(c.byUFID)
	c.destroyed = true
}

// ---- flow table

// lookup finds the flow matching k, trying masks in insertion order as the
// kernel does, and counts the masks tried.
func (c *core) lookupLocked(k *flow.Key, count bool) *dpFlow {
	for i, me := range c.masks {
		if f := me.get(new(k.Apply(&me.mask))); f != nil {
			if count {
				c.stats.MaskHit += uint64(i + 1)
			}
			return f
		}
	}
	if count {
		c.stats.MaskHit += uint64(len(c.masks))
	}
	return nil
}

// exactLocked finds the flow with exactly this key and mask (the identity
// of a flow put without a UFID).
func (c *core) exactLocked(k *flow.Key, m *flow.Mask) *dpFlow {
	for _, me := range c.masks {
		if me.mask == *m {
			return me.get(new(k.Apply(m)))
		}
	}
	return nil
}

// byKeyLocked finds a flow named by key, as the kernel's delete and get
// without UFID do: a flow put without UFID by its key as put, a flow with
// one by its key under its mask.
func (c *core) byKeyLocked(k *flow.Key) *dpFlow {
	for _, f := range c.flows {
		if f.ufid.IsZero() {
			if f.key == *k {
				return f
			}
		} else if f.masked == *k {
			return f
		}
	}
	return nil
}

func (c *core) findLocked(ufid datapath.UFID, k *flow.Key) *dpFlow {
	if !ufid.IsZero() {
		return c.byUFID[ufid]
	}
	if k == nil {
		return nil
	}
	return c.byKeyLocked(k)
}

func (c *core) insertLocked(f *dpFlow) {
	var me *maskEntry
	for _, e := range c.masks {
		if e.mask == f.mask {
			me = e
			break
		}
	}
	if me == nil {
		me = &maskEntry{mask: f.mask, flows: map[uint64]*dpFlow{}}
		c.masks = append(c.masks, me)
	}
	f.me = me
	me.put(f)
	f.idx = len(c.flows)
	c.flows = append(c.flows, f)
	if !f.ufid.IsZero() {
		c.byUFID[f.ufid] = f
	}
}

func (c *core) removeLocked(f *dpFlow) {
	me := f.me
	me.remove(f)
	if me.n == 0 {
		c.masks = slices.DeleteFunc(c.masks, func(x *maskEntry) bool { return x == me })
	}
	// Swap-remove: dumps have no order to keep (the kernel's is a hash
	// table's), and revalidators delete thousands of flows at a time.
	last := c.flows[len(c.flows)-1]
	c.flows[f.idx], last.idx = last, f.idx
	c.flows[len(c.flows)-1] = nil
	c.flows = c.flows[:len(c.flows)-1]
	if !f.ufid.IsZero() {
		delete(c.byUFID, f.ufid)
	}
	f.me = nil
	c.freeFlows = append(c.freeFlows, f)
}

// put follows ovs_flow_cmd_new and ovs_flow_cmd_set of kernel 6.1.
func (c *core) putLocked(fl *datapath.Flow, flags datapath.PutFlags) (datapath.FlowStats, error) {
	if flags&(datapath.PutCreate|datapath.PutModify) == 0 {
		flags |= datapath.PutCreate | datapath.PutModify
	}
	if fl.Key.EthType == 0 {
		return datapath.FlowStats{}, unix.EINVAL // a flow key needs an ethertype
	}
	if err := validateActions(fl.Actions, 0); err != nil {
		return datapath.FlowStats{}, err
	}
	m := fl.Mask
	datapath.FitMask(&fl.Key, &m)
	if flags&datapath.PutCreate == 0 {
		// OVS_FLOW_CMD_SET: the flow must exist, by UFID or exactly.
		var f *dpFlow
		if !fl.UFID.IsZero() {
			f = c.byUFID[fl.UFID]
		} else {
			f = c.exactLocked(&fl.Key, &m)
		}
		if f == nil {
			return datapath.FlowStats{}, unix.ENOENT
		}
		old := f.stats
		f.actions = append(f.actions[:0], fl.Actions...)
		if flags&datapath.PutZeroStats != 0 {
			f.stats = datapath.FlowStats{}
		}
		return old, nil
	}
	// OVS_FLOW_CMD_NEW: an existing flow is the one with this UFID, or
	// any flow a packet with this key would hit.
	var f *dpFlow
	if !fl.UFID.IsZero() {
		f = c.byUFID[fl.UFID]
	}
	if f == nil {
		f = c.lookupLocked(&fl.Key, false)
	}
	if f == nil {
		nf := c.newFlowLocked()
		nf.ufid, nf.key, nf.mask = fl.UFID, fl.Key, m
		nf.actions = append(nf.actions, fl.Actions...)
		nf.masked = fl.Key.Apply(&m)
		c.insertLocked(nf)
		return datapath.FlowStats{}, nil
	}
	if flags&datapath.PutModify == 0 {
		return datapath.FlowStats{}, unix.EEXIST
	}
	// An update must name the same flow: same UFID, or same key and mask.
	same := f.mask == m && f.masked == fl.Key.Apply(&m)
	if !fl.UFID.IsZero() {
		same = same && f.ufid == fl.UFID
	} else if !same {
		if f = c.exactLocked(&fl.Key, &m); f != nil {
			same = true
		}
	}
	if !same {
		return datapath.FlowStats{}, unix.ENOENT
	}
	old := f.stats
	f.actions = append(f.actions[:0], fl.Actions...)
	return old, nil
}

func (c *core) fillFlow(f *dpFlow, out *datapath.Flow, terse bool) {
	actions := out.Actions[:0]
	*out = datapath.Flow{UFID: f.ufid, Stats: f.stats, Terse: terse}
	if terse && !f.ufid.IsZero() {
		out.Actions = actions
		return
	}
	// As the kernel: a flow without UFID is named by its key as put; a
	// flow with one reports its key under its mask.
	if f.ufid.IsZero() {
		out.Key = f.key
	} else {
		out.Key = f.masked
	}
	if terse {
		out.Actions = actions
		return
	}
	out.Mask = f.mask
	out.Actions = append(actions, f.actions...)
}

// ---- packets

// receive runs a frame that arrived on port pt through the datapath.
func (c *core) receive(pt *port, frame []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.destroyed {
		return
	}
	pt.v.Stats.RxPackets++
	pt.v.Stats.RxBytes += uint64(len(frame))
	md := flow.Metadata{InPort: pt.v.PortNo}
	c.recircQ = c.recircQ[:0]
	c.runFlowLocked(frame, &md)
	for i := 0; i < len(c.recircQ) && i < maxRecirc; i++ {
		r := c.recircQ[i]
		c.runFlowLocked(r.pkt, &r.md)
	}
	c.recircQ = c.recircQ[:0]
}

// runFlowLocked looks a packet up and runs its flow's actions, or sends it
// up as a MISS. Recirculations the actions ask for are queued in recircQ
// for the caller.
func (c *core) runFlowLocked(frame []byte, md *flow.Metadata) {
	k := flow.Extract(frame, *md)
	f := c.lookupLocked(&k, true)
	if f == nil {
		c.stats.Missed++
		c.upcallLocked(datapath.UpcallMiss, &k, frame, nil, c.missHandlerLocked(&k, md.InPort))
		return
	}
	c.stats.Hit++
	f.stats.Packets++
	f.stats.Bytes += uint64(len(frame))
	f.stats.Used = c.now()
	if k.NwProto == flow.IPProtoTCP && (k.EthType == flow.EthTypeIPv4 || k.EthType == flow.EthTypeIPv6) {
		f.stats.TCPFlags |= k.TCPFlags
	}
	_ = c.runOneLocked(&k, frame, f.actions) // validated when put
}

// missHandlerLocked picks the handler of a miss: under per-CPU dispatch by
// flow hash standing in for the CPU; under per-vport dispatch among the
// port's PIDs by flow hash, as the kernel does.
func (c *core) missHandlerLocked(k *flow.Key, inPort uint32) *handler {
	if len(c.handlers) == 0 {
		return nil
	}
	if c.perCPU {
		if len(c.handlers) == 1 {
			return c.handlers[0] // no flow hash to take
		}
		return c.handlers[k.HashWide(0)%uint64(len(c.handlers))]
	}
	pt := c.ports[inPort]
	if pt == nil || len(pt.pids) == 0 {
		return nil
	}
	if len(pt.pids) == 1 {
		return c.handlerByPIDLocked(pt.pids[0])
	}
	return c.handlerByPIDLocked(pt.pids[k.HashWide(0)%uint64(len(pt.pids))])
}

// actionHandlerLocked picks the handler of a userspace action's upcall: the
// action's PID under per-vport dispatch; under per-CPU dispatch the kernel
// (6.1, output_userspace) ignores that PID and uses the CPU's handler.
func (c *core) actionHandlerLocked(k *flow.Key, pid uint32) *handler {
	if c.perCPU && len(c.handlers) > 0 {
		return c.handlers[k.HashWide(0)%uint64(len(c.handlers))]
	}
	return c.handlerByPIDLocked(pid)
}

func (c *core) handlerByPIDLocked(pid uint32) *handler {
	for _, h := range c.handlers {
		if h.pid == pid {
			return h
		}
	}
	return nil
}

// upcallLocked queues an upcall to h, counting it lost when h is nil or
// full.
func (c *core) upcallLocked(cmd datapath.UpcallCmd, k *flow.Key, frame, userdata []byte, h *handler) {
	if h == nil {
		c.stats.Lost++
		return
	}
	p := newPending(cmd, k, frame, userdata)
	if !h.enqueue(p) {
		p.release()
		c.stats.Lost++
	}
}

// ---- opening

func (c *core) open(cfg datapath.Config) *Datapath {
	d := &Datapath{c: c}
	for range cfg.HandlerCount() {
		d.handlers = append(d.handlers, newHandler(c))
	}
	c.mu.Lock()
	d.features = features(cfg)
	c.perCPU = d.features.PerCPUDispatch
	c.handlers = d.handlers
	for _, pt := range c.ports {
		pt.pids = d.portPIDs()
	}
	c.mu.Unlock()
	return d
}
