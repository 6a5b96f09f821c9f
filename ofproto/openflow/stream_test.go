package openflow

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// oneByteReader returns at most one byte per Read, the worst case for
// reassembly.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

func testStream(t testing.TB) ([]byte, [][]byte) {
	var msgs [][]byte
	for _, m := range []Msg{
		&Hello{Envelope: env13(1), Versions: VersionBitmap(Version10, Version13)},
		&EchoRequest{Envelope: env10(2), Data: bytes.Repeat([]byte{7}, 300)},
		&BarrierRequest{Envelope: env10(3)},
		&PacketOut{Envelope: env10(4), BufferID: NoBuffer, InPort: 1, Actions: []Action{Output(2, 0)}, Data: make([]byte, 1500)},
	} {
		b, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, b)
	}
	return bytes.Join(msgs, nil), msgs
}

func TestFramerReassembles(t *testing.T) {
	stream, want := testStream(t)
	for _, tc := range []struct {
		name string
		r    io.Reader
		max  int
	}{
		{"whole stream per read", bytes.NewReader(stream), 0},
		{"one byte per read", oneByteReader{bytes.NewReader(stream)}, 0},
		{"limit just fits", oneByteReader{bytes.NewReader(stream)}, 1500 + 16 + 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFramer(tc.max)
			for i, w := range want {
				got, err := f.ReadMsg(tc.r)
				if err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				if !bytes.Equal(got, w) {
					t.Fatalf("message %d: got % x, want % x", i, got, w)
				}
			}
			if _, err := f.ReadMsg(tc.r); err != io.EOF {
				t.Fatalf("after the last message: %v, want io.EOF", err)
			}
		})
	}
}

func TestFramerRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input []byte
		max   int
		want  error
	}{
		{"length below header", []byte{1, 0, 0, 7, 0, 0, 0, 1}, 0, ErrFrame},
		{"length zero", []byte{1, 0, 0, 0, 0, 0, 0, 1}, 0, ErrFrame},
		{"length above limit", []byte{1, 0, 0x01, 0x01, 0, 0, 0, 1}, 256, ErrFrame},
		{"truncated message", []byte{1, 0, 0, 16, 0, 0, 0, 1, 0, 0}, 0, io.ErrUnexpectedEOF},
		{"truncated header", []byte{1, 0, 0}, 0, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFramer(tc.max)
			_, err := f.ReadMsg(bytes.NewReader(tc.input))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if tc.want == ErrFrame {
				// The stream is unusable from now on, and says so.
				if _, err := f.Next(); !errors.Is(err, ErrFrame) {
					t.Fatalf("second Next: %v", err)
				}
				if len(f.Space()) != 0 {
					t.Fatal("Space after ErrFrame is not empty")
				}
			}
		})
	}
}

// TestFramerBounded: a peer announcing a huge message cannot make the
// Framer buffer more than its limit.
func TestFramerBounded(t *testing.T) {
	f := NewFramer(1024)
	if n := len(f.Space()); n != 1024 {
		t.Fatalf("buffer %d bytes, want 1024", n)
	}
	hdr := []byte{1, 2, 0x04, 0x00, 0, 0, 0, 1} // 1024-byte echo request
	copy(f.Space(), hdr)
	f.Commit(len(hdr))
	for f.Buffered() < 1024 {
		sp := f.Space()
		if len(sp) == 0 {
			t.Fatal("no space before the message completed")
		}
		n := copy(sp, make([]byte, 100))
		f.Commit(n)
	}
	m, err := f.Next()
	if err != nil || len(m) != 1024 {
		t.Fatalf("Next: %d bytes, %v", len(m), err)
	}
}

func TestFramerAllocs(t *testing.T) {
	stream, want := testStream(t)
	f := NewFramer(0)
	r := bytes.NewReader(stream)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(stream)
		for range want {
			if _, err := f.ReadMsg(r); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per stream, want 0", allocs)
	}
}
