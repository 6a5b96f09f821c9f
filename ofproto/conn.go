package ofproto

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/ofproto/openflow"

	"github.com/govswitch/govswitch/internal/vlog"
)

// ConnKind says how a connection came to be, which decides what it is
// sent: controllers get asynchronous messages (packet-ins among them),
// service connections (the mgmt socket, ptcp listeners) get replies,
// port status and flow removed messages but never packet-ins, as in OVS.
type ConnKind uint8

const (
	// ConnController is an active connection to a configured controller.
	ConnController ConnKind = iota
	// ConnService is a connection accepted on a listener.
	ConnService
)

func (k ConnKind) String() string {
	if k == ConnService {
		return "service"
	}
	return "controller"
}

// Connection limits and defaults.
const (
	// connQueueLen bounds a connection's send queue, in messages. A reply
	// that finds it full closes the connection; a packet-in is dropped.
	connQueueLen = 512
	// connWriteTimeout is how long one write may block before the peer
	// is deemed dead.
	connWriteTimeout = 10 * time.Second
	// serviceProbe is the inactivity probe of service connections, OVS's
	// 60 s for the mgmt socket.
	serviceProbe = 60 * time.Second
	// helloTimeout bounds the version negotiation.
	helloTimeout = 10 * time.Second
	// DefaultMissSendLen is OFP_DEFAULT_MISS_SEND_LEN.
	DefaultMissSendLen = 128
)

// Conn is one OpenFlow connection of a ConnManager: a negotiated version,
// a reader goroutine that handles the peer's messages strictly in order,
// and a writer goroutine draining a bounded send queue. Its exported
// methods are safe for concurrent use.
type Conn struct {
	m      *ConnManager
	nc     net.Conn
	kind   ConnKind
	target string
	probe  time.Duration
	log    *slog.Logger

	version atomic.Uint32 // negotiated version; 0 until the hello exchange
	send    chan []byte
	closed  chan struct{}
	once    sync.Once
	done    chan struct{} // closed when both goroutines are gone

	lastRecv atomic.Int64 // unix nanos of the last message from the peer

	// Protocol state. The reader goroutine writes it; the dispatcher
	// reads it, so it sits behind mu (roles also change from other
	// connections' role requests).
	mu          sync.Mutex
	role        uint32 // openflow.RoleEqual/Master/Slave
	async       openflow.AsyncConfig
	missSendLen uint16
	nxmFlows    bool   // NXT_SET_FLOW_FORMAT NXM
	pinFormat   uint32 // NXT_SET_PACKET_IN_FORMAT (openflow.NXPacketIn*)
	ctrlID      uint16 // NXT_SET_CONTROLLER_ID
	tableIDExt  bool   // NXT_FLOW_MOD_TABLE_ID

	// Open bundles, under bmu: the reader goroutine changes them, the
	// timer discards idle ones.
	bmu         sync.Mutex
	bundles     map[uint32]*bundle
	bundleBytes int
	bundleTimer *time.Timer

	// Token bucket for packet-ins; only the dispatcher goroutine uses it.
	tokens   float64
	tokensAt time.Time

	// svcAsync is set on a service connection that asked for
	// asynchronous messages with a nonzero miss_send_len (see
	// packetin2.go), as ovs-ofctl monitor does.
	svcAsync atomic.Bool

	mon monitorState // flow monitors (monitor.go)

	rxMsgs, txMsgs   atomic.Uint64
	pinSent, pinDrop atomic.Uint64
}

// defaultAsync is OpenFlow 1.3's initial async configuration: master and
// equal controllers get packet-ins for table misses and actions, every
// port status and every flow removed; slaves get only port status.
var defaultAsync = openflow.AsyncConfig{
	PacketInMask:    [2]uint32{1<<openflow.PacketInNoMatch | 1<<openflow.PacketInAction, 0},
	PortStatusMask:  [2]uint32{7, 7},
	FlowRemovedMask: [2]uint32{0xf, 0},
	// 1.4: every role change, to masters and slaves alike.
	RoleStatusMask: [2]uint32{7, 7},
}

