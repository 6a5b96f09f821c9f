package ofproto

import (
	"errors"
	"time"
	"unsafe"

	"github.com/govswitch/govswitch/ofproto/openflow"
)

// Bundle limits: peers cannot grow memory without bound by opening
// bundles they never commit. A connection holds at most maxBundles open
// bundles and maxBundleBytes of them; all connections of a bridge
// together hold at most maxBundleBytesAll. Beyond, an add fails with
// OFPBFC_MSG_TOO_MANY (and an open with OFPBFC_OUT_OF_BUNDLES). A bundled
// message counts its bytes plus its decoded form (entryCost).
// They are variables so that tests can lower them.
var (
	maxBundles        = 64
	maxBundleBytes    = 64 << 20
	maxBundleBytesAll = int64(256 << 20)
	// bundleIdleTimeout discards a bundle that no add, close or commit
	// has touched for this long, with OFPBFC_TIMEOUT quoting the message
	// that opened it: ovs-vswitchd's default bundle-idle-timeout.
	bundleIdleTimeout = 10 * time.Second
	bundleSweep       = time.Second
)

// entryCost is what one bundled message holds in memory, roughly.
func entryCost(e *bundleEntry) int {
	return len(e.raw) + int(unsafe.Sizeof(*e)) +
		(cap(e.fm.Instructions.Apply)+cap(e.fm.Instructions.Write))*int(unsafe.Sizeof(openflow.Action{}))
}

// bundle is one open bundle of a connection (OpenFlow 1.4 bundles, and
// the ONF extension to 1.3). The connection's bmu guards it: its reader
// goroutine changes bundles, a timer discards idle ones.
type bundle struct {
	id      uint32
	flags   uint16
	closed  bool
	entries []bundleEntry
	bytes   int
	opener  []byte    // the message that opened it (copied), for the timeout error
	used    time.Time // last open, add or close
}

// bundleEntry is one bundled message, decoded and checked when it was
// added; raw is the whole BUNDLE_ADD_MESSAGE (copied), which errors at
// commit quote, as ovs-vswitchd's do.
type bundleEntry struct {
	raw      []byte
	fm       FlowMod
	portMod  *openflow.PortMod
	groupMod *openflow.GroupMod
}

// bundleErr answers raw with the OFPBFC error code in the connection's
// version.
func (c *Conn) bundleErr(raw []byte, code uint16) error {
	return c.queueMsg(openflow.BundleError(c.Version(), code, "").Reply(raw))
}

// refuses says whether open bundle b refuses a close or an add carrying
// flags, and with which bundle error: it is closed already, or the flags
// are not those it was opened with. The caller drops the bundle.
func (b *bundle) refuses(flags uint16) (code uint16, bad bool) {
	switch {
	case b.closed:
		return openflow.BundleFailedBundleClosed, true
	case b.flags != flags:
		return openflow.BundleFailedBadFlags, true
	}
	return 0, false
}

// dropBundle forgets bundle id.
func (c *Conn) dropBundle(id uint32) {
	if b := c.bundles[id]; b != nil {
		c.bundleBytes -= b.bytes
		c.m.bundleBytes.Add(-int64(b.bytes))
		delete(c.bundles, id)
	}
}

// dropBundles forgets every open bundle, when the connection ends: open
// bundles die with their connection, as in ovs-vswitchd.
func (c *Conn) dropBundles() {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	for id := range c.bundles {
		c.dropBundle(id)
	}
	if c.bundleTimer != nil {
		c.bundleTimer.Stop()
	}
}

// sweepBundles discards bundles idle past bundleIdleTimeout, telling the
// peer (OFPBFC_TIMEOUT), and runs again while bundles remain.
func (c *Conn) sweepBundles() {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	if c.isClosed() {
		return
	}
	limit := time.Now().Add(-bundleIdleTimeout)
	for id, b := range c.bundles {
		if b.used.After(limit) {
			continue
		}
		c.log.Info("bundle idle too long; discarded", "bundle", id, "messages", len(b.entries))
		c.dropBundle(id)
		reply := openflow.BundleError(c.Version(), openflow.BundleFailedTimeout, "").Reply(b.opener)
		if buf, err := reply.Append(c.m.getBuf()); err == nil {
			c.enqueue(buf, false)
		} else {
			c.m.putBuf(buf)
		}
	}
	if len(c.bundles) > 0 {
		c.bundleTimer.Reset(bundleSweep)
	}
}

