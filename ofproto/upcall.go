package ofproto

import (
	"encoding/binary"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/governor"
	"golang.org/x/sys/unix"
)

// Upcall-path defaults, as OVS's.
const (
	DefaultFlowLimit = 200000
	DefaultMaxIdle   = 10 * time.Second
	UpcallBatch      = 64 // upcalls read per handler wake-up
	// upcallBufSize is each upcall buffer's size. The kernel segments GSO
	// packets before sending them up, so an upcall is one packet of at
	// most the input device's MTU, 65535 at the most, plus its key
	// attributes. The buffers are mapped outside the Go heap (see
	// mapUpcallBuffers): only the pages a receive writes become resident,
	// a page or two per buffer for ordinary frames, so sizing them for the
	// longest upcall costs address space, not memory.
	upcallBufSize      = 68 << 10
	flowCountCacheTime = 100 * time.Millisecond
)

// UpcallConfig configures the upcall handlers and revalidators.
type UpcallConfig struct {
	// FlowLimit caps the datapath flows (OVS's other_config:flow-limit);
	// the dynamic limit moves within [1000, FlowLimit]. 0 means
	// DefaultFlowLimit.
	FlowLimit int
	// MaxIdle is how long a datapath flow may see no packet before the
	// revalidator deletes it. 0 means DefaultMaxIdle.
	MaxIdle time.Duration
	// RevalidateInterval is the time between revalidator dumps. 0 means
	// 500 ms (OVS's max-revalidator).
	RevalidateInterval time.Duration
	// Governor selects the flow-setup governor's mode and threshold;
	// Governor == nil disables it (every miss installs a flow).
	Governor          *governor.Mode
	GovernorThreshold int
	// DisableMegaflows installs exact-match flows (every key bit).
	DisableMegaflows bool
}

// PacketIn is a packet for the controller, from a CONTROLLER output or a
// table miss. Packet is a copy the receiver owns.
type PacketIn struct {
	Packet []byte
	Key    flow.Key // as the datapath extracted it; InPort in datapath numbering
	Reason uint8    // ReasonNoMatch or ReasonAction
	Bridge uint16   // the sending bridge's Xlator.ID
	Table  uint8
	Cookie uint64
	MaxLen uint16
	// Conntracked: the packet-in reports Key's conntrack fields.
	Conntracked bool
	// Ext is what a Nicira controller action adds (controller id,
	// userdata, continuation); nil for a plain CONTROLLER output.
	Ext *PacketInExt
}

// UpcallStats are the upcall path's counters, for upcall/show,
// coverage/show and metrics.
type UpcallStats struct {
	Upcalls          uint64 // upcalls received
	Misses           uint64 // MISS upcalls
	ActionUpcalls    uint64 // userspace-action upcalls
	FlowsInstalled   uint64 // flow puts that succeeded
	PutFailed        uint64 // flow puts the datapath refused
	Executes         uint64 // packets executed
	ExecuteFailed    uint64 // executes the datapath refused
	Duplicates       uint64 // misses for a flow already being installed (handler_duplicate_upcall)
	LimitHits        uint64 // misses not installed because of the flow limit (upcall_flow_limit_hit)
	UkeyFull         uint64 // misses not installed because the ukey table was full
	GovernorExecutes uint64 // misses the governor chose not to install
	NDExtExecutes    uint64 // misses executed, not installed: their megaflow needs nd_reserved or nd_options_type
	GovernorInstalls uint64 // misses the governor chose to install (counted + shortcut)
	Batches          uint64 // handler wake-ups with at least one upcall
	Lost             uint64 // upcalls the handlers' sockets lost
	PacketIns        uint64 // packets sent to the controller
	PacketInsDropped uint64 // packet-ins dropped (no listener or rate limit)

	// Revalidator counters.
	Dumps          uint64
	DumpDuration   time.Duration // of the last dump
	FlowsDeleted   uint64
	FlowsModified  uint64
	IdleDeleted    uint64
	LimitKilled    uint64 // upcall_flow_limit_kill
	StaleDeleted   uint64 // flows with no ukey that did not translate the same
	Adopted        uint64 // flows with no ukey adopted (after a restart)
	FlowLimit      int    // current dynamic limit
	DatapathFlows  int    // flows at the last dump
	UkeysInUse     int
	AvgBatchTimes8 uint64 // average upcalls per handler batch, ×8 (fixed point)
	LastError      string // the last datapath failure on the upcall path, "" if none
}