func newConn(m *ConnManager, nc net.Conn, kind ConnKind, target string) *Conn {
	probe := m.cfg.ProbeInterval
	if kind == ConnService {
		probe = serviceProbe
	}
	c := &Conn{m: m, nc: nc, kind: kind, target: target, probe: probe,
		log:  m.log.With(vlog.ModuleKey, "vconn", "conn", target, "kind", kind.String()),
		send: make(chan []byte, connQueueLen), closed: make(chan struct{}), done: make(chan struct{}),
		role: openflow.RoleEqual, async: defaultAsync, missSendLen: DefaultMissSendLen,
		tokens: float64(m.cfg.PacketInBurst)}
	c.lastRecv.Store(time.Now().UnixNano())
	return c
}

// Target names the connection's peer: the controller target, or the
// listener and remote address of a service connection.
func (c *Conn) Target() string { return c.target }

// Kind returns whether the connection is a controller or a service one.
func (c *Conn) Kind() ConnKind { return c.kind }

// Version returns the negotiated OpenFlow version, 0 before negotiation.
func (c *Conn) Version() uint8 { return uint8(c.version.Load()) }

// Role returns the controller role (openflow.RoleEqual, RoleMaster or
// RoleSlave).
func (c *Conn) Role() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.role
}

// Close closes the connection. It is idempotent.
func (c *Conn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.nc.Close()
	})
	return nil
}

// isClosed reports whether Close has been called.
func (c *Conn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// enqueue hands b to the writer. It never blocks: when the queue is full a
// reply (reply true) closes the connection, since the peer would miss an
// answer it waits for, and anything else is dropped. It reports whether b
// was queued; if not, b goes back to the buffer pool.
func (c *Conn) enqueue(b []byte, reply bool) bool {
	if c.isClosed() {
		c.m.putBuf(b)
		return false
	}
	select {
	case c.send <- b:
		return true
	default:
	}
	c.m.putBuf(b)
	if reply {
		c.log.Warn("send queue full; closing the connection", "queued", len(c.send))
		c.Close()
	}
	return false
}

// queueMsg encodes msg in a pooled buffer and queues it as a reply.
func (c *Conn) queueMsg(msg openflow.Msg) error {
	b, err := msg.Append(c.m.getBuf())
	if err != nil {
		c.m.putBuf(b)
		return fmt.Errorf("encode %T: %w", msg, err)
	}
	if !c.enqueue(b, true) {
		return errConnClosed
	}
	return nil
}

var errConnClosed = errors.New("connection closed")

// run drives the connection until it closes: hello exchange, then the
// reader loop on this goroutine and the writer on another. ready is
// called once the version is negotiated.
func (c *Conn) run(ready func(*Conn)) {
	defer close(c.done)
	defer c.dropBundles()
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		c.writeLoop()
	}()
	defer func() {
		c.Close()
		<-wdone
	}()
	ours := c.m.versions
	hello := &openflow.Hello{Envelope: openflow.Envelope{Version: highestVersion(ours)}, Versions: ours}
	if err := c.queueMsg(hello); err != nil {
		return
	}
	fr := openflow.NewFramer(c.m.cfg.MaxMessageLen)
	c.nc.SetReadDeadline(time.Now().Add(helloTimeout))
	raw, err := fr.ReadMsg(c.nc)
	if err != nil {
		c.log.Debug("no hello", "err", err)
		return
	}
	c.nc.SetReadDeadline(time.Time{})
	c.touch()
	m, err := openflow.Decode(raw)
	peer, ok := m.(*openflow.Hello)
	if err != nil || !ok {
		c.log.Warn("first message is not a hello; closing", "err", err)
		return
	}
	v, ok := openflow.Negotiate(ours, peer)
	if !ok {
		e := &openflow.Error{Version: min(peer.Version, highestVersion(ours)), Type: openflow.ErrTypeHelloFailed,
			Code: openflow.HelloFailedIncompatible}
		if !openflow.SupportedVersion(e.Version) {
			e.Version = openflow.Version10
		}
		em := e.Reply(raw)
		em.Data = []byte(fmt.Sprintf("we support versions bitmap %#x, peer %#x (version %d)", ours, peer.Versions, peer.Version))
		c.queueMsg(em)
		c.log.Warn("version negotiation failed: no common OpenFlow version", "ours", ours, "peer", peer.Versions, "peer_version", peer.Version)
		c.flushAndClose()
		return
	}
	c.version.Store(uint32(v))
	c.log.Debug("negotiated", "version", v)
	if ready != nil {
		ready(c)
	}
	for {
		raw, err := fr.ReadMsg(c.nc)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !c.isClosed() {
				c.log.Info("read failed; closing", "err", err)
			}
			return
		}
		c.touch()
		c.rxMsgs.Add(1)
		c.snoopCopy(raw)
		if err := c.handle(raw); err != nil {
			if !errors.Is(err, errConnClosed) {
				c.log.Warn("closing", "err", err)
			}
			return
		}
	}
}

