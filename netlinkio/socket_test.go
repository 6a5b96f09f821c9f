package netlinkio

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMain fails the run if a test leaks a file descriptor.
func TestMain(m *testing.M) {
	// The runtime's poller opens its epoll and wakeup descriptors on first
	// use; open one socket first so they are in the baseline.
	if s, err := OpenSocket(); err == nil {
		s.Close()
	}
	before := countFDs()
	code := m.Run()
	if after := countFDs(); code == 0 && after > before {
		fmt.Fprintf(os.Stderr, "leaked %d file descriptors\n", after-before)
		code = 1
	}
	os.Exit(code)
}

func countFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}

// The generic netlink controller (nlctrl, family 0x10) answers any process,
// so the hot-path socket is tested against it without privilege.
const (
	ctrlFamily       = 0x10
	ctrlCmdGetFamily = 3
	ctrlAttrName     = 2
	ctrlVersion      = 2
)

func appendGetFamily(b *Batch, name string, flags uint16) int {
	buf := b.Begin(ctrlFamily, flags, ctrlCmdGetFamily, ctrlVersion)
	buf = AppendAttr(buf, ctrlAttrName, append([]byte(name), 0))
	return b.End(buf)
}

// familyName returns the CTRL_ATTR_FAMILY_NAME of a GETFAMILY reply.
func familyName(t *testing.T, reply []byte) string {
	t.Helper()
	cmd, _, attrs, ok := Genl(reply)
	if !ok {
		t.Fatalf("reply too short: % x", reply)
	}
	if cmd != 1 { // CTRL_CMD_NEWFAMILY
		t.Errorf("reply cmd = %d, want 1", cmd)
	}
	it := NewAttrIter(attrs)
	for it.Next() {
		if it.Type() == ctrlAttrName {
			return it.String()
		}
	}
	t.Fatalf("no family name in reply: %v", it.Err())
	return ""
}

