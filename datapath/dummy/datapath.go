package dummy

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"golang.org/x/sys/unix"
)

// Datapath is an open dummy datapath: the datapath.Datapath of this
// package. Methods are safe for concurrent use.
type Datapath struct {
	c        *core
	handlers []*handler
	features datapath.Features
	once     sync.Once
	hsOnce   sync.Once
	hs       []datapath.Handler
	// nextPID picks the one handler of each new port under per-vport
	// dispatch, round robin, as the kernel datapath does.
	nextPID atomic.Uint32
}

var _ datapath.Datapath = (*Datapath)(nil)

// portPIDs returns the upcall PIDs of a new port: one handler's.
func (d *Datapath) portPIDs() []uint32 {
	i := int(d.nextPID.Add(1)-1) % len(d.handlers)
	return []uint32{d.handlers[i].pid}
}

// Name returns the datapath's name.
func (d *Datapath) Name() string { return d.c.name }

// Index returns the datapath's invented ifindex.
func (d *Datapath) Index() int { return d.c.index }

// Features returns the negotiated features.
func (d *Datapath) Features() datapath.Features { return d.features }

// Stats returns the datapath's counters.
func (d *Datapath) Stats() (datapath.Stats, error) {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.destroyed {
		return datapath.Stats{}, datapath.WrapError("stats", c.name, unix.ENODEV)
	}
	s := c.stats
	s.Flows = uint64(len(c.flows))
	s.Masks = uint32(len(c.masks))
	return s, nil
}

// AddVport adds a port. A netdev port needs a Netdev of its name
// (Provider.AddNetdev), ENODEV otherwise; an internal port creates one.
func (d *Datapath) AddVport(spec datapath.VportSpec) (datapath.Vport, error) {
	v, err := d.c.addVport(spec, d.portPIDs())
	return v, datapath.WrapError("add vport", spec.Name, err)
}

// DeleteVport removes a port.
func (d *Datapath) DeleteVport(no uint32) error {
	return datapath.WrapError("delete vport", portName(d.c.name, no), d.c.deleteVport(no))
}

// Vport returns the port called name.
func (d *Datapath) Vport(name string) (datapath.Vport, error) {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, pt := range c.ports {
		if pt.v.Name == name {
			return c.vportLocked(pt), nil
		}
	}
	return datapath.Vport{}, datapath.WrapError("get vport", name, unix.ENODEV)
}

// Vports returns every port, in port number order.
func (d *Datapath) Vports() ([]datapath.Vport, error) {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]datapath.Vport, 0, len(c.ports))
	for _, pt := range c.ports {
		out = append(out, c.vportLocked(pt))
	}
	slices.SortFunc(out, func(a, b datapath.Vport) int { return int(a.PortNo) - int(b.PortNo) })
	return out, nil
}

// WatchVports calls fn, from a goroutine per event, for port changes.
func (d *Datapath) WatchVports(fn func(datapath.VportEvent)) (func(), error) {
	c := d.c
	c.mu.Lock()
	id := c.nextWatch
	c.nextWatch++
	c.watchers[id] = fn
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.watchers, id)
		c.mu.Unlock()
	}, nil
}

// PutFlow installs or modifies a flow.
func (d *Datapath) PutFlow(f *datapath.Flow, flags datapath.PutFlags) error {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.putLocked(f, flags); err != nil {
		return datapath.WrapError("put flow", flowName(f.UFID, &f.Key), err)
	}
	return nil
}

// GetFlow reads a flow.
func (d *Datapath) GetFlow(ufid datapath.UFID, k *flow.Key, f *datapath.Flow) error {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	fl := c.findLocked(ufid, k)
	if fl == nil {
		return datapath.WrapError("get flow", flowName(ufid, k), unix.ENOENT)
	}
	c.fillFlow(fl, f, false)
	return nil
}

// DeleteFlow deletes a flow and returns its stats.
func (d *Datapath) DeleteFlow(ufid datapath.UFID, k *flow.Key) (datapath.FlowStats, error) {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	st, err := c.deleteLocked(ufid, k)
	if err != nil {
		return st, datapath.WrapError("delete flow", flowName(ufid, k), err)
	}
	return st, nil
}

