// Package unixctl serves the control protocol of ovs-appctl: JSON-RPC 1.0
// over a Unix stream socket, one JSON object per message with no framing,
// string arguments, and a string result or a string error per request.
//
// A daemon registers commands with a name ("dpif/show"), a usage string
// and an argument count range, listens at <rundir>/<program>.<pid>.ctl and
// holds <rundir>/<program>.pid locked with a POSIX record lock (see
// Pidfile), which is how ovs-appctl finds its default target.
//
// Command handlers run on the connection's goroutine, so they must be safe
// for concurrent use: two ovs-appctl processes may run at once.
package unixctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
)

// Handler runs a command with its string arguments and returns the text
// ovs-appctl prints, or an error whose text ovs-appctl prints to stderr
// before exiting with status 2.
type Handler func(args []string) (string, error)

type command struct {
	usage    string
	min, max int
	fn       Handler
}

// Limits of one server. A request larger than MaxRequest closes its
// connection; connections beyond MaxConns are refused at accept.
const (
	MaxRequest = 1 << 20
	MaxConns   = 64
)

// Server is a unixctl server. The zero value is not usable; call
// NewServer.
type Server struct {
	mu       sync.RWMutex
	commands map[string]command

	ln      net.Listener
	wg      sync.WaitGroup
	connsMu sync.Mutex
	conns   map[net.Conn]bool // true while the connection runs a request
	closed  bool
}

// NewServer returns a server that knows the built-in commands
// list-commands, version (answering version) and set-options.
func NewServer(version string) *Server {
	s := &Server{commands: make(map[string]command), conns: make(map[net.Conn]bool)}
	s.Register("list-commands", "", 0, 0, s.listCommands)
	s.Register("version", "", 0, 0, func([]string) (string, error) { return version + "\n", nil })
	s.Register("set-options", "[--format text|json]", 1, 2, setOptions)
	return s
}

// Register adds or replaces the command name, taking between min and max
// arguments (max < 0 means no limit). usage is what list-commands shows.
func (s *Server) Register(name, usage string, min, max int, fn Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commands[name] = command{usage: usage, min: min, max: max, fn: fn}
}

// Run executes a command as if it came over the socket and returns its
// reply text or error. Tests and the daemon's own logging use it.
func (s *Server) Run(method string, args []string) (string, error) {
	s.mu.RLock()
	c, ok := s.commands[method]
	s.mu.RUnlock()
	switch {
	case !ok:
		return "", fmt.Errorf("%q is not a valid command (use \"list-commands\" to see a list of valid commands)", method)
	case len(args) < c.min:
		return "", fmt.Errorf("%q command requires at least %d arguments", method, c.min)
	case c.max >= 0 && len(args) > c.max:
		return "", fmt.Errorf("%q command takes at most %d arguments", method, c.max)
	}
	return c.fn(args)
}

func (s *Server) listCommands([]string) (string, error) {
	s.mu.RLock()
	names := make([]string, 0, len(s.commands))
	for n := range s.commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("The available commands are:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-23s %s\n", n, s.commands[n].usage)
	}
	s.mu.RUnlock()
	return b.String(), nil
}

func setOptions(args []string) (string, error) {
	if args[0] != "--format" || len(args) != 2 {
		return "", fmt.Errorf("invalid option %q", strings.Join(args, " "))
	}
	switch args[1] {
	case "text":
		return "", nil
	case "json":
		return "", errors.New("json output format is not supported")
	}
	return "", fmt.Errorf("unsupported output format %q", args[1])
}

// Listen creates the socket at path (removing a stale one), readable and
// writable by its owner only, and serves it until Close.
func (s *Server) Listen(path string) error {
	_ = os.Remove(path)
	old := umask(0o177)
	ln, err := net.Listen("unix", path)
	umask(old)
	if err != nil {
		return fmt.Errorf("unixctl listen %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("unixctl chmod %s: %w", path, err)
	}
	s.ln = ln
	s.wg.Add(1)
	go s.accept()
	return nil
}

// Addr returns the socket path, or "" before Listen.
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.connsMu.Lock()
		if s.closed || len(s.conns) >= MaxConns {
			s.connsMu.Unlock()
			c.Close()
			continue
		}
		s.conns[c] = false
		s.connsMu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

// Close stops listening, closes every idle connection, removes the socket
// and waits for the connection goroutines to end. A connection running a
// request is closed once its reply is written, so a command that asks the
// daemon to stop (exit) still gets its answer; a handler must therefore
// not wait for Close.
func (s *Server) Close() error {
	if s.ln == nil {
		return nil
	}
	path := s.ln.Addr().String()
	err := s.ln.Close()
	s.connsMu.Lock()
	s.closed = true
	for c, busy := range s.conns {
		if !busy {
			c.Close()
		}
	}
	s.connsMu.Unlock()
	s.wg.Wait()
	_ = os.Remove(path)
	return err
}

// request is a JSON-RPC 1.0 request. Params stay raw so a non-string
// argument can be reported as ovs-vswitchd reports it.
type request struct {
	ID     json.RawMessage   `json:"id"`
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

// reply is a JSON-RPC 1.0 response: exactly one of Result and Error is
// non-null, and nothing else may be present or ovs-appctl rejects it.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result *string         `json:"result"`
	Error  *string         `json:"error"`
}

// limitReader fails once more than MaxRequest bytes are read without a
// reset; the server resets it after each request, bounding the memory one
// client can make the decoder buffer.
type limitReader struct {
	r io.Reader
	n int
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("unixctl: request too large")
	}
	if len(p) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= n
	return n, err
}

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.connsMu.Lock()
		delete(s.conns, c)
		s.connsMu.Unlock()
		c.Close()
	}()
	lr := &limitReader{r: c, n: MaxRequest}
	dec := json.NewDecoder(lr)
	enc := json.NewEncoder(c)
	for {
		lr.n = MaxRequest + dec.Buffered().(*bytes.Reader).Len()
		var req request
		if err := dec.Decode(&req); err != nil {
			return // EOF, garbage or oversize: drop the connection
		}
		if req.Method == "" || req.ID == nil {
			return // not a request; OVS closes such connections too
		}
		if !s.setBusy(c, true) {
			return // closing: take no new request
		}
		rep := reply{ID: req.ID}
		text, err := s.handle(&req)
		if err != nil {
			e := withNewline(err.Error())
			rep.Error = &e
		} else {
			text = withNewline(text)
			rep.Result = &text
		}
		if err := enc.Encode(&rep); err != nil {
			return
		}
		if !s.setBusy(c, false) {
			return
		}
	}
}

// withNewline ends a non-empty reply with a newline, as ovs-vswitchd's
// unixctl does, so that ovs-appctl's output (and the error line it prints
// after a failure) ends its line.
func withNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}

// setBusy records whether c runs a request; false means the server is
// closing and the connection should end.
func (s *Server) setBusy(c net.Conn, busy bool) bool {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = busy
	return true
}

func (s *Server) handle(req *request) (string, error) {
	args := make([]string, 0, len(req.Params))
	for _, p := range req.Params {
		var a string
		if err := json.Unmarshal(p, &a); err != nil {
			return "", fmt.Errorf("%q command has non-string argument", req.Method)
		}
		args = append(args, a)
	}
	return s.Run(req.Method, args)
}
