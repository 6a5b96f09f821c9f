package ofproto

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Connection manager defaults, as OVS's.
const (
	DefaultRundir        = "/var/run/openvswitch"
	DefaultControllerTCP = 6653
	DefaultProbeInterval = 5 * time.Second
	DefaultMaxBackoff    = 8 * time.Second
	DefaultPacketInRate  = 1000 // per second per controller (controller_rate_limit)
	DefaultPacketInBurst = 100  // (controller_burst_limit)
	DefaultMaxConns      = 64
	// FailOpenPriority is the priority of the fail-open flow, above every
	// OpenFlow priority (which are 16-bit), as OVS's 0xf0f0f0.
	FailOpenPriority = 0xf0f0f0
	// minBackoff is the first reconnect delay; it doubles to MaxBackoff.
	minBackoff = time.Second
	// asyncQueueLen bounds the events (packet-ins, port status, flow
	// removed) waiting for the dispatcher; beyond it they are dropped.
	asyncQueueLen = 1024
	bufPoolLen    = 256
)

// ConnConfig configures a ConnManager. Zero fields take the defaults above.
type ConnConfig struct {
	// Rundir holds the bridge's mgmt socket, <Rundir>/<bridge>.mgmt
	// (mode 0600). "" means DefaultRundir. NoMgmt leaves the socket out.
	Rundir string
	NoMgmt bool
	// Listeners are extra passive targets: "ptcp:[PORT][:IP]" or
	// "pssl:[PORT][:IP]" (port default 6653, all addresses by default) or
	// "punix:PATH".
	Listeners []string
	// Controllers are active targets: "tcp:IP[:PORT]" or "ssl:IP[:PORT]"
	// (port default 6653) or "unix:PATH".
	Controllers []string
	// SSLPrivateKey, SSLCertificate and SSLCACert are PEM files (OVS's
	// -p, -c and -C) for ssl: and pssl: targets, which need all three;
	// both ends must present a certificate chaining to the CA (see
	// conn_tls.go). They are read once, by NewConnManager.
	SSLPrivateKey, SSLCertificate, SSLCACert string
	// Protocols are the OpenFlow versions offered (openflow.Version10 to
	// Version15); nil means all six, as ovs-vswitchd offers them.
	Protocols []uint8
	// ProbeInterval is the inactivity probe of controller connections:
	// after this much silence an echo request goes out, and two
	// unanswered probes close the connection. It also sets fail-open's
	// delay (3×). 0 means DefaultProbeInterval.
	ProbeInterval time.Duration
	// MaxBackoff caps the reconnect delay to controllers (1 s doubling).
	MaxBackoff time.Duration
	// PacketInRate and PacketInBurst are each controller connection's
	// packet-in token bucket; a negative rate disables the limit.
	PacketInRate, PacketInBurst int
	// MaxConns bounds service connections accepted at once; more are
	// closed on accept.
	MaxConns int
	// MaxMessageLen bounds an incoming message (openflow.Framer); 0 is
	// 64 KiB.
	MaxMessageLen int
	// Logger receives connection events; nil means slog.Default().
	Logger *slog.Logger
}