// counters are the atomics behind UpcallStats.
type counters struct {
	upcalls, misses, actions, installed, putFailed, executes, execFailed     atomic.Uint64
	duplicates, limitHits, ukeyFull, govExec, govInstall, batches, packetIns atomic.Uint64
	packetInsDropped, dumps, deleted, modified, idleDeleted, killed, stale   atomic.Uint64
	adopted, ndExtExec                                                       atomic.Uint64
	dumpNanos                                                                atomic.Int64
}

// Udpif runs a datapath's upcall handlers and revalidator, for the
// bridges on it (a Backer) or for one bridge's Xlator.
type Udpif struct {
	dp  datapath.Datapath
	x   translator
	cfg UpcallConfig

	ukeys *ukeyTable
	c     counters
	// relearnOut is the revalidator's translation for re-running learn
	// actions (xlate_learn.go).
	relearnOut Out

	flowLimit        atomic.Int64 // the dynamic limit
	disableMegaflows atomic.Bool
	nFlows           atomic.Int64 // datapath flows, cached
	nFlowsAt         atomic.Int64 // unix nanos of nFlows

	// OnGovernorGeneration, if set before Start, is told when a handler's
	// governor ends a generation (OVS logged these at INFO).
	OnGovernorGeneration func(governor.Generation)

	handlers []*handler
	lastErr  atomic.Pointer[string] // the last datapath error on the upcall path

	stop      chan struct{}
	wg        sync.WaitGroup
	kick      chan revalRequest // work for the revalidator goroutine
	started   atomic.Bool
	firstDump atomic.Bool // the next dump is non-terse, to adopt flows
	gen       uint64      // dump generation (revalidator goroutine only)

	// wake holds a token when a pass is wanted now: a MAC table change
	// seen by a handler, a Wake. Table changes come on Tables.Changed.
	wake chan struct{}
	// syncMu guards the versions the last finished pass made the
	// datapath consistent with, and passed, closed (and replaced) when a
	// pass finishes, for Sync's waiters.
	syncMu                  sync.Mutex
	syncedTables, syncedMAC uint64
	passed                  chan struct{}
	// running says a pass is under way, checking against these versions.
	running                   bool
	runningTables, runningMAC uint64

	// netflows counts the bridges running NetFlow: the revalidator
	// credits NetFlow flows only when there are any.
	netflows atomic.Int32

	// recircSweptAt is when the revalidator last freed unused
	// recirculation ids (recirc.go).
	recircSweptAt atomic.Int64
}

// NewUdpif returns the upcall machinery for dp translating with x (an
// *Xlator or a *Backer); packets for the controller go to x's bridges.
// Start begins handling upcalls.
func NewUdpif(dp datapath.Datapath, x translator, cfg UpcallConfig) *Udpif {
	if cfg.FlowLimit <= 0 {
		cfg.FlowLimit = DefaultFlowLimit
	}
	if cfg.MaxIdle <= 0 {
		cfg.MaxIdle = DefaultMaxIdle
	}
	if cfg.RevalidateInterval <= 0 {
		cfg.RevalidateInterval = 500 * time.Millisecond
	}
	u := &Udpif{dp: dp, x: x, cfg: cfg, ukeys: newUkeyTable(cfg.FlowLimit * 2),
		stop: make(chan struct{}), kick: make(chan revalRequest),
		wake: make(chan struct{}, 1), passed: make(chan struct{})}
	u.flowLimit.Store(int64(min(cfg.FlowLimit, 10000)))
	u.disableMegaflows.Store(cfg.DisableMegaflows)
	u.firstDump.Store(true)
	return u
}