func (c *Conn) bundleControl(raw []byte, m *openflow.BundleControl) error {
	if slave, err := c.isSlave(raw); slave {
		return err
	}
	c.bmu.Lock()
	defer c.bmu.Unlock()
	reply := &openflow.BundleControl{Envelope: openflow.Envelope{Version: c.Version(), Xid: m.Xid}, BundleID: m.BundleID}
	b := c.bundles[m.BundleID]
	switch m.Type {
	case openflow.BundleOpenRequest:
		if b != nil {
			c.dropBundle(m.BundleID)
			return c.bundleErr(raw, openflow.BundleFailedBadID)
		}
		if len(c.bundles) >= maxBundles {
			return c.bundleErr(raw, openflow.BundleFailedOutOfBundles)
		}
		c.openBundle(m.BundleID, m.Flags, raw)
		reply.Type = openflow.BundleOpenReply
	case openflow.BundleCloseRequest:
		if b == nil {
			return c.bundleErr(raw, openflow.BundleFailedBadID)
		}
		if code, bad := b.refuses(m.Flags); bad {
			c.dropBundle(m.BundleID)
			return c.bundleErr(raw, code)
		}
		b.closed, b.used = true, time.Now()
		reply.Type = openflow.BundleCloseReply
	case openflow.BundleCommitRequest:
		if b == nil {
			return c.bundleErr(raw, openflow.BundleFailedBadID)
		}
		// The bundle is gone whatever the outcome.
		c.dropBundle(m.BundleID)
		if b.flags != m.Flags {
			return c.bundleErr(raw, openflow.BundleFailedBadFlags)
		}
		failed, err := c.commitBundle(b)
		if failed != nil {
			if err != nil {
				return err
			}
			return c.bundleErr(raw, openflow.BundleFailedMsgFailed)
		}
		// As a barrier: the reply means the datapath forwards by the
		// committed tables.
		c.m.b.Udpif.Sync()
		reply.Type = openflow.BundleCommitReply
	case openflow.BundleDiscardRequest:
		if b == nil {
			return c.bundleErr(raw, openflow.BundleFailedBadID)
		}
		c.dropBundle(m.BundleID)
		reply.Type = openflow.BundleDiscardReply
	default:
		return c.bundleErr(raw, openflow.BundleFailedBadType)
	}
	return c.queueMsg(reply)
}

func (c *Conn) openBundle(id uint32, flags uint16, opener []byte) *bundle {
	if c.bundles == nil {
		c.bundles = make(map[uint32]*bundle)
	}
	if len(opener) > 64 {
		opener = opener[:64] // all an error quotes
	}
	b := &bundle{id: id, flags: flags, opener: append([]byte(nil), opener...), used: time.Now()}
	c.bundles[id] = b
	if c.bundleTimer == nil {
		c.bundleTimer = time.AfterFunc(bundleSweep, c.sweepBundles)
	} else if len(c.bundles) == 1 {
		c.bundleTimer.Reset(bundleSweep)
	}
	return b
}