// ConnManager runs the OpenFlow side of one Bridge: its listeners, its
// connections to controllers, the handling of every connection's messages,
// and the asynchronous messages (packet-ins, port status, flow removed)
// the bridge produces. Its methods are safe for concurrent use.
//
// Goroutines: one per listener (accept), one per configured controller
// (dial, run the session, back off 1 s doubling to MaxBackoff), a reader
// and a writer per connection, one dispatcher for asynchronous messages,
// and one fail-open watcher. The bridge's hooks only queue to the
// dispatcher (never blocking, dropping and counting when full); the
// dispatcher encodes for each connection and queues without blocking, so
// a peer that stops reading loses its own packet-ins and nothing else.
//
// Fail-open (fail-mode standalone with controllers configured): once no
// controller has been connected for 3×ProbeInterval, a catch-all NORMAL
// rule goes into table 0's classifier at FailOpenPriority, above every
// OpenFlow priority, as OVS's hidden 0xf0f0f0 flow; it leaves when a
// controller connects. It is no OpenFlow flow: flow, aggregate and table
// stats leave it out, flow mods cannot touch it, it is not counted in the
// flow limit.
//
// Table misses go to the controllers (Xlator.MissToController) exactly
// while at least one controller connection is up; only OpenFlow 1.0
// controllers get them, as a 1.3 switch drops a miss that no table-miss
// flow entry catches.
type ConnManager struct {
	b        *Bridge
	cfg      ConnConfig
	log      *slog.Logger
	versions uint32 // offered version bitmap

	mu        sync.Mutex
	conns     map[*Conn]struct{}
	listeners []net.Listener
	ctrls     []*controllerState
	started   bool
	closed    bool
	genID     uint64 // last master/slave generation id
	genSet    bool

	// snapshot of conns for the dispatcher, replaced on every change.
	connList atomic.Pointer[[]*Conn]
	nCtrl    atomic.Int32 // controller connections past hello
	// nSvcAsync counts service connections that take packet-ins.
	nSvcAsync atomic.Int32

	events chan asyncEvent
	free   chan []byte
	tls    *tlsConfigs // nil without ssl:/pssl: targets
	xid    atomic.Uint32
	stop   chan struct{}
	wg     sync.WaitGroup

	failMu   sync.Mutex
	failRule *Rule // the fail-open rule while installed
	lastCtrl atomic.Int64

	pinMsg openflow.PacketIn // the dispatcher's packet-in scratch

	bundleBytes atomic.Int64 // held by all connections' open bundles (see bundle.go)

	contUUID [16]byte   // the bridge in continuations (continuation.go)
	snoop    snoopState // the snoop socket (snoop.go)

	asyncDropped atomic.Uint64 // events dropped on a full dispatcher queue
	pinNoCtrl    atomic.Uint64 // packet-ins with no controller to take them
	started0     time.Time
}

type controllerState struct {
	target  string
	mu      sync.Mutex
	conn    *Conn
	backoff time.Duration
	lastErr string
	since   time.Time
}

type asyncKind uint8

const (
	asyncPacketIn asyncKind = iota + 1
	asyncPortStatus
	asyncFlowRemoved
)

type asyncEvent struct {
	kind asyncKind
	pin  PacketIn
	port PortEvent
	rem  Removed
	// explicitMiss marks a packet-in from a table-miss flow entry's
	// CONTROLLER action; the dispatcher sets it.
	explicitMiss bool
}

// NewConnManager returns the connection manager of b. It hooks itself into
// the bridge (Udpif.PacketIn, OnPortEvent, Tables.OnRemoved), so call it
// before Bridge.Start; Start opens the listeners and dials controllers.
func NewConnManager(b *Bridge, cfg ConnConfig) (*ConnManager, error) {
	if cfg.Rundir == "" {
		cfg.Rundir = DefaultRundir
	}
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = DefaultProbeInterval
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.MaxBackoff < minBackoff {
		cfg.MaxBackoff = minBackoff
	}
	if cfg.PacketInRate == 0 {
		cfg.PacketInRate = DefaultPacketInRate
	}
	if cfg.PacketInBurst <= 0 {
		cfg.PacketInBurst = DefaultPacketInBurst
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &ConnManager{b: b, cfg: cfg, log: cfg.Logger.With("bridge", b.Name),
		conns: map[*Conn]struct{}{}, events: make(chan asyncEvent, asyncQueueLen),
		free: make(chan []byte, bufPoolLen), stop: make(chan struct{}), contUUID: newBridgeUUID()}
	if cfg.Protocols == nil {
		m.versions = openflow.VersionBitmap(openflow.Version10, openflow.Version11, openflow.Version12,
			openflow.Version13, openflow.Version14, openflow.Version15)
	}
	for _, v := range cfg.Protocols {
		if !openflow.SupportedVersion(v) {
			return nil, fmt.Errorf("bridge %s: OpenFlow version 0x%02x is not supported (1.0 to 1.5 are)", b.Name, v)
		}
		m.versions |= openflow.VersionBitmap(v)
	}
	if m.versions == 0 {
		return nil, fmt.Errorf("bridge %s: no OpenFlow version allowed", b.Name)
	}
	for _, t := range cfg.Controllers {
		if _, _, err := parseActive(t); err != nil {
			return nil, fmt.Errorf("bridge %s: %w", b.Name, err)
		}
		m.ctrls = append(m.ctrls, &controllerState{target: t, backoff: minBackoff})
	}
	for _, t := range cfg.Listeners {
		if _, _, err := parsePassive(t); err != nil {
			return nil, fmt.Errorf("bridge %s: %w", b.Name, err)
		}
	}
	if anyTLSTarget(cfg.Controllers, cfg.Listeners) {
		tc, err := loadTLS(cfg.SSLPrivateKey, cfg.SSLCertificate, cfg.SSLCACert)
		if err != nil {
			return nil, fmt.Errorf("bridge %s: %w", b.Name, err)
		}
		m.tls = tc
	}
	empty := []*Conn{}
	m.connList.Store(&empty)
	b.SetPacketIn(m.packetIn)
	b.OnPortEvent = m.portEvent
	b.Tables.OnRemoved = m.flowRemoved
	b.Tables.OnChange = m.flowChanged
	return m, nil
}

// MgmtPath returns the path of the bridge's mgmt socket.
func (m *ConnManager) MgmtPath() string {
	return filepath.Join(m.cfg.Rundir, m.b.Name+".mgmt")
}

// ListenerAddrs returns the addresses the manager listens on, the mgmt
// socket first; empty before Start. A "ptcp:0" listener shows the port
// the kernel chose.
func (m *ConnManager) ListenerAddrs() []net.Addr {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]net.Addr, len(m.listeners))
	for i, ln := range m.listeners {
		out[i] = ln.Addr()
	}
	return out
}

