package vswitchd

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func TestMetricsServerHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newMetricsServer(ln, func() []byte { return []byte("x_total 1\n") })
	defer s.Close()
	ask := func(req string) string {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("%.40q: %v", req, err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		req, status string
		body        string // "" for no body
	}{
		{"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n", "HTTP/1.1 200 OK", "x_total 1\n"},
		{"GET /metrics?name[]=x HTTP/1.0\r\n\r\n", "HTTP/1.1 200 OK", "x_total 1\n"},
		{"HEAD /metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 200 OK", ""},
		{"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 405 Method Not Allowed", "method not allowed\n"},
		{"GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found", "not found\n"},
		{"GET /metrics HTTP/2.0\r\n\r\n", "HTTP/1.1 505 HTTP Version Not Supported", ""},
		{"hello\r\n\r\n", "HTTP/1.1 400 Bad Request", "bad request\n"},
		// Headers past the limit never end: refused, not read for ever.
		{"GET /metrics HTTP/1.1\r\nX: " + strings.Repeat("a", metricsReqLimit) + "\r\n\r\n", "HTTP/1.1 400 Bad Request", "bad request\n"},
	} {
		got := ask(tc.req)
		head, body, ok := strings.Cut(got, "\r\n\r\n")
		if !ok || !strings.HasPrefix(head, tc.status+"\r\n") || body != tc.body {
			t.Errorf("%.40q: got %q, want %s with body %q", tc.req, got, tc.status, tc.body)
		}
		if !strings.Contains(head, "Connection: close") {
			t.Errorf("%.40q: no Connection: close in %q", tc.req, head)
		}
		if tc.status == "HTTP/1.1 200 OK" && !strings.Contains(head, "Content-Length: 10\r\n") {
			t.Errorf("%.40q: HEAD and GET must say the body's length: %q", tc.req, head)
		}
	}

	// A client that connects and says nothing does not hold Close up.
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	time.Sleep(50 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("Close waited for an idle connection")
	}
}
