package openflow

import (
	"testing"
)

// Encoders write into the caller's buffer and allocate nothing; match and
// action decoders into caller-owned values allocate nothing either. These
// are the paths a busy connection runs per message (packet-ins out,
// packet-outs and flow mods in).
func TestZeroAllocs(t *testing.T) {
	buf := make([]byte, 0, 4096)
	pin10 := &PacketIn{Envelope: env10(1), BufferID: NoBuffer, TotalLen: 64, InPort: 3, Data: make([]byte, 64)}
	pin13 := &PacketIn{Envelope: env13(1), BufferID: NoBuffer, TotalLen: 64, Match: inPortMatch(3), Data: make([]byte, 64)}
	pinNX := &PacketIn{Envelope: env10(1), NXM: true, BufferID: NoBuffer, TotalLen: 64, Match: inPortMatch(3), Data: make([]byte, 64)}
	fm10 := &FlowMod{Envelope: env10(1), Match: tcpMatch(), BufferID: NoBuffer, OutPort: PortAny,
		Instructions: Instructions{Apply: []Action{Output(1, 0), Resubmit(PortInPort, 2)}}}
	fm13 := &FlowMod{Envelope: env13(1), Match: oxmTCP(), BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny,
		Instructions: Instructions{Apply: []Action{Output(1, 0)}, GotoTable: true, Table: 1}}
	fmNX := &FlowMod{Envelope: env10(1), NXM: true, Match: richMatches()["ipv6 nd"], BufferID: NoBuffer, OutPort: PortAny,
		Instructions: Instructions{Apply: []Action{Output(1, 0)}}}
	fr := &FlowStatsReply{Envelope: env10(1), NXM: true, Stats: dumpFlows()}
	msgs := map[string]Msg{"packet-in 1.0": pin10, "packet-in 1.3": pin13, "packet-in NX": pinNX,
		"flow mod 1.0": fm10, "flow mod 1.3": fm13, "flow mod NX": fmNX, "NX flow stats reply": fr,
		"barrier": &BarrierReply{Envelope: env13(1)}, "echo": &EchoReply{Envelope: env10(1), Data: []byte("x")}}
	for name, m := range msgs {
		t.Run("append "+name, func(t *testing.T) {
			if _, err := m.Append(buf[:0]); err != nil {
				t.Fatal(err)
			}
			if n := testing.AllocsPerRun(100, func() { m.Append(buf[:0]) }); n != 0 {
				t.Fatalf("%v allocations", n)
			}
		})
	}
	nxm, _ := AppendNXM(nil, &fmNX.Match)
	oxm, _ := AppendOXM(nil, &fm13.Match)
	m10, _ := AppendMatch10(nil, &fm10.Match)
	acts, _ := AppendActions10(nil, fm10.Instructions.Apply)
	var m Match
	dst := make([]Action, 0, 8)
	for name, f := range map[string]func() error{
		"DecodeNXM":       func() error { return DecodeNXM(Version10, nxm, &m) },
		"DecodeOXM":       func() error { _, err := DecodeOXM(oxm, &m); return err },
		"DecodeMatch10":   func() error { return DecodeMatch10(m10, &m) },
		"DecodeActions10": func() error { _, err := DecodeActions10(dst[:0], acts); return err },
	} {
		t.Run(name, func(t *testing.T) {
			if err := f(); err != nil {
				t.Fatal(err)
			}
			if n := testing.AllocsPerRun(100, func() { f() }); n != 0 {
				t.Fatalf("%v allocations", n)
			}
		})
	}
}

func BenchmarkAppend(b *testing.B) {
	buf := make([]byte, 0, 4096)
	for name, m := range map[string]Msg{
		"PacketIn10":  &PacketIn{Envelope: env10(1), BufferID: NoBuffer, TotalLen: 128, InPort: 3, Data: make([]byte, 128)},
		"PacketIn13":  &PacketIn{Envelope: env13(1), BufferID: NoBuffer, TotalLen: 128, Match: inPortMatch(3), Data: make([]byte, 128)},
		"FlowMod10":   &FlowMod{Envelope: env10(1), Match: tcpMatch(), Instructions: Instructions{Apply: []Action{Output(1, 0)}}},
		"FlowMod13":   &FlowMod{Envelope: env13(1), Match: oxmTCP(), Instructions: Instructions{Apply: []Action{Output(1, 0)}}},
		"FlowModNXM":  &FlowMod{Envelope: env10(1), NXM: true, Match: richMatches()["ipv6 nd"], Instructions: Instructions{Apply: []Action{Output(1, 0)}}},
		"FlowStatsNX": &FlowStatsReply{Envelope: env10(1), NXM: true, Stats: dumpFlows()},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := m.Append(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for name, m := range map[string]Msg{
		"PacketOut10": &PacketOut{Envelope: env10(1), BufferID: NoBuffer, InPort: 1, Actions: []Action{Output(2, 0)}, Data: make([]byte, 128)},
		"FlowMod10":   &FlowMod{Envelope: env10(1), Match: tcpMatch(), Instructions: Instructions{Apply: []Action{Output(1, 0)}}},
		"FlowMod13":   &FlowMod{Envelope: env13(1), Match: oxmTCP(), Instructions: Instructions{Apply: []Action{Output(1, 0)}}},
		"FlowModNXM":  &FlowMod{Envelope: env10(1), NXM: true, Match: richMatches()["ipv6 nd"], Instructions: Instructions{Apply: []Action{Output(1, 0)}}},
	} {
		raw, err := m.Append(nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := Decode(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