// parseActive splits "tcp:IP[:PORT]", "ssl:IP[:PORT]" or "unix:PATH" into
// a network and address for net.Dial.
func parseActive(t string) (network, addr string, err error) {
	kind, rest, _ := strings.Cut(t, ":")
	switch kind {
	case "tcp", "ssl":
		host, port := rest, strconv.Itoa(DefaultControllerTCP)
		if h, p, err := net.SplitHostPort(rest); err == nil {
			host, port = h, p
		} else if strings.Count(rest, ":") == 1 {
			host, port, _ = strings.Cut(rest, ":")
		}
		if net.ParseIP(host) == nil {
			return "", "", fmt.Errorf("controller %q: want %s:IP[:PORT]", t, kind)
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return "", "", fmt.Errorf("controller %q: bad port %q", t, port)
		}
		return "tcp", net.JoinHostPort(host, port), nil
	case "unix":
		if rest == "" {
			return "", "", fmt.Errorf("controller %q: want unix:PATH", t)
		}
		return "unix", rest, nil
	}
	return "", "", fmt.Errorf("controller %q: want tcp:IP[:PORT], ssl:IP[:PORT] or unix:PATH", t)
}

// parsePassive splits "ptcp:[PORT][:IP]", "pssl:[PORT][:IP]" or
// "punix:PATH".
func parsePassive(t string) (network, addr string, err error) {
	kind, rest, _ := strings.Cut(t, ":")
	switch kind {
	case "ptcp", "pssl":
		port, ip, _ := strings.Cut(rest, ":")
		if port == "" {
			port = strconv.Itoa(DefaultControllerTCP)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return "", "", fmt.Errorf("listener %q: bad port %q", t, port)
		}
		if ip != "" && net.ParseIP(strings.Trim(ip, "[]")) == nil {
			return "", "", fmt.Errorf("listener %q: bad address %q", t, ip)
		}
		return "tcp", net.JoinHostPort(strings.Trim(ip, "[]"), port), nil
	case "punix":
		if rest == "" {
			return "", "", fmt.Errorf("listener %q: want punix:PATH", t)
		}
		return "unix", rest, nil
	}
	return "", "", fmt.Errorf("listener %q: want ptcp:[PORT][:IP], pssl:[PORT][:IP] or punix:PATH", t)
}