// Start launches one goroutine per datapath handler and the revalidator.
func (u *Udpif) Start() {
	hs := u.dp.Handlers()
	if len(hs) > 0 {
		// Controller-bound packets come back on the first handler.
		u.x.setControllerPID(hs[0].PID())
	}
	for _, h := range hs {
		hd := u.newHandler(h)
		u.handlers = append(u.handlers, hd)
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			hd.run()
		}()
	}
	u.started.Store(true)
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		u.revalidatorLoop()
	}()
}

// Stop ends the handlers and the revalidator. The datapath's flows stay:
// a restarted switch adopts them.
func (u *Udpif) Stop() {
	select {
	case <-u.stop:
		return
	default:
	}
	close(u.stop)
	for _, h := range u.dp.Handlers() {
		h.SetReadDeadline(time.Now())
	}
	u.wg.Wait()
	// The handlers are done with their buffers; nothing they handed on
	// (packet-ins are copies) points into them.
	for _, hd := range u.handlers {
		hd.unmap()
		hd.bufs = nil
	}
	recircs.forget(u) // the bridges' recirculation ids (recirc.go)
}

// mapUpcallBuffers returns n upcall buffers of upcallBufSize bytes mapped
// outside the Go heap, and the function that unmaps them. The kernel backs
// a page of them only when a receive writes it, and the GC neither zeroes
// nor scans them, so a handler's resident cost follows the upcalls it gets
// rather than the longest possible one. Without the mapping it falls back
// to heap buffers.
func mapUpcallBuffers(n int) (bufs [][]byte, unmap func()) {
	bufs = make([][]byte, n)
	mem, err := unix.Mmap(-1, 0, n*upcallBufSize, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		for i := range bufs {
			bufs[i] = make([]byte, upcallBufSize)
		}
		return bufs, func() {}
	}
	// Huge pages would make one touch resident 2 MiB.
	_ = unix.Madvise(mem, unix.MADV_NOHUGEPAGE)
	for i := range bufs {
		bufs[i] = mem[i*upcallBufSize : (i+1)*upcallBufSize : (i+1)*upcallBufSize]
	}
	return bufs, func() { unix.Munmap(mem) }
}

// SetMegaflows turns megaflows on or off. Like OVS's
// upcall/disable-megaflows and enable-megaflows, it flushes the datapath's
// flows so none of the other kind survive.
func (u *Udpif) SetMegaflows(on bool) error {
	u.disableMegaflows.Store(!on)
	return u.Purge()
}

// SetFlowLimit overrides the current dynamic flow limit until the next
// dump adjusts it (upcall/set-flow-limit).
func (u *Udpif) SetFlowLimit(n int) { u.flowLimit.Store(int64(n)) }

// Purge deletes every datapath flow and forgets every ukey
// (revalidator/purge). It runs on the revalidator's goroutine, which owns
// the ukeys' revalidation state.
func (u *Udpif) Purge() error {
	if !u.started.Load() {
		return u.purge()
	}
	req := revalRequest{purge: true, done: make(chan error, 1)}
	select {
	case u.kick <- req:
		return <-req.done
	case <-u.stop:
		return u.purge()
	}
}

func (u *Udpif) purge() error {
	err := u.dp.FlushFlows()
	var ufids []datapath.UFID
	u.ukeys.Range(func(k *ukey) { ufids = append(ufids, k.ufid) })
	for i := range ufids {
		u.ukeys.Remove(&ufids[i])
	}
	u.nFlows.Store(0)
	u.nFlowsAt.Store(0)
	return err
}