func (c *core) deleteLocked(ufid datapath.UFID, k *flow.Key) (datapath.FlowStats, error) {
	fl := c.findLocked(ufid, k)
	if fl == nil {
		return datapath.FlowStats{}, unix.ENOENT
	}
	c.removeLocked(fl)
	return fl.stats, nil
}

// DumpFlows calls fn for every flow, in insertion order. fn runs without
// the datapath's lock, so it may change the datapath.
func (d *Datapath) DumpFlows(terse bool, fn func(f *datapath.Flow) error) error {
	c := d.c
	c.mu.Lock()
	snap := make([]datapath.Flow, len(c.flows))
	// The flows' actions are copied into one block, not one each: a dump
	// of 100k flows must not make 100k pieces of garbage.
	n := 0
	for _, fl := range c.flows {
		n += len(fl.actions)
	}
	arena := make([]byte, n)
	off := 0
	for i, fl := range c.flows {
		// fillFlow appends the actions to this room, in place.
		snap[i].Actions = arena[off : off : off+len(fl.actions)]
		off += len(fl.actions)
		c.fillFlow(fl, &snap[i], terse)
	}
	c.mu.Unlock()
	var f datapath.Flow
	for i := range snap {
		actions := f.Actions[:0]
		f = snap[i]
		f.Actions = append(actions, snap[i].Actions...)
		if err := fn(&f); err != nil {
			return datapath.WrapError("dump flows", c.name, err)
		}
	}
	return nil
}

// FlushFlows deletes every flow.
func (d *Datapath) FlushFlows() error {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flows, c.masks = nil, nil
	clear(c.byUFID)
	return nil
}

// Execute runs actions on packet with md's metadata.
func (d *Datapath) Execute(packet []byte, md *flow.Key, actions []byte) error {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return datapath.WrapError("execute", c.name, c.executeLocked(packet, md, actions))
}

func (c *core) executeLocked(packet []byte, md *flow.Key, actions []byte) error {
	if len(packet) < 14 {
		return unix.EINVAL
	}
	if err := validateActions(actions, 0); err != nil {
		return err
	}
	key := flow.Extract(packet, metadataOf(md))
	if err := c.runLocked(&key, packet, actions); err != nil {
		return fmt.Errorf("%w: %w", unix.EINVAL, err)
	}
	return nil
}

// Operate runs ops in order; ops[i].Err is the bare unix.Errno (or an
// ErrNotSupported error) as with the kernel datapath.
func (d *Datapath) Operate(ops []datapath.Op) error {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range ops {
		op := &ops[i]
		op.Err, op.Stats = nil, datapath.FlowStats{}
		var err error
		var st datapath.FlowStats
		switch op.Kind {
		case datapath.OpPut:
			st, err = c.putLocked(&op.Flow, op.Flags)
		case datapath.OpDelete:
			st, err = c.deleteLocked(op.Flow.UFID, &op.Flow.Key)
		case datapath.OpExecute:
			err = c.executeLocked(op.Packet, &op.Flow.Key, op.Flow.Actions)
		default:
			err = unix.EINVAL
		}
		op.Err = err
		if err == nil && op.WantStats {
			op.Stats = st
		}
	}
	return nil
}

// Handlers returns the upcall handlers. The slice is the datapath's own,
// made once: callers poll it (Udpif.Stats sums their losses).
func (d *Datapath) Handlers() []datapath.Handler {
	d.hsOnce.Do(func() {
		d.hs = make([]datapath.Handler, len(d.handlers))
		for i, h := range d.handlers {
			d.hs[i] = h
		}
	})
	return d.hs
}

// Close closes the handlers; upcalls that would go to them are lost until
// the datapath is opened again.
func (d *Datapath) Close() error {
	d.once.Do(func() {
		c := d.c
		c.mu.Lock()
		if len(c.handlers) > 0 && len(d.handlers) > 0 && c.handlers[0] == d.handlers[0] {
			c.handlers = nil
		}
		c.mu.Unlock()
		for _, h := range d.handlers {
			h.close()
		}
	})
	return nil
}