// Start opens the mgmt socket and the listeners and starts dialling the
// controllers. An error leaves nothing open.
func (m *ConnManager) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.closed {
		return errors.New("connection manager already started")
	}
	var lns []net.Listener
	fail := func(err error) error {
		for _, ln := range lns {
			ln.Close()
		}
		return err
	}
	if !m.cfg.NoMgmt {
		ln, err := listenUnix(m.MgmtPath())
		if err != nil {
			return fail(fmt.Errorf("bridge %s: mgmt socket: %w", m.b.Name, err))
		}
		lns = append(lns, ln)
	}
	for _, t := range m.cfg.Listeners {
		network, addr, _ := parsePassive(t)
		var ln net.Listener
		var err error
		if network == "unix" {
			ln, err = listenUnix(addr)
		} else {
			ln, err = net.Listen(network, addr)
		}
		if err != nil {
			return fail(fmt.Errorf("bridge %s: listener %s: %w", m.b.Name, t, err))
		}
		if isTLSTarget(t) {
			ln = m.tls.listener(ln)
		}
		lns = append(lns, ln)
	}
	if !m.cfg.NoMgmt {
		if err := m.startSnoop(); err != nil {
			return fail(fmt.Errorf("bridge %s: snoop socket: %w", m.b.Name, err))
		}
	}
	m.listeners = lns
	m.started = true
	m.started0 = time.Now()
	m.lastCtrl.Store(time.Now().UnixNano())
	for _, ln := range lns {
		m.wg.Add(1)
		go m.acceptLoop(ln)
	}
	for _, cs := range m.ctrls {
		m.wg.Add(1)
		go m.controllerLoop(cs)
	}
	m.wg.Add(2)
	go m.dispatchLoop()
	go m.failLoop()
	return nil
}

// listenUnix listens on a unix socket at path, replacing a stale socket
// file, with mode 0600 (owner only: the mgmt socket is root's).
func listenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		os.Remove(path)
	}
	// Connecting needs write permission on the socket; the usual umask
	// already leaves that to the owner, and the chmod makes it explicit.
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// Close closes the listeners and every connection, removes the mgmt
// socket and any fail-open flow, and waits for the goroutines.
func (m *ConnManager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.stop)
	for _, ln := range m.listeners {
		ln.Close()
	}
	m.closeSnoop()
	conns := make([]*Conn, 0, len(m.conns))
	for c := range m.conns {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	m.wg.Wait()
	m.setFailOpen(false)
	if !m.cfg.NoMgmt && m.started {
		os.Remove(m.MgmtPath())
	}
	return nil
}

func (m *ConnManager) acceptLoop(ln net.Listener) {
	defer m.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-m.stop:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			m.log.Warn("accept failed; listener stops", "listener", ln.Addr().String(), "err", err)
			return
		}
		target := ln.Addr().Network() + ":" + ln.Addr().String()
		if ra := nc.RemoteAddr(); ra != nil && ra.String() != "" && ra.String() != "@" {
			target += " from " + ra.String()
		}
		if m.serveConn(nc, ConnService, target) == nil {
			m.log.Warn("too many connections; refusing one", "max", m.cfg.MaxConns)
			nc.Close()
		}
	}
}

// serveConn runs an OpenFlow session over nc on a goroutine of its own and
// returns its Conn, or nil (nc untouched) when the manager is closed or a
// service connection would exceed MaxConns.
func (m *ConnManager) serveConn(nc net.Conn, kind ConnKind, target string) *Conn {
	c := newConn(m, nc, kind, target)
	if !m.add(c) {
		return nil
	}
	var ready func(*Conn)
	if kind == ConnController {
		ready = m.controllerReady
	}
	go func() {
		defer m.wg.Done()
		c.run(ready)
		m.remove(c)
	}()
	return c
}

// add registers c; false when the manager is closed or, for a service
// connection, full.
func (m *ConnManager) add(c *Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	if c.kind == ConnService {
		n := 0
		for o := range m.conns {
			if o.kind == ConnService {
				n++
			}
		}
		if n >= m.cfg.MaxConns {
			return false
		}
	}
	m.conns[c] = struct{}{}
	m.publishLocked()
	// Counted under mu, so Close cannot miss a session that is starting;
	// whoever runs the session calls wg.Done.
	m.wg.Add(1)
	return true
}

func (m *ConnManager) remove(c *Conn) {
	m.mu.Lock()
	delete(m.conns, c)
	m.publishLocked()
	m.mu.Unlock()
	if c.svcAsync.Swap(false) {
		m.nSvcAsync.Add(-1)
	}
	if c.kind == ConnController && c.Version() != 0 {
		if m.nCtrl.Add(-1) == 0 {
			m.controllersChanged(false)
		}
	}
}