// Stats returns the upcall path's counters.
func (u *Udpif) Stats() UpcallStats {
	c := &u.c
	s := UpcallStats{
		Upcalls: c.upcalls.Load(), Misses: c.misses.Load(), ActionUpcalls: c.actions.Load(),
		FlowsInstalled: c.installed.Load(), PutFailed: c.putFailed.Load(), Executes: c.executes.Load(),
		ExecuteFailed: c.execFailed.Load(), Duplicates: c.duplicates.Load(), LimitHits: c.limitHits.Load(),
		UkeyFull: c.ukeyFull.Load(), GovernorExecutes: c.govExec.Load(), GovernorInstalls: c.govInstall.Load(),
		NDExtExecutes: c.ndExtExec.Load(),
		Batches:       c.batches.Load(), PacketIns: c.packetIns.Load(), PacketInsDropped: c.packetInsDropped.Load(),
		Dumps: c.dumps.Load(), DumpDuration: time.Duration(c.dumpNanos.Load()), FlowsDeleted: c.deleted.Load(),
		FlowsModified: c.modified.Load(), IdleDeleted: c.idleDeleted.Load(), LimitKilled: c.killed.Load(),
		StaleDeleted: c.stale.Load(), Adopted: c.adopted.Load(), FlowLimit: int(u.flowLimit.Load()),
		DatapathFlows: int(u.nFlows.Load()), UkeysInUse: u.ukeys.Len(),
	}
	for _, h := range u.dp.Handlers() {
		s.Lost += h.Lost()
	}
	if s.Batches > 0 {
		s.AvgBatchTimes8 = s.Upcalls * 8 / s.Batches
	}
	if p := u.lastErr.Load(); p != nil {
		s.LastError = *p
	}
	return s
}

// noteError records a datapath failure for upcall/show. Failures are
// counted, not logged per packet: a storm of them must not flood the log.
func (u *Udpif) noteError(op string, err error) {
	msg := op + ": " + err.Error()
	if p := u.lastErr.Load(); p == nil || *p != msg {
		u.lastErr.Store(&msg)
	}
}

// datapathFlows returns the datapath's flow count, cached for 100 ms as
// OVS caches it, since asking costs a system call.
func (u *Udpif) datapathFlows(now time.Time) int {
	if now.UnixNano()-u.nFlowsAt.Load() < int64(flowCountCacheTime) {
		return int(u.nFlows.Load())
	}
	st, err := u.dp.Stats()
	if err == nil {
		u.nFlows.Store(int64(st.Flows))
	}
	u.nFlowsAt.Store(now.UnixNano())
	return int(u.nFlows.Load())
}

// handler is one upcall handler's preallocated state: it reads up to
// UpcallBatch upcalls into its own buffers and builds one Operate batch.
type handler struct {
	u *Udpif
	h datapath.Handler
	// policy is the handler's governor (nil when disabled). mu guards it
	// against GovernorStatus; the handler holds it for a whole batch.
	mu     sync.Mutex
	policy *governor.Policy

	bufs  [][]byte
	unmap func() // releases bufs (mapUpcallBuffers)
	ups   []datapath.Upcall
	outs  []Out
	ops   []datapath.Op
	// opUkey[i] is the ukey of ops[i] when it is a put, for error handling.
	opUkey []*ukey
	// slow executes slow-pathed packets (upcall_slow.go).
	slow slowOps
	// busy is odd while the handler is translating and installing a batch
	// (see Udpif.quiesce).
	busy atomic.Uint64
}

func (u *Udpif) newHandler(h datapath.Handler) *handler {
	hd := &handler{
		u: u, h: h,
		ups:    make([]datapath.Upcall, UpcallBatch),
		outs:   make([]Out, UpcallBatch),
		ops:    make([]datapath.Op, 0, 2*UpcallBatch),
		opUkey: make([]*ukey, 0, 2*UpcallBatch),
	}
	hd.bufs, hd.unmap = mapUpcallBuffers(UpcallBatch)
	hd.initSlow()
	for i := range hd.outs {
		hd.outs[i].Actions = make([]byte, 0, 1024)
	}
	if u.cfg.Governor != nil {
		hd.policy = governor.NewPolicy(*u.cfg.Governor, u.cfg.GovernorThreshold, time.Now())
		hd.policy.Governor().OnGeneration = u.OnGovernorGeneration
	}
	return hd
}

// GovernorStatus is one handler's governor, for governor/show.
type GovernorStatus struct {
	Handler     int
	Mode        governor.Mode
	Threshold   int
	Engaged     bool
	Engagements uint64
	Stats       governor.Stats
}

