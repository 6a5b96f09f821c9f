package openflow

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/flow"
)

// ethFrame builds a minimal Ethernet frame (an ARP request body).
func ethFrame(dst, src [6]byte) []byte {
	b := append(append([]byte{}, dst[:]...), src[:]...)
	b = append(b, 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1)
	b = append(b, src[:]...)
	b = append(b, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2)
	return b
}

// TestOvsTestcontroller plays a switch, built from this codec, against the
// real ovs-testcontroller (an L2 learning controller): handshake, then two
// packet-ins. The controller must flood the first (unknown destination)
// and, once it has learned the first host's port, answer the second with
// a flow mod and a packet out to that port. Everything it sends must
// decode. With OFCTL_RECORD=1 the sessions are recorded under
// testdata/ovs-testcontroller for TestOvsTestcontrollerCaptures.
func TestOvsTestcontroller(t *testing.T) {
	if _, err := exec.LookPath("ovs-testcontroller"); err != nil {
		t.Skip("ovs-testcontroller not installed")
	}
	for _, tc := range []struct {
		name    string
		version uint8
		proto   string
	}{
		{"of10", Version10, "OpenFlow10"},
		{"of13", Version13, "OpenFlow13"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raws := runTestcontroller(t, tc.version, tc.proto)
			if os.Getenv("OFCTL_RECORD") == "1" {
				writeCapture(t, capture{name: "../ovs-testcontroller/" + tc.name,
					args: []string{"(ovs-testcontroller -O " + tc.proto + " ptcp:PORT:127.0.0.1; we connect as the switch)"}}, raws)
			}
		})
	}
}

func runTestcontroller(t *testing.T, version uint8, proto string) [][]byte {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ovs-testcontroller", "-O", proto, "--no-chdir", "-vconsole:off",
		"ptcp:"+strconv.Itoa(port)+":127.0.0.1")
	// Its unixctl socket goes to $OVS_RUNDIR; keep it out of the system's.
	dir := t.TempDir()
	cmd.Env = append(os.Environ(), "OVS_RUNDIR="+dir, "OVS_LOGDIR="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	var c net.Conn
	for i := 0; ; i++ {
		if c, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			break
		}
		if i == 100 {
			t.Fatalf("ovs-testcontroller never listened: %v\n%s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))

	var buf []byte
	send := func(m Msg) {
		t.Helper()
		var err error
		if buf, err = m.Append(buf[:0]); err != nil {
			t.Fatalf("encode %T: %v", m, err)
		}
		if _, err := c.Write(buf); err != nil {
			t.Fatalf("write %T: %v", m, err)
		}
	}
	send(&Hello{Envelope: Envelope{Version: version}, Versions: VersionBitmap(version)})

	hostA, hostB := [6]byte{2, 0, 0, 0, 0, 0xa}, [6]byte{2, 0, 0, 0, 0, 0xb}
	bcast := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	packetIn := func(xid, inPort uint32, frame []byte) *PacketIn {
		p := &PacketIn{Envelope: Envelope{Version: version, Xid: xid}, BufferID: NoBuffer, TotalLen: uint16(len(frame)),
			InPort: inPort, Reason: PacketInNoMatch, Cookie: ^uint64(0), Data: frame}
		if version == Version13 {
			p.Match = inPortMatch(inPort)
		}
		return p
	}

	f := NewFramer(0)
	var raws [][]byte
	stage := 0 // 0 handshake, 1 sent flood-worthy packet-in, 2 sent learnable packet-in
	var flooded, learned, installed bool
	for !(learned && installed) {
		raw, err := f.ReadMsg(c)
		if err != nil {
			t.Fatalf("reading from ovs-testcontroller (stage %d): %v", stage, err)
		}
		raws = append(raws, append([]byte(nil), raw...))
		m, err := Decode(raw)
		if err != nil {
			t.Fatalf("decoding % x: %v", raw, err)
		}
		env := *m.Env()
		switch m := m.(type) {
		case *Hello:
			if v, ok := Negotiate(VersionBitmap(version), m); !ok || v != version {
				t.Fatalf("negotiated %d %v", v, ok)
			}
		case *EchoRequest:
			send(&EchoReply{Envelope: env, Data: m.Data})
		case *FeaturesRequest:
			r := &FeaturesReply{Envelope: env, DatapathID: 0xabcdef, NTables: 254,
				Capabilities: CapFlowStats | CapTableStats | CapPortStats}
			if version == Version10 {
				r.Actions, r.Ports = 0xfff, testPorts()
			}
			send(r)
		case *PortDescRequest:
			send(&PortDescReply{Envelope: env, Ports: testPorts()})
		case *GetConfigRequest:
			send(&GetConfigReply{Envelope: env, MissSendLen: 128})
		case *BarrierRequest:
			send(&BarrierReply{Envelope: env})
		case *SetConfig, *FlowMod:
			if fm, ok := m.(*FlowMod); ok && stage == 2 && fm.Command == FlowAdd {
				for _, a := range fm.Instructions.Apply {
					if a.Type == ActOutput && a.Port == 1 {
						installed = true
						if fm.Match.Key.EthDst != hostA && fm.Match.Mask.EthDst == exactMAC() {
							t.Errorf("learned flow matches %v", fm.Match.Key.EthDst)
						}
					}
				}
			}
		case *PacketOut:
			for _, a := range m.Actions {
				switch {
				case stage == 1 && a.Type == ActOutput && a.Port == PortFlood:
					flooded = true
				case stage == 2 && a.Type == ActOutput && a.Port == 1:
					learned = true
				}
			}
			if stage == 2 && m.BufferID == NoBuffer && len(m.Data) == 0 {
				t.Errorf("packet out without the packet: %+v", m)
			}
		}
		// Once the handshake is over, feed the controller traffic:
		// A→broadcast on port 1, and once that was flooded, B→A on port 2.
		if _, ok := m.(*SetConfig); ok && stage == 0 {
			stage = 1
			send(packetIn(100, 1, ethFrame(bcast, hostA)))
		}
		if stage == 1 && flooded {
			stage = 2
			send(packetIn(101, 2, ethFrame(hostA, hostB)))
		}
	}
	if !flooded {
		t.Error("the first packet was never flooded")
	}
	return raws
}

// TestOvsTestcontrollerCaptures decodes and byte-exactly re-encodes what
// ovs-testcontroller sent in the recorded sessions.
func TestOvsTestcontrollerCaptures(t *testing.T) {
	for _, name := range []string{"of10", "of13"} {
		t.Run(name, func(t *testing.T) {
			raws := readCapture(t, filepath.Join("..", "ovs-testcontroller", name))
			var kinds []string
			for i, raw := range raws {
				m, err := Decode(raw)
				if err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				out, err := m.Append(nil)
				if err != nil || string(out) != string(raw) {
					t.Errorf("message %d (%T) re-encodes as % x, %v\nwant % x", i, m, out, err, raw)
				}
				kinds = append(kinds, strings.TrimPrefix(fmt.Sprintf("%T", m), "*openflow."))
				if fm, ok := m.(*FlowMod); ok && fm.Command == FlowAdd && fm.Match.Mask.EthDst == exactMAC() {
					if fm.Match.Key.EthDst != [6]byte{2, 0, 0, 0, 0, 0xa} || fm.Match.Key.EthType != flow.EthTypeARP && fm.Match.Mask.EthType != 0 {
						t.Errorf("learned flow %+v", fm.Match)
					}
				}
			}
			t.Logf("ovs-testcontroller sent: %s", strings.Join(kinds, " "))
		})
	}
}