func (m *ConnManager) publishLocked() {
	l := make([]*Conn, 0, len(m.conns))
	for c := range m.conns {
		l = append(l, c)
	}
	m.connList.Store(&l)
}

// controllerReady runs when a controller connection has negotiated.
func (m *ConnManager) controllerReady(c *Conn) {
	m.lastCtrl.Store(time.Now().UnixNano())
	if m.nCtrl.Add(1) == 1 {
		m.controllersChanged(true)
	}
}

// controllersChanged runs when the first controller connects or the last
// one goes: table misses go to the controller only while one is there,
// and fail-open ends as soon as one is back. The datapath's flows are
// flushed so that misses cached under the old behaviour are translated
// again.
func (m *ConnManager) controllersChanged(connected bool) {
	m.b.X.MissToController.Store(connected)
	if connected {
		m.setFailOpen(false)
	}
	m.invalidate()
}

func (m *ConnManager) controllerLoop(cs *controllerState) {
	defer m.wg.Done()
	network, addr, _ := parseActive(cs.target)
	d := m.dialer(cs.target, &net.Dialer{Timeout: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-m.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		nc, err := d.DialContext(ctx, network, addr)
		if err == nil {
			c := newConn(m, nc, ConnController, cs.target)
			if !m.add(c) {
				nc.Close()
				return
			}
			cs.mu.Lock()
			cs.conn, cs.lastErr, cs.since = c, "", time.Now()
			cs.mu.Unlock()
			m.log.Info("connected to controller", "target", cs.target)
			c.run(m.controllerReady)
			m.remove(c)
			m.wg.Done()
			cs.mu.Lock()
			cs.conn, cs.since = nil, time.Now()
			// A session that got as far as negotiating resets the backoff.
			if c.Version() != 0 {
				cs.backoff = minBackoff
			}
			cs.mu.Unlock()
			m.log.Info("controller connection closed", "target", cs.target)
		} else {
			cs.mu.Lock()
			cs.lastErr = err.Error()
			cs.mu.Unlock()
		}
		cs.mu.Lock()
		wait := cs.backoff
		cs.backoff = min(cs.backoff*2, m.cfg.MaxBackoff)
		cs.mu.Unlock()
		select {
		case <-m.stop:
			return
		case <-time.After(wait):
		}
	}
}

// failLoop watches for controllers being away long enough to fail open.
func (m *ConnManager) failLoop() {
	defer m.wg.Done()
	if len(m.ctrls) == 0 || m.b.Config.FailMode != FailStandalone {
		<-m.stop
		return
	}
	tick := time.NewTicker(m.cfg.ProbeInterval / 4)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case now := <-tick.C:
			m.checkFailOpen(now)
		}
	}
}

// checkFailOpen installs the fail-open flow once no controller has been
// connected for 3× the probe interval.
func (m *ConnManager) checkFailOpen(now time.Time) {
	if m.nCtrl.Load() > 0 {
		m.lastCtrl.Store(now.UnixNano())
		return
	}
	if now.Sub(time.Unix(0, m.lastCtrl.Load())) >= 3*m.cfg.ProbeInterval {
		m.setFailOpen(true)
	}
}

// FailOpen reports whether the fail-open flow is installed.
func (m *ConnManager) FailOpen() bool {
	m.failMu.Lock()
	defer m.failMu.Unlock()
	return m.failRule != nil && m.b.Tables.Table(0).Snapshot().Find(&m.failRule.Match, FailOpenPriority) == m.failRule
}