// GovernorStatus returns the state of every handler's governor; nil when
// the governor is disabled.
func (u *Udpif) GovernorStatus() []GovernorStatus {
	var out []GovernorStatus
	for i, hd := range u.handlers {
		hd.mu.Lock()
		if p := hd.policy; p != nil {
			out = append(out, GovernorStatus{Handler: i, Mode: p.Mode, Threshold: p.Threshold,
				Engaged: p.Engaged(), Engagements: p.Engagements, Stats: p.Governor().Stats()})
		}
		hd.mu.Unlock()
	}
	return out
}

func (hd *handler) run() {
	// The clock is read once per wake-up: in the UML bed (no vDSO) every
	// read is a system call, and a handler loop that also re-armed a read
	// deadline each time spent a third of its CPU reading the time. A
	// deadline is armed only when the governor needs its periodic work;
	// otherwise Recv blocks until upcalls come or Stop moves the deadline.
	now := time.Now()
	var wake time.Time
	for {
		select {
		case <-hd.u.stop:
			return
		default:
		}
		if hd.policy != nil && !now.Before(wake) {
			wake = now.Add(time.Second)
			hd.h.SetReadDeadline(wake)
		}
		n, err := hd.h.Recv(hd.ups, hd.bufs)
		now = time.Now()
		if hd.policy != nil && !now.Before(wake) {
			hd.mu.Lock()
			hd.policy.Run(hd.u.datapathFlows(now), now)
			hd.mu.Unlock()
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				wake = time.Time{} // re-arm: a Stop may have moved it
				continue
			}
			select {
			case <-hd.u.stop:
				return
			default:
			}
			// A transient receive error (the socket overflowed: counted as
			// lost by the datapath) must not end the handler.
			time.Sleep(time.Millisecond)
			continue
		}
		hd.busy.Add(1)
		_, macV := hd.u.x.versions()
		hd.handleBatch(hd.ups[:n], now)
		if _, mv := hd.u.x.versions(); mv != macV {
			// A MAC learned or moved: flows that flooded to it, or sent
			// it to its old port, must be translated again.
			hd.u.Wake()
		}
		hd.busy.Add(1)
	}
}

