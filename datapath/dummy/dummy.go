// Package dummy is an in-memory datapath with the kernel datapath's
// semantics: megaflows (key under mask) looked up in mask order, MISS
// upcalls to handler queues, actions executed on packet bytes, counters,
// UFIDs, dumps, and the kernel's errors (EEXIST, ENOENT, ...). It lets the
// switch above it be tested in milliseconds, without root.
//
// Ports attach to in-memory network devices (Netdev): a test sends a frame
// into the datapath with Netdev.Send and captures what the datapath output
// on a port with Netdev.Recv. A Provider is one "host": its datapaths and
// netdevs share a namespace of device names, as in the kernel.
//
// Differences from the kernel, by design: upcall PIDs are numbers this
// package invents (not netlink ports); the "CPU" that picks a handler under
// per-CPU dispatch is the flow hash; actions the dummy cannot execute
// (conntrack, MPLS, meters, NSH, sets of fields other than Ethernet, SKB
// priority and mark) make a put or execute fail with an error wrapping
// datapath.ErrNotSupported.
package dummy

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"golang.org/x/sys/unix"
)

// Provider holds the datapaths and netdevs of one in-memory host. Its
// methods are safe for concurrent use. The zero Provider is not usable;
// call New.
type Provider struct {
	mu     sync.Mutex
	dps    map[string]*core
	devs   map[string]*Netdev
	nextIx int
}

// New returns an empty host.
func New() *Provider {
	return &Provider{dps: map[string]*core{}, devs: map[string]*Netdev{}, nextIx: 100}
}

var _ datapath.Provider = (*Provider)(nil)

// NetdevQueueLen is how many frames a Netdev holds for Recv; further
// frames output to it are dropped and counted in the port's TxDropped.
const NetdevQueueLen = 1024

// Netdev is an in-memory network device: the wire end of a port. Frames a
// datapath outputs on the port queue here for Recv; frames given to Send
// arrive at the datapath on the port. Safe for concurrent use.
type Netdev struct {
	name string
	p    *Provider
	rx   chan []byte
	// port is the datapath port the device is attached to; guarded by
	// p.mu for attach/detach, read under the datapath's lock.
	port atomic.Pointer[port]
}

// AddNetdev creates a network device called name, as `ip link add` would;
// EEXIST if the name is taken.
func (p *Provider) AddNetdev(name string) (*Netdev, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.devs[name]; ok {
		return nil, datapath.WrapError("add netdev", name, unix.EEXIST)
	}
	return p.addNetdevLocked(name), nil
}

func (p *Provider) addNetdevLocked(name string) *Netdev {
	d := &Netdev{name: name, p: p, rx: make(chan []byte, NetdevQueueLen)}
	p.devs[name] = d
	return d
}

// Netdev returns the device called name, nil if none. Internal ports have
// a device of their name, as in the kernel.
func (p *Provider) Netdev(name string) *Netdev {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.devs[name]
}

// Name returns the device's name.
func (n *Netdev) Name() string { return n.name }

// Send delivers frame to the datapath port the device is attached to, and
// runs the datapath on it before returning (flow lookup, actions, upcall
// queuing). A device attached to no datapath drops the frame (ENETDOWN).
// The frame is not retained.
func (n *Netdev) Send(frame []byte) error {
	pt := n.port.Load()
	if pt == nil {
		return datapath.WrapError("send", n.name, unix.ENETDOWN)
	}
	pt.dp.receive(pt, frame)
	return nil
}

// Recv returns the next frame the datapath output on the device, waiting
// up to timeout; os.ErrDeadlineExceeded when none came. The frame is the
// caller's.
func (n *Netdev) Recv(timeout time.Duration) ([]byte, error) {
	select {
	case f := <-n.rx:
		return f, nil
	default:
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case f := <-n.rx:
		return f, nil
	case <-t.C:
		return nil, datapath.WrapError("recv", n.name, os.ErrDeadlineExceeded)
	}
}

// Create makes a datapath with its internal port 0 named name.
func (p *Provider) Create(name string, cfg datapath.Config) (datapath.Datapath, error) {
	p.mu.Lock()
	if _, ok := p.dps[name]; ok {
		p.mu.Unlock()
		return nil, datapath.WrapError("create", name, unix.EEXIST)
	}
	if _, ok := p.devs[name]; ok {
		p.mu.Unlock()
		return nil, datapath.WrapError("create", name, unix.EEXIST)
	}
	if len(name) == 0 || len(name) > 15 {
		p.mu.Unlock()
		return nil, datapath.WrapError("create", name, unix.EINVAL)
	}
	p.nextIx++
	c := newCore(p, name, p.nextIx)
	p.dps[name] = c
	p.mu.Unlock()
	if _, err := c.addVport(datapath.VportSpec{Name: name, Type: datapath.VportInternal}, nil); err != nil {
		return nil, datapath.WrapError("create", name, err)
	}
	return c.open(cfg), nil
}

// Open attaches to an existing datapath, taking over its upcalls.
func (p *Provider) Open(name string, cfg datapath.Config) (datapath.Datapath, error) {
	p.mu.Lock()
	c, ok := p.dps[name]
	p.mu.Unlock()
	if !ok {
		return nil, datapath.WrapError("open", name, unix.ENOENT)
	}
	return c.open(cfg), nil
}

// Delete destroys a datapath: its ports are removed (internal ports' devices
// with them) and its flows freed.
func (p *Provider) Delete(name string) error {
	p.mu.Lock()
	c, ok := p.dps[name]
	if ok {
		delete(p.dps, name)
	}
	p.mu.Unlock()
	if !ok {
		return datapath.WrapError("delete", name, unix.ENOENT)
	}
	c.destroy()
	return nil
}

// pids are the invented upcall PIDs: unique per handler in the process.
var nextPID atomic.Uint32

func init() { nextPID.Store(1 << 20) }

// Features are what every dummy datapath negotiates.
func features(cfg datapath.Config) datapath.Features {
	f := datapath.Features{
		Raw:            datapath.DPFeatureUnaligned | datapath.DPFeatureVportPIDs,
		PerCPUDispatch: !cfg.NoPerCPU,
		UFID:           true,
		CtZone:         true,
		MaxVLANHeaders: 2, // what it matches, as Linux 4.10+ does
	}
	if f.PerCPUDispatch {
		f.Raw |= datapath.DPFeaturePerCPUDispatch
	}
	return f
}

func portName(dp string, no uint32) string { return fmt.Sprintf("%s port %d", dp, no) }

func flowName(ufid datapath.UFID, k *flow.Key) string {
	if !ufid.IsZero() || k == nil {
		return ufid.String()
	}
	exact := flow.ExactMask()
	return flow.Format(k, &exact)
}