// flushAndClose gives the writer a moment to send what is queued (a
// hello-failed error), then closes.
func (c *Conn) flushAndClose() {
	deadline := time.Now().Add(time.Second)
	for len(c.send) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	c.Close()
}

func (c *Conn) touch() { c.lastRecv.Store(time.Now().UnixNano()) }

// writeLoop writes queued messages and sends echo probes: after probe of
// silence from the peer it sends an echo request, and after two probes
// without any message back it closes the connection.
func (c *Conn) writeLoop() {
	tick := time.NewTicker(c.probe)
	defer tick.Stop()
	missed := 0
	lastSeen := c.lastRecv.Load()
	for {
		select {
		case <-c.closed:
			return
		case b := <-c.send:
			c.snoopCopy(b)
			c.nc.SetWriteDeadline(time.Now().Add(connWriteTimeout))
			_, err := c.nc.Write(b)
			c.m.putBuf(b)
			if err != nil {
				if !c.isClosed() {
					c.log.Info("write failed; closing", "err", err)
				}
				c.Close()
				return
			}
			c.txMsgs.Add(1)
			if len(c.send) == 0 && c.monitorsPaused() {
				c.monitorsMayResume()
			}
		case <-tick.C:
			v := c.Version()
			if v == 0 {
				continue
			}
			if seen := c.lastRecv.Load(); seen != lastSeen {
				lastSeen, missed = seen, 0
				if time.Since(time.Unix(0, seen)) < c.probe {
					continue
				}
			}
			if missed >= 2 {
				c.log.Info("no reply to two echo probes; closing", "probe", c.probe)
				c.Close()
				return
			}
			missed++
			b, err := (&openflow.EchoRequest{Envelope: openflow.Envelope{Version: v, Xid: c.m.nextXid()}}).Append(c.m.getBuf())
			if err == nil {
				c.enqueue(b, false)
			}
		}
	}
}

// highestVersion returns the highest version in a bitmap.
func highestVersion(bitmap uint32) uint8 {
	v := uint8(0)
	for i := uint8(0); i < 32; i++ {
		if bitmap&(1<<i) != 0 {
			v = i
		}
	}
	return v
}

// allowPacketIn takes a token from the connection's packet-in bucket.
// Only the dispatcher goroutine calls it.
func (c *Conn) allowPacketIn(now time.Time, rate, burst int) bool {
	if rate <= 0 {
		return true
	}
	if !c.tokensAt.IsZero() {
		c.tokens += now.Sub(c.tokensAt).Seconds() * float64(rate)
		if c.tokens > float64(burst) {
			c.tokens = float64(burst)
		}
	}
	c.tokensAt = now
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	return true
}

// wants reports whether the connection receives an asynchronous message
// of kind (asyncPacketIn, asyncPortStatus, asyncFlowRemoved) with reason.
func (c *Conn) wants(kind asyncKind, reason uint8) bool {
	if c.Version() == 0 || c.isClosed() {
		return false
	}
	if kind == asyncPacketIn && c.kind != ConnController && !c.svcAsync.Load() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i := 0
	if c.role == openflow.RoleSlave {
		i = 1
	}
	var mask uint32
	switch kind {
	case asyncPacketIn:
		mask = c.async.PacketInMask[i]
	case asyncPortStatus:
		mask = c.async.PortStatusMask[i]
	case asyncFlowRemoved:
		mask = c.async.FlowRemovedMask[i]
	}
	return reason < 32 && mask&(1<<reason) != 0
}