// setFailOpen installs or removes the fail-open flow: a catch-all NORMAL
// rule in table 0 at FailOpenPriority, above every OpenFlow priority, put
// straight into the classifier so it is no OpenFlow flow. Flow and
// aggregate stats leave it out (they list priorities up to 65535 only),
// and it is not counted in the flow limit. The datapath's flows are
// flushed so packets are translated again under it.
func (m *ConnManager) setFailOpen(on bool) {
	m.failMu.Lock()
	defer m.failMu.Unlock()
	t := m.b.Tables.Table(0)
	switch {
	case on && m.failRule == nil:
		m.failRule = &Rule{Priority: FailOpenPriority, Value: &Entry{Table: 0, Created: time.Now(),
			Instructions: openflow.Instructions{Apply: []openflow.Action{openflow.Output(openflow.PortNormal, 0)}}}}
		t.Insert(m.failRule)
		m.b.Tables.Republish(0)
		m.log.Info("no controller connected; failing open (NORMAL)")
	case !on && m.failRule != nil:
		// A loose modify may have replaced the rule with one of the same
		// match and priority: remove whatever sits there.
		if r := t.Snapshot().Find(&m.failRule.Match, FailOpenPriority); r != nil {
			t.Remove(r)
			m.b.Tables.Republish(0)
		}
		m.failRule = nil
		m.log.Info("controller back; fail-open flow removed")
	default:
		return
	}
	m.invalidate()
}

// shieldFailOpen runs apply, a flow mod, with the fail-open rule (if
// any, and if loose is set: only a loose modify or delete can select it)
// taken out of table 0 meanwhile, so that no OpenFlow command replaces or
// deletes a rule the tables do not count as theirs.
func (m *ConnManager) shieldFailOpen(loose bool, apply func()) {
	m.failMu.Lock()
	defer m.failMu.Unlock()
	if !loose || m.failRule == nil {
		apply()
		return
	}
	t := m.b.Tables.Table(0)
	t.Remove(m.failRule)
	m.b.Tables.Republish(0)
	apply()
	t.Insert(m.failRule)
	m.b.Tables.Republish(0)
	// A miss translated in between saw no fail-open rule.
	m.invalidate()
}

// invalidate makes the revalidators translate every datapath flow again,
// after a change translation depends on but the tables do not hold
// (MissToController, the fail-open rule, a port's flood setting).
func (m *ConnManager) invalidate() { m.b.Tables.Invalidate() }

// packetIn is the Udpif.PacketIn hook. It runs on an upcall handler: it
// queues the packet for the dispatcher, or drops and counts it, and never
// blocks or allocates.
func (m *ConnManager) packetIn(pi PacketIn) {
	if m.nCtrl.Load() == 0 && m.nSvcAsync.Load() == 0 {
		m.pinNoCtrl.Add(1)
		return
	}
	select {
	case m.events <- asyncEvent{kind: asyncPacketIn, pin: pi}:
	default:
		m.asyncDropped.Add(1)
	}
}

// portEvent is the Bridge.OnPortEvent hook.
func (m *ConnManager) portEvent(ev PortEvent) {
	select {
	case m.events <- asyncEvent{kind: asyncPortStatus, port: ev}:
	default:
		m.asyncDropped.Add(1)
	}
}

// flowRemoved is the Tables.OnRemoved hook; it runs under the tables'
// mutex and only queues.
func (m *ConnManager) flowRemoved(r Removed) {
	select {
	case m.events <- asyncEvent{kind: asyncFlowRemoved, rem: r}:
	default:
		m.asyncDropped.Add(1)
	}
}

// dispatchLoop encodes asynchronous messages for each connection that
// wants them and queues them without blocking.
func (m *ConnManager) dispatchLoop() {
	defer m.wg.Done()
	for {
		select {
		case <-m.stop:
			return
		case ev := <-m.events:
			m.dispatch(&ev, time.Now())
		}
	}
}

