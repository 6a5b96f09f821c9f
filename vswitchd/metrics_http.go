package vswitchd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// metricsServer answers HTTP/1.x scrapes of /metrics itself, one request
// per connection. A scrape is a GET of one path; net/http's server would
// add about a megabyte of resident binary to a daemon whose footprint is
// a benchmark target (bench/RESULTS.md, "Memory"), for features a scraper
// does not use. What it does: GET and HEAD of /metrics (any query) with
// Content-Length and Connection: close; 404 for other paths, 405 with
// Allow for other methods, 400 for what does not parse; a request line
// and headers of at most 16 KiB, read within 10 s.
type metricsServer struct {
	ln     net.Listener
	render func() []byte
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

const (
	metricsReqLimit = 16 << 10
	metricsTimeout  = 10 * time.Second
)

func newMetricsServer(ln net.Listener, render func() []byte) *metricsServer {
	s := &metricsServer{ln: ln, render: render, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.serve()
	return s
}

func (s *metricsServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.handle(c)
			lingeringClose(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

// handle answers the one request of connection c.
func (s *metricsServer) handle(c net.Conn) {
	c.SetDeadline(time.Now().Add(metricsTimeout))
	r := bufio.NewReader(io.LimitReader(c, metricsReqLimit))
	line, err := r.ReadString('\n')
	if err != nil {
		return
	}
	method, target, proto, ok := parseRequestLine(line)
	if !ok {
		reply(c, "400 Bad Request", "", []byte("bad request\n"), true)
		return
	}
	// The headers: nothing in them changes the answer, but they must be
	// read (and end) before the reply.
	for {
		h, err := r.ReadString('\n')
		if err != nil {
			reply(c, "400 Bad Request", "", []byte("bad request\n"), true)
			return
		}
		if h == "\r\n" || h == "\n" {
			break
		}
	}
	path, _, _ := strings.Cut(target, "?")
	switch {
	case !strings.HasPrefix(proto, "HTTP/1."):
		reply(c, "505 HTTP Version Not Supported", "", nil, true)
	case path != "/metrics":
		reply(c, "404 Not Found", "", []byte("not found\n"), method != "HEAD")
	case method != "GET" && method != "HEAD":
		reply(c, "405 Method Not Allowed", "Allow: GET, HEAD\r\n", []byte("method not allowed\n"), true)
	default:
		reply(c, "200 OK", "Content-Type: "+textContentType+"\r\n", s.render(), method == "GET")
	}
}

// lingeringClose half-closes c and reads what the client still sends (a
// rejected request's rest) for a moment before the caller closes it: a
// close with unread input resets the connection, and the client would
// lose the reply.
func lingeringClose(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	tc.CloseWrite()
	tc.SetReadDeadline(time.Now().Add(time.Second))
	io.Copy(io.Discard, io.LimitReader(tc, 1<<20))
}

// parseRequestLine splits "METHOD TARGET HTTP/1.1\r\n".
func parseRequestLine(line string) (method, target, proto string, ok bool) {
	f := strings.Fields(line)
	if len(f) != 3 || !strings.HasPrefix(f[1], "/") {
		return "", "", "", false
	}
	return f[0], f[1], f[2], true
}

// reply writes a whole response; body goes out only when withBody (HEAD
// gets the headers of the GET it stands for).
func reply(w io.Writer, status, headers string, body []byte, withBody bool) {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "HTTP/1.1 %s\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n", status, headers, len(body))
	if withBody {
		bw.Write(body)
	}
	bw.Flush()
}

// Close stops accepting, ends connections in progress and waits for them.
func (s *metricsServer) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}
