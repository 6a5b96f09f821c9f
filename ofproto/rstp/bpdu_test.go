package rstp

import (
	"bytes"
	"errors"
	"testing"
)

func TestDecodeRST(t *testing.T) {
	in := []byte{
		0x00, 0x00, // protocol identifier
		0x02,                                           // version 2
		0x02,                                           // type RST
		0x7e,                                           // flags: agreement, forwarding, learning, role designated, proposal
		0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xaa, // root ID 8.000.0000000000aa
		0x00, 0x00, 0x07, 0xd0, // root path cost 2000
		0x90, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xbb, // bridge ID 9.000.0000000000bb
		0x80, 0x02, // port ID 8002
		0x01, 0x00, // message age 1 s
		0x14, 0x00, // max age 20 s
		0x02, 0x00, // hello 2 s
		0x0f, 0x00, // forward delay 15 s
		0x00, // version 1 length
	}
	m, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	want := BPDU{Version: 2, Type: TypeRST, Flags: 0x7e, RootID: 0x8000_0000_0000_00aa, RootPathCost: 2000,
		BridgeID: 0x9000_0000_0000_00bb, PortID: 0x8002, MessageAge: 256, MaxAge: 20 * 256, HelloTime: 512,
		ForwardDelay: 15 * 256}
	if m != want {
		t.Fatalf("decoded %+v\nwant    %+v", m, want)
	}
	if m.Role() != wireRoleDesig {
		t.Errorf("role %d", m.Role())
	}
	if out := m.Append(nil); !bytes.Equal(out, in) {
		t.Errorf("append %x\nwant   %x", out, in)
	}
	if s := m.BridgeID.String(); s != "9.000.0000000000bb" {
		t.Errorf("ID string %q", s)
	}
}

func TestDecodeErrors(t *testing.T) {
	rst := (&BPDU{Version: 2, Type: TypeRST}).Append(nil)
	cfg := (&BPDU{Type: TypeConfig, Flags: 0xff}).Append(nil)
	for _, c := range []struct {
		name string
		in   []byte
		err  error
	}{
		{"runt", []byte{0, 0, 0}, ErrRunt},
		{"protocol", []byte{0, 1, 0, 0x80}, ErrProtocol},
		{"short config", make([]byte, 10), ErrSize},
		{"short RST", rst[:35], ErrSize},
		{"type", []byte{0, 0, 0, 0x03}, ErrType},
		{"tcn", []byte{0, 0, 0, 0x80}, nil},
		{"tcn padded", []byte{0, 0, 0, 0x80, 0, 0}, nil},
		{"config", cfg, nil},
		{"RST", rst, nil},
	} {
		if _, err := Decode(c.in); !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
	}
	// A Configuration BPDU keeps only TC and TCA of its flags.
	if m, _ := Decode(cfg); m.Flags != FlagTC|FlagTCA {
		t.Errorf("config flags %#x", m.Flags)
	}
}

func FuzzDecode(f *testing.F) {
	m := BPDU{Version: 2, Type: TypeRST, Flags: FlagProposal | wireRoleDesig<<flagRoleShift, RootID: 1, BridgeID: 2,
		PortID: 0x8001, MaxAge: 5120, HelloTime: 512, ForwardDelay: 3840}
	f.Add(m.Append(nil))
	f.Add((&BPDU{Type: TypeConfig, RootID: 1}).Append(nil))
	f.Add([]byte{0, 0, 0, 0x80})
	f.Add([]byte{0, 0, 2, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		out := m.Append(nil)
		if m.Type == TypeRST && !bytes.Equal(out[:35], b[:35]) || m.Type == TypeTCN && !bytes.Equal(out, b[:4]) {
			t.Fatalf("round trip %x -> %x", b, out)
		}
		// A bridge fed anything must not panic.
		br := New("fz", 1, func(*Port, []byte) {})
		p := br.AddPort(1)
		p.SetOperational(true)
		br.Receive(p, b)
		br.Tick(7000)
		br.Receive(p, b)
	})
}