// bundleAdd checks and decodes a bundled message and queues it, opening
// the bundle if need be. A message that fails its checks is answered with
// its error and leaves the bundle as it was, as in ovs-vswitchd.
func (c *Conn) bundleAdd(raw []byte, m *openflow.BundleAdd) error {
	if slave, err := c.isSlave(raw); slave {
		return err
	}
	v := c.Version()
	e := bundleEntry{raw: append([]byte(nil), raw...)}
	inner, err := openflow.Decode(m.Message)
	if err != nil {
		var oe *openflow.Error
		if !errors.As(err, &oe) || unknownMessage(oe) {
			// An unknown type cannot be bundled.
			return c.bundleErr(raw, openflow.BundleFailedMsgUnsup)
		}
		o := *oe
		o.Version = v
		return c.queueMsg(o.Reply(raw))
	}
	switch im := inner.(type) {
	case *openflow.FlowMod:
		fm, typ, code, ok := c.toFlowMod(im)
		if !ok {
			return c.sendError(raw, typ, code)
		}
		// What ovs-vswitchd checks when it decodes the flow mod fails the
		// add; whether a group exists it checks at commit, and so do we.
		if err := check(&fm); err != nil && ErrKind(err) != ErrBadOutGroup {
			typ, code := flowModError(v, err)
			c.logRefusal("bundled flow mod", err)
			return c.sendError(raw, typ, code)
		}
		if im.BufferID != openflow.NoBuffer && fm.Command < CmdDelete {
			return c.sendError(raw, openflow.ErrTypeBadRequest, openflow.BadRequestBufferUnknown)
		}
		if fm.Command >= CmdDelete && im.OutGroup != openflow.GroupAny {
			fm.OutGroup, fm.HasOutGroup = im.OutGroup, true
		}
		e.fm = fm
	case *openflow.PortMod:
		pm := *im
		e.portMod = &pm
	case *openflow.GroupMod:
		if err := checkGroupMod(im); err != nil {
			return c.sendGroupModError(raw, err)
		}
		e.groupMod = im
	default:
		// Packet-outs in bundles are not implemented: refused rather
		// than run at the wrong time. Meter mods ovs-vswitchd refuses
		// in bundles too.
		return c.bundleErr(raw, openflow.BundleFailedMsgUnsup)
	}
	c.bmu.Lock()
	defer c.bmu.Unlock()
	b := c.bundles[m.BundleID]
	switch {
	case b == nil:
		if len(c.bundles) >= maxBundles {
			return c.bundleErr(raw, openflow.BundleFailedOutOfBundles)
		}
		b = c.openBundle(m.BundleID, m.Flags, raw)
	default:
		if code, bad := b.refuses(m.Flags); bad {
			c.dropBundle(m.BundleID)
			return c.bundleErr(raw, code)
		}
	}
	cost := entryCost(&e)
	if c.bundleBytes+cost > maxBundleBytes || c.m.bundleBytes.Load()+int64(cost) > maxBundleBytesAll {
		c.log.Info("bundle too big; add refused", "bundle", m.BundleID, "bytes", c.bundleBytes)
		return c.bundleErr(raw, openflow.BundleFailedMsgTooMany)
	}
	b.entries = append(b.entries, e)
	b.used = time.Now()
	b.bytes += cost
	c.bundleBytes += cost
	c.m.bundleBytes.Add(int64(cost))
	return nil
}

// unknownMessage reports whether a decode error says the message type
// itself is unknown, rather than its content bad.
func unknownMessage(e *openflow.Error) bool {
	if e.Type != openflow.ErrTypeBadRequest {
		return false
	}
	switch e.Code {
	case openflow.BadRequestBadType, openflow.BadRequestBadStat, openflow.BadRequestBadVendor,
		openflow.BadRequestBadSubtype:
		return true
	}
	return false
}

// commitBundle applies b's flow mods as one atomic change of the tables
// (readers and translation see all of them or none) and then its port
// mods. If a message fails, nothing changes: that message's error goes to
// the peer and failed is it; err is an error closing the connection.
//
// As in ovs-vswitchd, port mods cannot be undone, so an atomic bundle
// holding one fails (OFPBFC_MSG_FAILED for the port mod); a non-atomic
// one checks its port mods first and applies them after the flow mods.
func (c *Conn) commitBundle(b *bundle) (failed *bundleEntry, err error) {
	v := c.Version()
	var fms []*FlowMod
	var idx []int
	loose := false
	for i := range b.entries {
		e := &b.entries[i]
		if e.portMod != nil {
			if b.flags&openflow.BundleAtomic != 0 {
				return e, c.bundleErr(e.raw, openflow.BundleFailedMsgFailed)
			}
			if typ, code, ok := c.checkPortMod(e.portMod); !ok {
				return e, c.sendError(e.raw, typ, code)
			}
			continue
		}
		if e.groupMod != nil {
			continue
		}
		fms = append(fms, &e.fm)
		idx = append(idx, i)
		if e.fm.Command == CmdModify || e.fm.Command == CmdDelete {
			loose = true
		}
	}
	at := -1
	now := time.Now()
	staged, gi, gerr := c.m.b.Groups.stage(b.entries, now)
	if gerr != nil {
		return &b.entries[gi], c.sendGroupModError(b.entries[gi].raw, gerr)
	}
	c.m.shieldFailOpen(loose, func() {
		err = c.m.b.Tables.ApplyAll(fms, now, &at)
	})
	staged.finish(err == nil, now)
	if err != nil {
		e := &b.entries[idx[at]]
		typ, code := flowModError(v, err)
		c.log.Debug("bundled flow mod failed; bundle rolled back", "bundle", b.id, "err", err)
		return e, c.sendError(e.raw, typ, code)
	}
	for i := range b.entries {
		if pm := b.entries[i].portMod; pm != nil {
			c.applyPortMod(pm)
		}
	}
	return nil, nil
}