func openSocket(t testing.TB) *Socket {
	t.Helper()
	s, err := OpenSocket()
	if err != nil {
		t.Fatalf("OpenSocket: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestBeginEndMessageGolden(t *testing.T) {
	b, start := BeginMessage(nil, 0x1d, FlagEcho, 1, 2)
	b = AppendU32(b, 3, 7)
	b = AppendU8(b, 4, 1)
	b = EndMessage(b, start)
	want := []byte{
		0x24, 0x00, 0x00, 0x00, // nlmsg_len 36
		0x1d, 0x00, // nlmsg_type: family 0x1d
		0x09, 0x00, // nlmsg_flags: NLM_F_REQUEST|NLM_F_ECHO
		0x00, 0x00, 0x00, 0x00, // nlmsg_seq: filled at send time
		0x00, 0x00, 0x00, 0x00, // nlmsg_pid: 0
		0x01,       // genl cmd
		0x02,       // genl version
		0x00, 0x00, // reserved
		0x08, 0x00, 0x03, 0x00, 0x07, 0x00, 0x00, 0x00, // u32 attr 3 = 7
		0x05, 0x00, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, // u8 attr 4 = 1, padded
	}
	if !bytes.Equal(b, want) {
		t.Errorf("got  % x\nwant % x", b, want)
	}
}

func TestMessageIter(t *testing.T) {
	msg := func(typ uint16, seq uint32, payload ...byte) []byte {
		b, start := BeginMessage(nil, typ, 0, 0, 0)
		b = b[:start+HeaderLen] // no genl header: a raw message
		b = append(b, payload...)
		b = EndMessage(b, start)
		b[start+8] = byte(seq)
		return b
	}
	two := append(msg(0x20, 1, 1, 2, 3), msg(TypeDone, 2)...)
	tests := []struct {
		name    string
		in      []byte
		types   []uint16
		wantErr bool
	}{
		{name: "empty", in: nil},
		{name: "two messages", in: two, types: []uint16{0x20, TypeDone}},
		{name: "short header", in: two[:10], wantErr: true},
		{name: "length past end", in: two[:HeaderLen+1], wantErr: true},
		{name: "length below header", in: []byte{4, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, wantErr: true},
		{name: "second truncated", in: two[:len(two)-1], types: []uint16{0x20}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var types []uint16
			it := NewMessageIter(tt.in)
			for it.Next() {
				types = append(types, it.Header().Type)
			}
			if fmt.Sprint(types) != fmt.Sprint(tt.types) {
				t.Errorf("types = %v, want %v", types, tt.types)
			}
			if (it.Err() != nil) != tt.wantErr {
				t.Errorf("err = %v, want error %v", it.Err(), tt.wantErr)
			}
		})
	}
}

func TestErrorCode(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want unix.Errno
	}{
		{"ack", []byte{0, 0, 0, 0}, 0},
		{"enoent", []byte{0xfe, 0xff, 0xff, 0xff}, unix.ENOENT},
		{"short", []byte{1}, unix.EBADMSG},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ErrorCode(tt.in); got != tt.want {
				t.Errorf("ErrorCode = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOpErrorIs(t *testing.T) {
	err := opError("transact", fmt.Errorf("wrapped: %w", unix.ENOENT))
	if !errors.Is(err, unix.ENOENT) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%v: errors.Is(ENOENT/ErrNotExist) false", err)
	}
	var oe *OpError
	if !errors.As(err, &oe) || oe.Op != "transact" || oe.Err != unix.ENOENT {
		t.Errorf("OpError = %#v, want Op transact, Err ENOENT unwrapped", oe)
	}
	if Errno(err) != unix.ENOENT {
		t.Errorf("Errno = %v", Errno(err))
	}
	if opError("x", nil) != nil {
		t.Error("opError(nil) != nil")
	}
}

func TestTransact(t *testing.T) {
	s := openSocket(t)
	var b Batch
	tests := []struct {
		name      string
		add       func() int
		wantErrno unix.Errno
		wantReply string // family name in the reply, "" for no reply
	}{
		{"get replies", func() int { return appendGetFamily(&b, "nlctrl", 0) }, 0, "nlctrl"},
		{"missing family", func() int { return appendGetFamily(&b, "no-such-family", FlagAck) }, unix.ENOENT, ""},
		{"noop silent", func() int { return b.End(b.Begin(TypeNoop, 0, 0, 0)) }, 0, ""},
		{"noop acked", func() int { return b.End(b.Begin(TypeNoop, FlagAck, 0, 0)) }, 0, ""},
		{"bad command", func() int { return b.End(b.Begin(ctrlFamily, 0, 200, 1)) }, unix.EOPNOTSUPP, ""},
		{"get again", func() int { return appendGetFamily(&b, "nlctrl", FlagEcho) }, 0, "nlctrl"},
	}
	idx := make([]int, len(tests))
	for i, tt := range tests {
		idx[i] = tt.add()
	}
	if err := s.Transact(&b); err != nil {
		t.Fatalf("Transact: %v", err)
	}
	if got := s.Stats().Sends; got != 1 {
		t.Errorf("sends = %d, want 1", got)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := b.Results()[idx[i]]
			if r.Errno != tt.wantErrno {
				t.Errorf("errno = %v, want %v", r.Errno, tt.wantErrno)
			}
			if tt.wantReply == "" {
				if r.Reply != nil {
					t.Errorf("unexpected reply % x", r.Reply)
				}
				return
			}
			if got := familyName(t, r.Reply); got != tt.wantReply {
				t.Errorf("reply family = %q, want %q", got, tt.wantReply)
			}
		})
	}
}

func TestTransactChunks(t *testing.T) {
	tests := []struct {
		name      string
		n         int
		wantSends uint64
	}{
		// Each request is 32 bytes: 3584/32 = 112 fit under BatchMaxBytes.
		{"one", 1, 1},
		{"one chunk", 112, 1},
		{"one over", 113, 2},
		{"three chunks", 300, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openSocket(t)
			var b Batch
			for range tt.n {
				appendGetFamily(&b, "nlctrl", 0)
			}
			if err := s.Transact(&b); err != nil {
				t.Fatal(err)
			}
			if got := s.Stats().Sends; got != tt.wantSends {
				t.Errorf("sends = %d, want %d", got, tt.wantSends)
			}
			for i, r := range b.Results() {
				if r.Errno != 0 || r.Reply == nil {
					t.Fatalf("result %d = %v, reply %d bytes", i, r.Errno, len(r.Reply))
				}
			}
		})
	}
}

func TestTransactChunkByCount(t *testing.T) {
	// Silent no-ops are 20 bytes: the message count, not the size, cuts.
	s := openSocket(t)
	var b Batch
	for range 3 * BatchMaxMessages {
		b.End(b.Begin(TypeNoop, 0, 0, 0))
	}
	if err := s.Transact(&b); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Sends; got != 3 {
		t.Errorf("sends = %d, want 3", got)
	}
}

