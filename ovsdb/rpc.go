package ovsdb

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
)

// rpcConn is one JSON-RPC 1.0 connection to ovsdb-server (RFC 7047 §4):
// requests with their replies matched by id, the server's echo requests
// answered, and its notifications handed to a callback. libovsdb's own
// client is not used: it links a metrics stack and a test library into the
// daemon (megabytes of resident binary for a switch), and v0.7.0's
// inactivity check and reconnect backoff can deadlock or panic. The
// database model, the row cache and the OVSDB types are still libovsdb's.
type rpcConn struct {
	c      net.Conn
	notify func(method string, params json.RawMessage)

	wmu sync.Mutex // serialises writes
	enc *json.Encoder

	mu    sync.Mutex
	next  uint64
	calls map[uint64]chan rpcReply
	err   error // why the connection ended; set once

	done chan struct{} // closed when the reader exits
}

type rpcReply struct {
	result json.RawMessage
	err    error
}

// rpcMessage is any JSON-RPC 1.0 message: a request or notification
// (method set) or a reply (result or error set).
type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// dialRPC connects to remote ("unix:PATH", "tcp:HOST:PORT", or
// "ssl:HOST:PORT" with tlsConf, which may not be nil then) and starts
// reading. notify receives the server's notifications ("update") on the
// reader goroutine.
func dialRPC(ctx context.Context, remote string, tlsConf *tls.Config, notify func(string, json.RawMessage)) (*rpcConn, error) {
	network, addr, ok := strings.Cut(remote, ":")
	switch {
	case !ok:
		return nil, fmt.Errorf("remote %q: want unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT", remote)
	case network == "unix", network == "tcp":
	case network == "ssl" && tlsConf != nil:
	case network == "ssl":
		return nil, fmt.Errorf("remote %q: ssl: needs a private key, certificate and CA certificate", remote)
	default:
		return nil, fmt.Errorf("remote %q: want unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT", remote)
	}
	var c net.Conn
	var err error
	if network == "ssl" {
		d := tls.Dialer{Config: tlsConf}
		c, err = d.DialContext(ctx, "tcp", addr)
	} else {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
	}
	if err != nil {
		return nil, err
	}
	r := &rpcConn{c: c, notify: notify, enc: json.NewEncoder(c), calls: map[uint64]chan rpcReply{},
		done: make(chan struct{})}
	go r.read()
	return r, nil
}

// Done is closed when the connection has ended.
func (r *rpcConn) Done() <-chan struct{} { return r.done }

// Err returns why the connection ended (nil while it is up).
func (r *rpcConn) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Close ends the connection; calls in progress fail.
func (r *rpcConn) Close() error {
	err := r.c.Close()
	<-r.done
	return err
}

func (r *rpcConn) write(m *rpcMessage) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return r.enc.Encode(m)
}

// Call sends a request and waits for its reply, ctx's end or the
// connection's. An error reply is returned as an error.
func (r *rpcConn) Call(ctx context.Context, method string, params ...any) (json.RawMessage, error) {
	if params == nil {
		params = []any{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	ch := make(chan rpcReply, 1)
	r.mu.Lock()
	if r.err != nil {
		err := r.err
		r.mu.Unlock()
		return nil, err
	}
	r.next++
	id := r.next
	r.calls[id] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.calls, id)
		r.mu.Unlock()
	}()
	idJSON, _ := json.Marshal(id)
	if err := r.write(&rpcMessage{ID: idJSON, Method: method, Params: p}); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	var rep rpcReply
	select {
	case rep = <-ch:
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	case <-r.done:
		// The reader hands a reply over before it closes done, so a
		// reply that came just before the end is there: select picks at
		// random among ready cases, and must not lose it.
		select {
		case rep = <-ch:
		default:
			return nil, fmt.Errorf("%s: %w", method, r.Err())
		}
	}
	if rep.err != nil {
		return nil, fmt.Errorf("%s: %w", method, rep.err)
	}
	return rep.result, nil
}

// errClosed is the error of a connection that ended without a read error.
var errClosed = errors.New("connection closed")

func (r *rpcConn) read() {
	dec := json.NewDecoder(r.c)
	var err error
	for {
		var m rpcMessage
		if err = dec.Decode(&m); err != nil {
			break
		}
		if m.Method != "" {
			r.request(&m)
			continue
		}
		var id uint64
		if json.Unmarshal(m.ID, &id) != nil {
			continue // a reply to nothing we sent
		}
		rep := rpcReply{result: m.Result}
		if len(m.Error) > 0 && string(m.Error) != "null" {
			rep.err = fmt.Errorf("ovsdb-server: %s", m.Error)
		}
		r.mu.Lock()
		ch := r.calls[id]
		r.mu.Unlock()
		if ch != nil {
			select {
			case ch <- rep: // buffered for the one reply the call waits for
			default: // a second reply to the same id: a confused server, not a reason to hang
			}
		}
	}
	r.c.Close()
	r.mu.Lock()
	if err == nil {
		err = errClosed
	}
	r.err = err
	r.mu.Unlock()
	close(r.done)
}

// request handles a request or notification from the server.
func (r *rpcConn) request(m *rpcMessage) {
	switch m.Method {
	case "echo":
		// Answer the server's inactivity probe with its own parameters.
		params := m.Params
		if len(params) == 0 {
			params = json.RawMessage("[]")
		}
		_ = r.write(&rpcMessage{ID: m.ID, Result: params, Error: json.RawMessage("null")})
	default:
		if r.notify != nil {
			r.notify(m.Method, m.Params)
		}
	}
}
