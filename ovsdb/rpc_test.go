package ovsdb

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeServer accepts one connection on a unix socket and hands it to fn.
func fakeServer(t *testing.T, fn func(c net.Conn)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		fn(c)
	}()
	return "unix:" + path
}

func TestRPCEchoErrorsAndClose(t *testing.T) {
	echoed := make(chan string, 1)
	remote := fakeServer(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		dec := json.NewDecoder(r)
		// The server probes first: the client must answer with the same
		// params and id.
		c.Write([]byte(`{"id":"echo","method":"echo","params":["x",1]}`))
		var m map[string]json.RawMessage
		if dec.Decode(&m) != nil {
			return
		}
		echoed <- string(m["id"]) + " " + string(m["result"]) + " " + string(m["error"])
		// A request the server refuses, then one it answers.
		for _, reply := range []string{`"error":{"error":"unknown method"},"result":null`, `"result":{"ok":true},"error":null`} {
			var req map[string]json.RawMessage
			if dec.Decode(&req) != nil {
				return
			}
			c.Write([]byte(`{"id":` + string(req["id"]) + `,` + reply + `}`))
		}
		// Then it goes away.
	})
	notes := make(chan string, 1)
	conn, err := dialRPC(context.Background(), remote, nil, func(method string, _ json.RawMessage) { notes <- method })
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	select {
	case got := <-echoed:
		if got != `"echo" ["x",1] null` {
			t.Errorf("echo reply: %s", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no echo reply")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Call(ctx, "nonsense"); err == nil || !strings.Contains(err.Error(), "unknown method") {
		t.Errorf("an error reply: %v", err)
	}
	res, err := conn.Call(ctx, "list_dbs")
	if err != nil || string(res) != `{"ok":true}` {
		t.Errorf("a result: %s, %v", res, err)
	}
	select {
	case <-conn.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the connection's end was not noticed")
	}
	if _, err := conn.Call(ctx, "list_dbs"); err == nil {
		t.Error("a call on a closed connection succeeded")
	}
	if len(notes) != 0 {
		t.Errorf("an echo was passed on as a notification")
	}
}

func TestDialRPCBadRemote(t *testing.T) {
	for _, r := range []string{"db.sock", "ssl:1.2.3.4:6640", "unix:" + t.TempDir() + "/none.sock"} {
		if c, err := dialRPC(context.Background(), r, nil, nil); err == nil {
			c.Close()
			t.Errorf("dial %q succeeded", r)
		}
	}
}