func TestTransactErrorsOnly(t *testing.T) {
	// Silent no-ops and failing commands, errors only: every chunk is sent
	// before the replies are read, once, and each error lands on its own
	// request whichever chunk carried it.
	for _, rcvbuf := range []int{0, 1} {
		s := openSocket(t)
		if rcvbuf > 0 {
			// The smallest buffer the kernel allows: errors overflow it, and
			// the requests whose outcome was lost are sent again.
			if err := s.SetReceiveBuffer(rcvbuf); err != nil {
				t.Fatal(err)
			}
		}
		var b Batch
		b.ErrorsOnly = true
		const n = 3 * BatchMaxMessages
		bad := map[int]bool{}
		for i := range n {
			if i%7 == 3 {
				bad[b.End(b.Begin(ctrlFamily, 0, 200, 1))] = true // EOPNOTSUPP
			} else {
				b.End(b.Begin(TypeNoop, 0, 0, 0))
			}
		}
		if err := s.Transact(&b); err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		if rcvbuf == 0 && (st.Sends < 3 || st.Resends != 0) {
			t.Errorf("sends %d, resends %d: want at least 3 sends and no resend", st.Sends, st.Resends)
		}
		if rcvbuf > 0 && st.Resends == 0 {
			t.Errorf("rcvbuf %d: no resend, stats %+v", rcvbuf, st)
		}
		for i, r := range b.Results() {
			want := unix.Errno(0)
			if bad[i] {
				want = unix.EOPNOTSUPP
			}
			if r.Errno != want || r.Reply != nil {
				t.Fatalf("rcvbuf %d: result %d = %v with %d reply bytes, want %v", rcvbuf, i, r.Errno, len(r.Reply), want)
			}
		}
		b.Reset()
		if b.ErrorsOnly {
			t.Error("Reset kept ErrorsOnly")
		}
	}
}

func TestTransactResendsOnOverflow(t *testing.T) {
	s := openSocket(t)
	// The smallest buffer the kernel allows holds only a few replies.
	if err := s.SetReceiveBuffer(1); err != nil {
		t.Fatal(err)
	}
	var b Batch
	for range 100 {
		appendGetFamily(&b, "nlctrl", 0)
	}
	if err := s.Transact(&b); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Resends == 0 || st.Lost == 0 {
		t.Errorf("stats = %+v, want resends and lost after overflow", st)
	}
	for i, r := range b.Results() {
		if r.Errno != 0 || familyName(t, r.Reply) != "nlctrl" {
			t.Fatalf("result %d: errno %v, reply %d bytes", i, r.Errno, len(r.Reply))
		}
	}
}

func TestTransactStaleReplies(t *testing.T) {
	// Replies to a message sent outside a batch must not be taken as the
	// batch's.
	s := openSocket(t)
	var old Batch
	appendGetFamily(&old, "nlctrl", 0)
	if err := s.Send(old.buf); err != nil { // seq 0, never Transacted
		t.Fatal(err)
	}
	var b Batch
	appendGetFamily(&b, "no-such-family", 0)
	if err := s.Transact(&b); err != nil {
		t.Fatal(err)
	}
	if r := b.Results()[0]; r.Errno != unix.ENOENT || r.Reply != nil {
		t.Errorf("result = %v, %d reply bytes; want ENOENT, no reply", r.Errno, len(r.Reply))
	}
}

