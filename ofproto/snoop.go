package ofproto

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govswitch/govswitch/ofproto/openflow"
)

// The snoop socket, <rundir>/<bridge>.snoop, as ovs-vswitchd has it:
// "ovs-ofctl snoop br0" connects there, and each connection (after the
// hello exchange) receives a copy of every OpenFlow message the bridge
// sends to or receives from its controllers. A snooper that falls behind
// loses copies, never slows a controller.

const snoopQueueLen = 256

type snooper struct {
	nc   net.Conn
	send chan []byte
	done chan struct{}
}

type snoopState struct {
	mu   sync.Mutex
	ln   net.Listener
	list atomic.Pointer[[]*snooper] // replaced under mu; read without it
}

// SnoopPath returns the path of the bridge's snoop socket.
func (m *ConnManager) SnoopPath() string {
	return filepath.Join(m.cfg.Rundir, m.b.Name+".snoop")
}

// startSnoop opens the snoop socket; Start calls it with the mgmt socket.
func (m *ConnManager) startSnoop() error {
	ln, err := listenUnix(m.SnoopPath())
	if err != nil {
		return err
	}
	m.snoop.mu.Lock()
	m.snoop.ln = ln
	m.snoop.mu.Unlock()
	m.wg.Add(1)
	go m.snoopAccept(ln)
	return nil
}

// closeSnoop closes the socket and every snooper.
func (m *ConnManager) closeSnoop() {
	m.snoop.mu.Lock()
	ln, list := m.snoop.ln, m.snoop.list.Swap(nil)
	m.snoop.ln = nil
	m.snoop.mu.Unlock()
	if ln == nil {
		return
	}
	ln.Close()
	if list != nil {
		for _, s := range *list {
			s.nc.Close()
		}
	}
	os.Remove(m.SnoopPath())
}

func (m *ConnManager) snoopAccept(ln net.Listener) {
	defer m.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				m.log.Warn("snoop accept failed; the snoop socket stops", "err", err)
			}
			return
		}
		m.wg.Add(1)
		go m.runSnooper(nc)
	}
}

// runSnooper negotiates with a snooper, then writes it the copies.
func (m *ConnManager) runSnooper(nc net.Conn) {
	defer m.wg.Done()
	defer nc.Close()
	ours := m.versions
	hello, _ := (&openflow.Hello{Envelope: openflow.Envelope{Version: highestVersion(ours)}, Versions: ours}).Append(nil)
	nc.SetDeadline(time.Now().Add(helloTimeout))
	if _, err := nc.Write(hello); err != nil {
		return
	}
	fr := openflow.NewFramer(0)
	raw, err := fr.ReadMsg(nc)
	if err != nil {
		return
	}
	if m2, err := openflow.Decode(raw); err != nil {
		return
	} else if _, ok := m2.(*openflow.Hello); !ok {
		return
	}
	nc.SetDeadline(time.Time{})
	s := &snooper{nc: nc, send: make(chan []byte, snoopQueueLen), done: make(chan struct{})}
	m.snoop.mu.Lock()
	if m.snoop.ln == nil {
		m.snoop.mu.Unlock()
		return
	}
	var list []*snooper
	if old := m.snoop.list.Load(); old != nil {
		list = append(list, *old...)
	}
	list = append(list, s)
	m.snoop.list.Store(&list)
	m.snoop.mu.Unlock()
	defer m.dropSnooper(s)
	// The reader only notices the snooper going away (and answers
	// nothing: a snooper only listens).
	go func() {
		defer close(s.done)
		for {
			if _, err := fr.ReadMsg(nc); err != nil {
				return
			}
		}
	}()
	for {
		select {
		case b := <-s.send:
			nc.SetWriteDeadline(time.Now().Add(connWriteTimeout))
			if _, err := nc.Write(b); err != nil {
				return
			}
		case <-s.done:
			return
		case <-m.stop:
			return
		}
	}
}

func (m *ConnManager) dropSnooper(s *snooper) {
	m.snoop.mu.Lock()
	defer m.snoop.mu.Unlock()
	old := m.snoop.list.Load()
	if old == nil {
		return
	}
	var list []*snooper
	for _, o := range *old {
		if o != s {
			list = append(list, o)
		}
	}
	m.snoop.list.Store(&list)
}

// snoopCopy gives every snooper a copy of msg, a message c sent or
// received; only controller connections are snooped, as in OVS.
func (c *Conn) snoopCopy(msg []byte) {
	if c.kind != ConnController {
		return
	}
	list := c.m.snoop.list.Load()
	if list == nil {
		return
	}
	for _, s := range *list {
		select {
		case s.send <- append([]byte(nil), msg...):
		default:
		}
	}
}