func (m *ConnManager) dispatch(ev *asyncEvent, now time.Time) {
	conns := *m.connList.Load()
	var reason uint8
	switch ev.kind {
	case asyncPacketIn:
		reason = ev.pin.Reason
	case asyncPortStatus:
		reason = ev.port.Reason
	case asyncFlowRemoved:
		reason = uint8(ev.rem.Reason)
	}
	// A table miss with no table-miss flow entry (xlate marks it with
	// cookie all-ones) is a packet-in only for OpenFlow 1.0 controllers:
	// in 1.3 such a miss drops, as in OVS.
	implicitMiss := ev.kind == asyncPacketIn && ev.pin.Reason == ReasonNoMatch && ev.pin.Cookie == ^uint64(0)
	// OpenFlow 1.3 reports what a table-miss flow entry sends as a miss
	// (OVS's "explicit miss"); learning controllers such as
	// ovs-testcontroller act only on those.
	ev.explicitMiss = ev.kind == asyncPacketIn && ev.pin.Reason == ReasonAction && m.fromTableMissEntry(&ev.pin)
	for _, c := range conns {
		r := reason
		if ev.explicitMiss && c.Version() >= openflow.Version13 {
			r = ReasonNoMatch
		}
		if !c.wants(ev.kind, r) || implicitMiss && c.Version() >= openflow.Version13 ||
			ev.kind == asyncPacketIn && !c.wantsControllerID(&ev.pin) {
			continue
		}
		if ev.kind == asyncPacketIn && !c.allowPacketIn(now, m.cfg.PacketInRate, m.cfg.PacketInBurst) {
			c.pinDrop.Add(1)
			continue
		}
		b, err := m.encodeAsync(c, ev, now, m.getBuf())
		if err != nil {
			m.putBuf(b)
			c.log.Debug("cannot encode async message", "kind", ev.kind, "err", err)
			continue
		}
		ok := c.enqueue(b, false)
		if ev.kind == asyncPacketIn {
			if ok {
				c.pinSent.Add(1)
			} else {
				c.pinDrop.Add(1)
			}
		}
	}
}

// getBuf returns an empty buffer from the pool.
func (m *ConnManager) getBuf() []byte {
	select {
	case b := <-m.free:
		return b[:0]
	default:
		return make([]byte, 0, 2048)
	}
}

// putBuf returns b to the pool; very large buffers are let go.
func (m *ConnManager) putBuf(b []byte) {
	if b == nil || cap(b) > 1<<17 {
		return
	}
	select {
	case m.free <- b[:0]:
	default:
	}
}

func (m *ConnManager) nextXid() uint32 { return m.xid.Add(1) }

// ConnStatus describes one connection or configured controller, for
// ovs-vsctl's Controller table and ovs-appctl.
type ConnStatus struct {
	Target      string
	Kind        ConnKind
	IsConnected bool
	Version     uint8  // negotiated; 0 if not connected
	Role        string // "equal", "master", "slave"
	// LastError is the last connection failure of a controller.
	LastError string
	// Since is when a controller connected or last disconnected.
	Since            time.Time
	PacketInsSent    uint64
	PacketInsDropped uint64 // rate limit or full send queue
	MsgsReceived     uint64
	MsgsSent         uint64
}

// Status lists the configured controllers (connected or not) and then the
// service connections.
func (m *ConnManager) Status() []ConnStatus {
	var out []ConnStatus
	for _, cs := range m.ctrls {
		cs.mu.Lock()
		st := ConnStatus{Target: cs.target, Kind: ConnController, LastError: cs.lastErr, Since: cs.since, Role: "equal"}
		c := cs.conn
		cs.mu.Unlock()
		if c != nil {
			c.fillStatus(&st)
		}
		out = append(out, st)
	}
	for _, c := range *m.connList.Load() {
		if c.kind != ConnService {
			continue
		}
		st := ConnStatus{Target: c.target, Kind: ConnService}
		c.fillStatus(&st)
		out = append(out, st)
	}
	return out
}

func (c *Conn) fillStatus(st *ConnStatus) {
	st.Version = c.Version()
	st.IsConnected = st.Version != 0 && !c.isClosed()
	st.Role = roleName(c.Role())
	st.PacketInsSent, st.PacketInsDropped = c.pinSent.Load(), c.pinDrop.Load()
	st.MsgsReceived, st.MsgsSent = c.rxMsgs.Load(), c.txMsgs.Load()
}

func roleName(r uint32) string {
	switch r {
	case openflow.RoleMaster:
		return "master"
	case openflow.RoleSlave:
		return "slave"
	}
	return "equal"
}

// Controllers returns the Status entries of configured controllers only.
func (m *ConnManager) Controllers() []ConnStatus {
	st := m.Status()
	return st[:len(m.ctrls)]
}

// Dropped returns packet-ins dropped before reaching any connection:
// those with no controller connected and those that found the
// dispatcher's queue full (which also holds port status and flow removed
// messages).
func (m *ConnManager) Dropped() (noController, queueFull uint64) {
	return m.pinNoCtrl.Load(), m.asyncDropped.Load()
}