// handleBatch processes one batch of upcalls: translate each miss, decide
// whether to install its flow, and send every put and execute in one
// Operate. In steady state it allocates nothing.
func (hd *handler) handleBatch(ups []datapath.Upcall, now time.Time) {
	u := hd.u
	u.c.batches.Add(1)
	u.c.upcalls.Add(uint64(len(ups)))
	hd.ops = hd.ops[:0]
	hd.opUkey = hd.opUkey[:0]
	limit := int(u.flowLimit.Load())
	nflows := u.datapathFlows(now)
	exact := u.disableMegaflows.Load()
	hd.slow.arena = hd.slow.arena[:0]
	hd.mu.Lock()

	for i := range ups {
		up := &ups[i]
		if up.Cmd == datapath.UpcallAction {
			u.c.actions.Add(1)
			if len(up.Userdata) == ovsCookieLen && u.sampleUpcall(up) { // ipfix_bridge.go
				continue
			}
			if len(up.Userdata) > 0 && up.Userdata[0] == UserdataSFlow {
				u.sflowUpcall(up) // xlate_sample.go
				continue
			}
			if isLACPSlowPath(up.Userdata) {
				u.lacpUpcall(up, now, &hd.outs[i]) // lacp_bond.go
				continue
			}
			if isSTPCookie(up.Userdata) {
				u.stpUpcall(up) // xlate_stp.go
				continue
			}
			if isSlowPathCookie(up.Userdata) {
				hd.slowUpcall(up, &hd.outs[i], now) // upcall_slow.go
				continue
			}
			hd.packetIn(up)
			continue
		}
		u.c.misses.Add(1)
		out := &hd.outs[i]
		// The datapath keys no ND extensions: read them from the packet,
		// for rules that match nd_reserved or nd_options_type.
		flow.ExtractNDExt(&up.Key, up.Packet, nil)
		u.x.TranslatePacket(&up.Key, up.Packet, now, true, out)

		// Every packet the switch handles credits its rules, installed or
		// not: the datapath flow's own counters start after this packet.
		for r := 0; r < out.NRules; r++ {
			out.Rules[r].Value.Credit(1, uint64(len(up.Packet)), now)
		}
		if out.netflow {
			u.netflowMiss(up, out, now) // netflow_bridge.go
		}
		if out.lacp != nil {
			lacpReceive(out, up.Packet, now) // lacp_bond.go
		}

		// Translation always puts in_port in the mask, so it is never
		// empty; only the exact-match regime replaces it.
		userspace := needsNDExt(&up.Key, &out.WC, exact)
		if exact {
			out.WC = exactMask
		}
		datapath.FitMask(&up.Key, &out.WC)
		hash, maskHash := up.Key.HashMaskedPair(&out.WC, 0, ufidMaskBasis)
		ufid := makeUFID(hash, maskHash)

		acts, install := out.InstallActions() // a slow-pathed flow's: xlate_slow.go
		switch {
		case !install:
		case userspace:
			u.c.ndExtExec.Add(1)
			install = false
		case nflows >= limit:
			u.c.limitHits.Add(1)
			install = false
		case hd.policy != nil:
			if u.ukeys.Lookup(&ufid) != nil {
				break // a duplicate: handled below
			}
			if d := hd.policy.Decide(uint32(hash), 1, nflows, now); d.Installs() {
				u.c.govInstall.Add(1)
			} else {
				u.c.govExec.Add(1)
				install = false
			}
		}
		if install {
			k, full := u.ukeys.Insert(&ufid, func(k *ukey) {
				k.hash = hash
				// The masked key: re-translation starts from it. The put
				// carries the full key, as the datapath sent it.
				u.ukeys.setFlow(k, &up.Key, &out.WC)
				k.actions = append(k.actions[:0], acts...)
				k.setRules(&out.Rules, out.NRules)
				k.tablesVersion, k.macVersion = out.TablesVersion, out.MACVersion
				k.activeAt = now.UnixNano()
				k.learns = out.HasLearn
				k.fin = out.nFins > 0
				k.bondID, k.bucket = out.acct.id(), out.acct.bucket // bond_rebalance.go
				k.nfFlood = out.nfFlood
			})
			switch {
			case full:
				u.c.ukeyFull.Add(1)
			case k == nil:
				u.c.duplicates.Add(1)
			default:
				// The op carries the handler's own copy of the actions,
				// not the ukey's: a purge may recycle the ukey while the
				// batch is being encoded.
				op := hd.nextOp(datapath.OpPut)
				op.Flags = datapath.PutCreate
				op.Flow.UFID, op.Flow.Key, op.Flow.Mask, op.Flow.Actions = ufid, up.Key, out.WC, acts
				hd.opUkey = append(hd.opUkey, k)
				nflows++
			}
		}
		if out.Slow != 0 {
			hd.slow.execute(up, out) // upcall_slow.go
		} else if len(out.Actions) > 0 && out.lacp == nil {
			op := hd.nextOp(datapath.OpExecute)
			op.Packet, op.Flow.Key, op.Flow.Actions = up.Packet, up.Key, out.Actions
			hd.opUkey = append(hd.opUkey, nil)
		}
	}
	hd.mu.Unlock()
	for i := range ups {
		applyLearns(&hd.outs[i], now)                    // xlate_learn.go; nothing unless a learn action ran
		hd.outs[i].applyFinTimeouts(ups[i].Key.TCPFlags) // xlate_fintimeout.go; likewise
	}
	if len(hd.ops) == 0 {
		return
	}
	if err := u.dp.Operate(hd.ops); err != nil {
		// The whole batch failed (the socket): undo the ukeys, so the next
		// packets of those flows retry.
		u.noteError("operate", err)
		for i, k := range hd.opUkey {
			if k != nil {
				u.ukeys.Remove(&hd.ops[i].Flow.UFID)
			}
		}
		u.c.putFailed.Add(uint64(len(hd.ops)))
		return
	}
	for i := range hd.ops {
		op := &hd.ops[i]
		switch op.Kind {
		case datapath.OpPut:
			if op.Err != nil {
				u.c.putFailed.Add(1)
				u.noteError("flow put", op.Err)
				u.ukeys.Remove(&op.Flow.UFID)
				continue
			}
			u.ukeys.MarkInstalled(&op.Flow.UFID, hd.opUkey[i])
			u.c.installed.Add(1)
			// Keep the cached flow count current between refreshes: under
			// a storm, hundreds of flows go in within one cache period.
			u.nFlows.Add(1)
		case datapath.OpExecute:
			if op.Err != nil {
				u.c.execFailed.Add(1)
				u.noteError("execute", op.Err)
			} else {
				u.c.executes.Add(1)
			}
		}
		op.Packet, op.Flow.Actions = nil, nil // drop references into the buffers
	}
}