func TestTransactAllocs(t *testing.T) {
	s := openSocket(t)
	var b Batch
	run := func() {
		b.Reset()
		for range 8 {
			appendGetFamily(&b, "nlctrl", 0)
			b.End(b.Begin(TypeNoop, 0, 0, 0))
		}
		if err := s.Transact(&b); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if n := testing.AllocsPerRun(50, run); n != 0 {
		t.Errorf("Transact: %v allocs/op, want 0", n)
	}
}

func TestDump(t *testing.T) {
	s := openSocket(t)
	req := func() []byte {
		b, start := BeginMessage(nil, ctrlFamily, 0, ctrlCmdGetFamily, ctrlVersion)
		return EndMessage(b, start)
	}
	var names []string
	err := s.Dump(req(), func(p []byte) error {
		names = append(names, familyName(t, p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range names {
		found = found || n == "nlctrl"
	}
	if !found || len(names) < 2 {
		t.Errorf("dump families = %v, want nlctrl among several", names)
	}

	stop := errors.New("stop")
	calls := 0
	err = s.Dump(req(), func([]byte) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("Dump with failing fn = %v after %d calls, want stop after 1", err, calls)
	}
	// The rest of that dump was drained: a transaction sees only its own.
	var b Batch
	appendGetFamily(&b, "nlctrl", 0)
	if err := s.Transact(&b); err != nil || b.Results()[0].Errno != 0 {
		t.Errorf("Transact after aborted dump: %v %v", err, b.Results())
	}
	if err := s.Dump(req()[:10], nil); !errors.Is(err, unix.EINVAL) {
		t.Errorf("short request: %v, want EINVAL", err)
	}
}

// sendTo sends a datagram from one user socket to another's port.
func sendTo(t testing.TB, from *Socket, pid uint32, data []byte) {
	t.Helper()
	var err error
	cerr := from.rc.Control(func(fd uintptr) {
		err = unix.Sendto(int(fd), data, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Pid: pid})
	})
	if cerr != nil || err != nil {
		t.Fatalf("sendto: %v %v", cerr, err)
	}
}

func datagram(seq uint32, n int) []byte {
	b, start := BeginMessage(nil, 0x20, 0, 1, 1)
	b = append(b, make([]byte, n)...)
	b = EndMessage(b, start)
	b[start+8] = byte(seq)
	return b
}

// provoke makes the kernel send rx one datagram: a request to a generic
// netlink family that does not exist draws an error reply (sender port id
// 0) echoing the request, so its size grows with payload.
func provoke(t testing.TB, rx *Socket, payload int) {
	t.Helper()
	b, start := BeginMessage(nil, 0x7ff0, 0, 1, 1)
	b = append(b, make([]byte, payload)...)
	b = EndMessage(b, start)
	var err error
	cerr := rx.rc.Control(func(fd uintptr) {
		err = unix.Sendto(int(fd), b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
	})
	if cerr != nil || err != nil {
		t.Fatalf("sendto kernel: %v %v", cerr, err)
	}
}

// provokeBig makes the kernel send rx its description of the nlctrl
// family: a datagram of several hundred bytes.
func provokeBig(t testing.TB, rx *Socket) {
	t.Helper()
	b, start := BeginMessage(nil, ctrlFamily, 0, ctrlCmdGetFamily, ctrlVersion)
	b = AppendAttr(b, ctrlAttrName, []byte("nlctrl\x00"))
	b = EndMessage(b, start)
	var err error
	cerr := rx.rc.Control(func(fd uintptr) {
		err = unix.Sendto(int(fd), b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
	})
	if cerr != nil || err != nil {
		t.Fatalf("sendto kernel: %v %v", cerr, err)
	}
}

func TestRecvBatch(t *testing.T) {
	const big = -1 // in payloads: the large nlctrl reply instead of an error reply
	tests := []struct {
		name        string
		payloads    []int // requests that provoke kernel replies (see provoke, provokeBig)
		foreign     int   // user-space datagrams sent to rx first
		bufs        int   // buffers offered
		bufLen      int
		wantN       int // datagrams received by the first RecvBatch
		wantTrunc   uint64
		wantForeign uint64
	}{
		{"one", []int{10}, 0, 4, 1024, 1, 0, 0},
		{"all queued", []int{0, big, 100}, 0, 8, 4096, 3, 0, 0},
		{"more than bufs", []int{0, 0, 0}, 0, 2, 1024, 2, 0, 0},
		{"truncated dropped", []int{0, big, 4}, 0, 4, 64, 2, 1, 0},
		{"not from the kernel dropped", []int{8}, 3, 4, 1024, 1, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rx, tx := openSocket(t), openSocket(t)
			for i := 0; i < tt.foreign; i++ {
				sendTo(t, tx, rx.PID(), datagram(uint32(i), 16))
			}
			for _, n := range tt.payloads {
				if n == big {
					provokeBig(t, rx)
				} else {
					provoke(t, rx, n)
				}
			}
			bufs := make([][]byte, tt.bufs)
			for i := range bufs {
				bufs[i] = make([]byte, tt.bufLen)
			}
			sizes := make([]int, tt.bufs)
			n, err := rx.RecvBatch(bufs, sizes)
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.wantN {
				t.Errorf("received %d datagrams (sizes %v), want %d", n, sizes[:n], tt.wantN)
			}
			for i := range n {
				it := NewMessageIter(bufs[i][:sizes[i]])
				if !it.Next() || Align(int(it.Header().Len)) != sizes[i] {
					t.Errorf("buffer %d does not hold a whole message", i)
				}
			}
			if tt.name == "all queued" && n == 3 && !(sizes[1] > sizes[0] && sizes[1] > sizes[2]) {
				t.Errorf("sizes %v: the large reply is not in the middle, replies reordered", sizes[:n])
			}
			if got := rx.Stats().Truncated; got != tt.wantTrunc {
				t.Errorf("truncated = %d, want %d", got, tt.wantTrunc)
			}
			if got := rx.Stats().Foreign; got != tt.wantForeign {
				t.Errorf("foreign = %d, want %d", got, tt.wantForeign)
			}
		})
	}
}

func TestRecvBatchLostAndDeadline(t *testing.T) {
	rx := openSocket(t)
	if err := rx.SetReceiveBuffer(1); err != nil {
		t.Fatal(err)
	}
	// Provoke more kernel replies than the tiny buffer holds: the kernel
	// drops the rest and flags the socket with ENOBUFS, which RecvBatch
	// counts as lost and reads past.
	const asked = 200
	for i := 0; i < asked; i++ {
		provoke(t, rx, 1000)
	}
	bufs := [][]byte{make([]byte, 2048), make([]byte, 2048), make([]byte, 2048)}
	sizes := make([]int, 3)
	got := 0
	rx.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	for {
		n, err := rx.RecvBatch(bufs, sizes)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("RecvBatch: %v, want deadline exceeded", err)
			}
			break
		}
		got += n
	}
	if got == 0 || got == asked {
		t.Errorf("received %d of %d replies into a tiny buffer; want some but not all", got, asked)
	}
	if rx.Stats().Lost == 0 {
		t.Errorf("the kernel dropped %d replies but no loss was counted", asked-got)
	}
}

func TestRecvBatchCloseUnblocks(t *testing.T) {
	s, err := OpenSocket()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.RecvBatch([][]byte{make([]byte, 64)}, []int{0})
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	s.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("RecvBatch after Close returned nil error")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not unblock RecvBatch")
	}
}

func TestRecvBatchAllocs(t *testing.T) {
	rx := openSocket(t)
	bufs := [][]byte{make([]byte, 256), make([]byte, 256), make([]byte, 256), make([]byte, 256)}
	sizes := make([]int, 4)
	run := func() {
		for range 4 {
			provoke(t, rx, 64)
		}
		got := 0
		for got < 4 {
			n, err := rx.RecvBatch(bufs, sizes)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	}
	run()
	// provoke allocates (unix.Sendto); measure RecvBatch alone.
	var allocs float64
	for range 20 {
		// AllocsPerRun calls the function twice (a warm-up and the run).
		for range 8 {
			provoke(t, rx, 64)
		}
		allocs += testing.AllocsPerRun(1, func() {
			if _, err := rx.RecvBatch(bufs, sizes); err != nil {
				t.Fatal(err)
			}
		})
		for rx.drainForTest() {
		}
	}
	if allocs != 0 {
		t.Errorf("RecvBatch: %v allocs over 20 runs, want 0", allocs)
	}
}

// drainForTest reads one queued datagram without waiting.
func (s *Socket) drainForTest() bool {
	_, err := s.recv(make([]byte, 4096), true)
	return err == nil
}

func TestConnFamily(t *testing.T) {
	c, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tests := []struct {
		name    string
		family  string
		wantID  uint16
		wantErr error
	}{
		{"controller", "nlctrl", ctrlFamily, nil},
		{"missing", "no-such-family", 0, unix.ENOENT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := c.Family(tt.family)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Family(%q) err = %v, want %v", tt.family, err, tt.wantErr)
			}
			if f.ID != tt.wantID {
				t.Errorf("ID = %#x, want %#x", f.ID, tt.wantID)
			}
			if err == nil {
				if _, ok := f.Groups["notify"]; !ok {
					t.Errorf("groups %v lack nlctrl's notify", f.Groups)
				}
			}
		})
	}
	msgs, err := c.Execute("get nlctrl", Family{ID: ctrlFamily, Version: ctrlVersion}, ctrlCmdGetFamily, 0,
		AppendAttr(nil, ctrlAttrName, []byte("nlctrl\x00")))
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Execute: %d msgs, %v", len(msgs), err)
	}
	it := NewAttrIter(msgs[0])
	name := ""
	for it.Next() {
		if it.Type() == ctrlAttrName {
			name = it.String()
		}
	}
	if name != "nlctrl" {
		t.Errorf("Execute reply family %q", name)
	}
	_, err = c.Execute("get missing", Family{ID: ctrlFamily, Version: ctrlVersion}, ctrlCmdGetFamily, 0,
		AppendAttr(nil, ctrlAttrName, []byte("no-such\x00")))
	var oe *OpError
	if !errors.As(err, &oe) || oe.Op != "get missing" || !errors.Is(err, unix.ENOENT) {
		t.Errorf("Execute missing: %v, want OpError{get missing, ENOENT}", err)
	}
}