// nextOp extends hd.ops by one op of the kind and returns it, every field
// reset but the flow's key and mask, which the caller writes in place (an
// execute's mask is left as it was: executes do not read it). An Op is
// about 1 KB, nearly all of it key and mask; appending a composite literal
// zeroes one, builds it and copies it, which was a tenth of the handler's
// own time per miss.
func (hd *handler) nextOp(kind datapath.OpKind) *datapath.Op {
	if n := len(hd.ops); n < cap(hd.ops) {
		hd.ops = hd.ops[:n+1]
	} else {
		hd.ops = append(hd.ops, datapath.Op{})
	}
	op := &hd.ops[len(hd.ops)-1]
	op.Kind, op.Flags, op.Packet, op.WantStats, op.Err, op.Stats = kind, 0, nil, false, nil, datapath.FlowStats{}
	op.Flow.UFID, op.Flow.Actions, op.Flow.Stats, op.Flow.Terse = datapath.UFID{}, nil, datapath.FlowStats{}, false
	return op
}

// makeUFID names a megaflow from the hash of its masked key and the hash
// of its mask (flow.Key.HashMaskedPair with ufidMaskBasis): the same
// masked key and mask always give the same UFID, so two upcalls of one
// megaflow find one ukey, and one masked key under two masks gives two.
func makeUFID(hash, maskHash uint64) datapath.UFID {
	var u datapath.UFID
	binary.LittleEndian.PutUint64(u[:8], hash)
	binary.LittleEndian.PutUint64(u[8:], maskHash)
	return u
}

// exactMask is the megaflow mask of the exact-match regime.
var exactMask = flow.ExactMask()

// ufidMaskBasis seeds the mask's half of a UFID.
const ufidMaskBasis = 0x5bd1e995

// packetIn hands a controller-bound packet to its bridge.
func (hd *handler) packetIn(up *datapath.Upcall) {
	u := hd.u
	cu, ok := ParseControllerUserdata(up.Userdata)
	if !ok {
		u.c.packetInsDropped.Add(1)
		return
	}
	u.c.packetIns.Add(1)
	var ext *PacketInExt
	if up.Userdata[0] == UserdataController2 {
		if ext = parsePacketInExt(append([]byte(nil), up.Userdata...)); ext == nil {
			u.c.packetInsDropped.Add(1)
			return
		}
	}
	u.x.packetIn(PacketIn{Packet: append([]byte(nil), up.Packet...), Key: up.Key, Reason: cu.Reason,
		Bridge: cu.Bridge, Table: cu.Table, Cookie: cu.Cookie, MaxLen: cu.MaxLen, Conntracked: cu.Conntracked, Ext: ext})
}

// needsNDExt reports whether a translation of key whose megaflow mask
// (before FitMask) is wc depends on the ND extension fields, which the
// Linux datapath cannot key: such a packet is executed and no flow is
// installed for it, as ovs-vswitchd does on a datapath without ND
// extensions. In the exact-match regime every ND packet's would.
func needsNDExt(key *flow.Key, wc *flow.Mask, exact bool) bool {
	if wc.NDReserved != 0 || wc.NDOptionsType != 0 {
		return true
	}
	return exact && flow.IsND(key)
}
