package openflow

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govswitch/govswitch/flow"
)

// fakeSwitch is the smallest OpenFlow switch that keeps ovs-ofctl happy,
// built only from this package: it answers handshakes, barriers and stats
// with canned replies and records every message it received, raw and
// decoded. It exists to hold the codec against the real ovs-ofctl.
type fakeSwitch struct {
	ln    net.Listener
	flows []FlowStats // returned by flow stats requests
	// rejectNX makes the switch refuse Nicira messages the way a switch
	// without the extensions does (OFPBRC_BAD_SUBTYPE).
	rejectNX bool

	mu   sync.Mutex
	got  [][]byte // raw messages, in arrival order over all connections
	msgs []Msg
	errs []error
	wg   sync.WaitGroup
}

func newFakeSwitch(t *testing.T) *fakeSwitch {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeSwitch{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				s.serve(c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *fakeSwitch) addr() string { return "tcp:" + s.ln.Addr().String() }

func (s *fakeSwitch) serve(c net.Conn) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	out, _ := (&Hello{Envelope: Envelope{Version: Version15},
		Versions: VersionBitmap(Version10, Version11, Version12, Version13, Version14, Version15)}).Append(nil)
	if _, err := c.Write(out); err != nil {
		return
	}
	f := NewFramer(0)
	var buf []byte
	for {
		raw, err := f.ReadMsg(c)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.record(nil, nil, err)
			}
			return
		}
		m, err := Decode(raw)
		s.record(raw, m, err)
		var reply Msg
		var perr *Error
		switch {
		case errors.As(err, &perr):
			reply = perr.Reply(raw)
		case err != nil:
			return
		default:
			reply = s.answer(m)
			s.mu.Lock()
			if _, ok := m.(*NXSetFlowFormat); ok && s.rejectNX {
				reply = (&Error{Version: Version10, Type: ErrTypeBadRequest, Code: BadRequestBadSubtype}).Reply(raw)
			}
			s.mu.Unlock()
		}
		if reply == nil {
			continue
		}
		if fs, ok := reply.(*FlowStatsReply); ok {
			buf, err = fs.AppendParts(buf[:0], 0) // dumps may need several parts
		} else {
			buf, err = reply.Append(buf[:0])
		}
		if err != nil {
			s.record(nil, nil, fmt.Errorf("encoding reply %T: %w", reply, err))
			return
		}
		if _, err := c.Write(buf); err != nil {
			return
		}
	}
}

func (s *fakeSwitch) record(raw []byte, m Msg, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if raw != nil {
		s.got = append(s.got, append([]byte(nil), raw...))
		s.msgs = append(s.msgs, m)
	}
	if err != nil {
		s.errs = append(s.errs, err)
	}
}

func testPorts() []Port {
	return []Port{
		{PortNo: 1, HWAddr: [6]byte{0x02, 0, 0, 0, 0, 1}, Name: "p1", Curr: 0x20, CurrSpeed: 1000000, MaxSpeed: 1000000},
		{PortNo: 2, HWAddr: [6]byte{0x02, 0, 0, 0, 0, 2}, Name: "p2", Curr: 0x20, CurrSpeed: 1000000, MaxSpeed: 1000000},
		{PortNo: PortLocal, HWAddr: [6]byte{0x02, 0, 0, 0, 0, 0xfe}, Name: "br0", Config: PortConfigDown},
	}
}

func (s *fakeSwitch) answer(m Msg) Msg {
	env := *m.Env()
	switch m := m.(type) {
	case *Hello:
		return nil
	case *EchoRequest:
		return &EchoReply{Envelope: env, Data: m.Data}
	case *FeaturesRequest:
		r := &FeaturesReply{Envelope: env, DatapathID: 0x0000aabbccddeeff, NBuffers: 0, NTables: 254,
			Capabilities: CapFlowStats | CapTableStats | CapPortStats}
		switch env.Version {
		case Version10:
			r.Actions, r.Ports = 0xfff, testPorts()
		case Version11, Version12:
			r.Ports = testPorts()
		}
		return r
	case *GetConfigRequest:
		return &GetConfigReply{Envelope: env, MissSendLen: 128}
	case *BarrierRequest:
		return &BarrierReply{Envelope: env}
	case *TableStatsRequest:
		r := &TableStatsReply{Envelope: env}
		for i := 0; i < 2; i++ {
			r.Stats = append(r.Stats, TableStats{TableID: uint8(i), Name: fmt.Sprintf("table%d", i),
				Wildcards: Wildcard10All, MaxEntries: 1000000, ActiveCount: 1, LookupCount: 10, MatchedCount: 5,
				V11: testTableStats11(env.Version)})
		}
		return r
	case *PortDescRequest:
		return &PortDescReply{Envelope: env, Ports: testPorts()}
	case *TableFeaturesRequest:
		r := &TableFeaturesReply{Envelope: env}
		// Instruction and action ids are (type, length 4) pairs.
		insts := []byte{0, 1, 0, 4, 0, 2, 0, 4, 0, 3, 0, 4, 0, 4, 0, 4, 0, 5, 0, 4}
		acts := []byte{0, 0, 0, 4, 0, 17, 0, 4, 0, 18, 0, 4, 0, 25, 0, 4}
		fieldHdrs := AppendOXMHeaders(nil, FieldInPort, FieldEthType, FieldVLANVID, FieldIPv6Src, FieldIPv6Dst)
		for i := 0; i < 2; i++ {
			r.Tables = append(r.Tables, TableFeatures{TableID: uint8(i), Name: fmt.Sprintf("table%d", i),
				MetadataMatch: ^uint64(0), MetadataWrite: ^uint64(0), MaxEntries: 1000000,
				Properties: []TableFeatureProp{
					{Type: TFPInstructions, Data: insts},
					{Type: TFPNextTables, Data: []byte{1}},
					{Type: TFPWriteActions, Data: acts},
					{Type: TFPApplyActions, Data: acts},
					{Type: TFPMatch, Data: fieldHdrs},
					{Type: TFPWildcards, Data: fieldHdrs},
					{Type: TFPWriteSetField, Data: fieldHdrs},
					{Type: TFPApplySetField, Data: fieldHdrs},
				}})
		}
		return r
	case *IPFIXStatsRequest:
		return ipfixStatsAnswer(m) // ipfix_stats_test.go
	case *FlowStatsRequest:
		s.mu.Lock()
		defer s.mu.Unlock()
		return &FlowStatsReply{Envelope: env, NXM: m.NXM, Stats: encodable(env, m.NXM, s.flows)}
	case *AggregateStatsRequest:
		s.mu.Lock()
		defer s.mu.Unlock()
		return &AggregateStatsReply{Envelope: env, NXM: m.NXM, PacketCount: 7, ByteCount: 700, FlowCount: uint32(len(s.flows))}
	case *PortStatsRequest:
		return &PortStatsReply{Envelope: env, Stats: []PortStats{{PortNo: 1, RxPackets: 11, TxPackets: 22, RxBytes: 1100, TxBytes: 2200}}}
	case *QueueStatsRequest:
		return &QueueStatsReply{Envelope: env, Stats: []QueueStats{{PortNo: 1, QueueID: 2, TxBytes: 3, TxPackets: 4,
			TxErrors: 5, DurationSec: 6, DurationNsec: 7}}}
	case *BundleControl:
		if m.Type%2 == 0 {
			return &BundleControl{Envelope: env, BundleID: m.BundleID, Type: m.Type + 1}
		}
	}
	return nil // flow mods, packet outs, NX settings: accepted silently
}

// ofctl runs ovs-ofctl against s and returns its stdout.
func (s *fakeSwitch) ofctl(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var full []string
	for _, a := range args {
		full = append(full, strings.ReplaceAll(a, "SW", s.addr()))
	}
	cmd := exec.CommandContext(ctx, "ovs-ofctl", full...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("ovs-ofctl %s: %v\n%s%s", strings.Join(full, " "), err, out, stderr)
	}
	return string(out)
}

// take returns and forgets the messages recorded so far, failing the test
// on any decode error.
func (s *fakeSwitch) take(t *testing.T) ([][]byte, []Msg) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, err := range s.errs {
		t.Errorf("fake switch: %v", err)
	}
	got, msgs := s.got, s.msgs
	s.got, s.msgs, s.errs = nil, nil, nil
	return got, msgs
}

func findMsg[T Msg](msgs []Msg) (T, int) {
	var zero T
	n := 0
	for _, m := range msgs {
		if x, ok := m.(T); ok {
			if n == 0 {
				zero = x
			}
			n++
		}
	}
	return zero, n
}

// capture is one recorded ovs-ofctl session, checked in under
// testdata/ovs-ofctl so that TestOvsOfctlCaptures runs without ovs-ofctl.
type capture struct {
	name string
	args []string
}

var ofctlCaptures = []capture{
	{"add-flow-of10", []string{"add-flow", "SW", "tcp,tp_dst=80,actions=output:2"}},
	{"add-flow-ipv6-nxm", []string{"add-flow", "SW", "ipv6,ipv6_src=2001:db8::1,actions=output:1"}},
	{"add-flow-table-resubmit", []string{"add-flow", "SW", "table=1,reg0=5,actions=resubmit(,2),load:0x7->NXM_NX_REG1[]"}},
	{"add-flow-of10-actions", []string{"add-flow", "SW",
		"priority=100,in_port=1,dl_vlan=10,dl_src=00:11:22:33:44:55,ip,nw_src=10.0.0.0/8,nw_tos=16," +
			"actions=mod_vlan_vid:20,mod_vlan_pcp:3,strip_vlan,mod_dl_src:00:00:00:00:00:01," +
			"mod_dl_dst:00:00:00:00:00:02,mod_nw_src:1.2.3.4,mod_nw_dst:5.6.7.8,mod_nw_tos:8," +
			"enqueue:3:7,output:NORMAL,FLOOD,ALL,CONTROLLER:64,LOCAL,IN_PORT"}},
	{"mod-flows-strict", []string{"mod-flows", "--strict", "SW", "priority=5,udp,tp_src=53,actions=drop"}},
	{"del-flows", []string{"del-flows", "SW", "arp,arp_tpa=10.0.0.1"}},
	{"del-flows-strict", []string{"del-flows", "--strict", "SW", "priority=5,icmp,icmp_type=8"}},
	{"dump-flows-nxm", []string{"dump-flows", "SW"}},
	{"dump-aggregate", []string{"dump-aggregate", "SW"}},
	{"dump-ports", []string{"dump-ports", "SW", "1"}},
	{"show-of10", []string{"show", "SW"}},
	{"packet-out-of10", []string{"packet-out", "SW", "1", "output:2", "ffffffffffff00000000000108060001080006040001000000000001c0a80001000000000000c0a80002"}},
	{"of13-add-flow", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"table=0,priority=10,ipv6,ipv6_dst=2001:db8::/32,dl_vlan=7,actions=push_vlan:0x8100,set_field:5->vlan_vid,write_metadata:0x1/0xff,goto_table:1"}},
	{"of13-dump-flows", []string{"-O", "OpenFlow13", "dump-flows", "SW"}},
	{"of13-show", []string{"-O", "OpenFlow13", "show", "SW"}},
	{"of13-dump-ports-desc", []string{"-O", "OpenFlow13", "dump-ports-desc", "SW"}},
	{"add-flows-file", []string{"add-flows", "SW", "testdata/ovs-ofctl/flows.txt"}},
	{"dump-tables", []string{"dump-tables", "SW"}},
	{"dump-ports-desc", []string{"dump-ports-desc", "SW"}},
	{"of13-dump-tables", []string{"-O", "OpenFlow13", "dump-tables", "SW"}},
	{"of13-dump-ports", []string{"-O", "OpenFlow13", "dump-ports", "SW"}},
	{"of13-del-flows", []string{"-O", "OpenFlow13", "del-flows", "SW", "table=1,ipv6,ipv6_src=::1,out_port=2"}},
	{"of13-packet-out", []string{"-O", "OpenFlow13", "packet-out", "SW", "LOCAL", "output:1",
		"ffffffffffff00000000000108060001080006040001000000000001c0a80001000000000000c0a80002"}},
	{"of14-show", []string{"-O", "OpenFlow14", "show", "SW"}},
	{"of14-queue-stats", []string{"-O", "OpenFlow14", "queue-stats", "SW"}},
	{"of15-show", []string{"-O", "OpenFlow15", "show", "SW"}},
	{"of14-add-flow", []string{"-O", "OpenFlow14", "add-flow", "SW",
		"table=1,importance=7,priority=10,tcp,tp_dst=443,actions=set_field:10.0.0.1->ip_dst,output:2"}},
	{"of15-add-flow", []string{"-O", "OpenFlow15", "add-flow", "SW",
		"table=0,priority=10,ipv6,ipv6_dst=2001:db8::/32,actions=push_vlan:0x8100,set_field:5->vlan_vid,goto_table:1"}},
	{"of14-dump-flows", []string{"-O", "OpenFlow14", "dump-flows", "SW"}},
	{"of15-dump-flows", []string{"-O", "OpenFlow15", "dump-flows", "SW"}},
	{"of15-dump-aggregate", []string{"-O", "OpenFlow15", "dump-aggregate", "SW"}},
	{"of14-dump-ports", []string{"-O", "OpenFlow14", "dump-ports", "SW"}},
	{"of15-dump-ports-desc", []string{"-O", "OpenFlow15", "dump-ports-desc", "SW"}},
	{"of15-del-flows", []string{"-O", "OpenFlow15", "del-flows", "SW", "table=1,ipv6,ipv6_src=::1,out_port=2"}},
	{"of15-packet-out", []string{"-O", "OpenFlow15", "packet-out", "SW",
		"in_port=1 packet=ffffffffffff00000000000108060001080006040001000000000001c0a80001000000000000c0a80002 actions=output:2"}},
	{"of14-mod-port", []string{"-O", "OpenFlow14", "mod-port", "SW", "p1", "down"}},
	{"of14-bundle-add-flows", []string{"-O", "OpenFlow14", "--bundle", "add-flows", "SW", "testdata/ovs-ofctl/flows.txt"}},
	{"of13-bundle-add-flows", []string{"-O", "OpenFlow13", "--bundle", "add-flows", "SW", "testdata/ovs-ofctl/flows.txt"}},
	{"of15-bundle-replace-flows", []string{"-O", "OpenFlow15", "--bundle", "replace-flows", "SW", "testdata/ovs-ofctl/flows.txt"}},
	// Registers as OVN uses them: xreg/xxreg matches, set_field, load and
	// move, in 1.3 and 1.0.
	{"of13-add-flow-regs", []string{"-O", "OpenFlow13", "add-flow", "SW",
		"table=1,xreg1=0x1,xxreg1=0x10000000200000003/0xffffffffffffffffffffffff,actions=set_field:0x1->xreg1," +
			"set_field:0xa000000000000000000000000000001->xxreg0,load:0x1->NXM_NX_XXREG1[64..95],load:5->OXM_OF_PKT_REG2[]," +
			"move:NXM_NX_XXREG0[0..63]->OXM_OF_PKT_REG3[],move:NXM_NX_REG14[0..15]->NXM_NX_REG15[16..31],resubmit(,2)"}},
	{"add-flow-regs", []string{"add-flow", "SW",
		"table=1,ip,reg3=0x5,actions=set_field:0x1->xreg1,set_field:0xa000000000000000000000000000001->xxreg0," +
			"move:NXM_OF_IP_SRC[]->NXM_NX_REG0[],move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],output:1"}},
	// Conntrack: ct with every option, nat, ct_clear and the ct_* matches.
	{"add-flows-ct", []string{"add-flows", "SW", "testdata/ovs-ofctl/ct-flows.txt"}},
	{"of13-add-flows-ct", []string{"-O", "OpenFlow13", "add-flows", "SW", "testdata/ovs-ofctl/ct-flows.txt"}},
	{"add-flows-ct-tuple", []string{"add-flows", "SW", "testdata/ovs-ofctl/ct-tuple-flows.txt"}},
	{"of13-add-flows-ct-tuple", []string{"-O", "OpenFlow13", "add-flows", "SW", "testdata/ovs-ofctl/ct-tuple-flows.txt"}},
	// learn and learn2 with every option and spec kind (learn_test.go).
	{"add-flows-learn", []string{"add-flows", "SW", "testdata/ovs-ofctl/learn-flows.txt"}},
	{"of13-add-flows-learn", []string{"-O", "OpenFlow13", "add-flows", "SW", "testdata/ovs-ofctl/learn-flows.txt"}},
	// conjunction and conj_id (conj_test.go).
	{"add-flows-conj", []string{"add-flows", "SW", "testdata/ovs-ofctl/conj-flows.txt"}},
	{"of13-add-flows-conj", []string{"-O", "OpenFlow13", "add-flows", "SW", "testdata/ovs-ofctl/conj-flows.txt"}},
	// output:field (outputreg_test.go).
	{"add-flow-output-reg", []string{"add-flow", "SW", "actions=output:NXM_NX_REG0[0..15],output:NXM_NX_REG3[16..31],output:NXM_OF_IN_PORT[]"}},
	{"of13-add-flow-output-reg", []string{"-O", "OpenFlow13", "add-flow", "SW", "actions=output:NXM_NX_REG0[0..15],output:NXM_NX_REG3[16..31],output:NXM_OF_IN_PORT[]"}},
	{"add-flow-exit", []string{"add-flow", "SW", "actions=output:2,exit,output:3"}},
	{"of13-add-flow-exit", []string{"-O", "OpenFlow13", "add-flow", "SW", "actions=output:2,exit"}},
}

func dumpFlows() []FlowStats {
	var tcp, v6 FlowStats
	tcp.TableID, tcp.Priority, tcp.DurationSec, tcp.PacketCount, tcp.ByteCount = 0, 300, 4, 10, 600
	tcp.Cookie = 0x1234
	tcp.Match.Key.EthType, tcp.Match.Mask.EthType = flow.EthTypeIPv4, 0xffff
	tcp.Match.Key.NwProto, tcp.Match.Mask.NwProto = flow.IPProtoTCP, 0xff
	tcp.Match.Key.TpDst, tcp.Match.Mask.TpDst = 80, 0xffff
	tcp.Instructions.Apply = []Action{Output(2, 0)}
	v6.TableID, v6.Priority = 1, 32768
	v6.Match.Key.EthType, v6.Match.Mask.EthType = flow.EthTypeIPv6, 0xffff
	v6.Match.Key.IPv6Src = [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}
	v6.Match.Mask.IPv6Src = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	v6.Match.Key.Regs[0], v6.Match.Mask.Regs[0] = 5, 0xffffffff
	v6.Instructions.Apply = []Action{Resubmit(PortInPort, 2), Output(PortController, 0xffff)}
	return []FlowStats{tcp, v6}
}

// TestOvsOfctl drives the real ovs-ofctl against a fake switch built from
// this codec: everything ovs-ofctl sends must decode, and what it prints
// from our replies must be what we encoded. With OFCTL_RECORD=1 it also
// rewrites the captures under testdata/ovs-ofctl.
func TestOvsOfctl(t *testing.T) {
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		t.Skip("ovs-ofctl not installed")
	}
	s := newFakeSwitch(t)
	s.flows = dumpFlows()
	outputs := map[string]string{}
	for _, c := range ofctlCaptures {
		outputs[c.name] = s.ofctl(t, c.args...)
		raw, _ := s.take(t)
		if os.Getenv("OFCTL_RECORD") == "1" {
			writeCapture(t, c, raw)
		}
	}
	// What ovs-ofctl printed from our replies.
	// A dump bigger than one message: split replies, all of them printed.
	s.mu.Lock()
	s.flows = manyFlows(3000)
	s.mu.Unlock()
	for _, args := range [][]string{{"dump-flows", "SW"}, {"-O", "OpenFlow13", "dump-flows", "SW"}} {
		out := s.ofctl(t, args...)
		s.take(t)
		if n := strings.Count(out, " cookie="); n != 3000 {
			t.Errorf("%v printed %d flows, want 3000", args, n)
		}
		if !strings.Contains(out, "priority=2999,ip,nw_dst=10.0.11.183 actions=output:24") {
			t.Errorf("%v: last flow missing", args)
		}
	}
	// The fallback: a switch that answers NXT_SET_FLOW_FORMAT with
	// BAD_REQUEST/BAD_SUBTYPE gets a plain OpenFlow 1.0 flow stats request.
	s.mu.Lock()
	s.rejectNX, s.flows = true, dumpFlows()[:1]
	s.mu.Unlock()
	out := s.ofctl(t, "dump-flows", "SW")
	_, msgs := s.take(t)
	if r, n := findMsg[*FlowStatsRequest](msgs); n != 1 || r.NXM {
		t.Errorf("after BAD_SUBTYPE ovs-ofctl sent %d flow stats requests (%+v), want one plain 1.0 request", n, r)
	}
	if !strings.Contains(out, "OFPST_FLOW reply") || !strings.Contains(out, "priority=300,tcp,tp_dst=80 actions=output:2") {
		t.Errorf("fallback dump-flows printed:\n%s", out)
	}
	for _, tc := range []struct{ name, want string }{
		{"dump-flows-nxm", "cookie=0x1234, duration=4s, table=0, n_packets=10, n_bytes=600, priority=300,tcp,tp_dst=80 actions=output:2"},
		{"dump-flows-nxm", "table=1, n_packets=0, n_bytes=0, ipv6,reg0=0x5,ipv6_src=2001:db8::1 actions=resubmit(,2),CONTROLLER:65535"},
		{"of13-dump-flows", "priority=300,tcp,tp_dst=80 actions=output:2"},
		{"of13-dump-flows", "ipv6,reg0=0x5,ipv6_src=2001:db8::1 actions=resubmit(,2),CONTROLLER:65535"},
		{"dump-aggregate", "packet_count=7 byte_count=700 flow_count=2"},
		{"dump-ports", "port  1: rx pkts=11, bytes=1100"},
		{"show-of10", "dpid:0000aabbccddeeff"},
		{"show-of10", "1(p1): addr:02:00:00:00:00:01"},
		{"show-of10", "LOCAL(br0): addr:02:00:00:00:00:fe"},
		{"of13-show", "dpid:0000aabbccddeeff"},
		{"of13-show", "2(p2): addr:02:00:00:00:00:02"},
		{"of13-dump-ports-desc", "speed: 1000 Mbps now, 1000 Mbps max"},
		{"dump-tables", `table 0 ("table0"):`},
		{"dump-tables", "active=1, lookup=10, matched=5"},
		{"dump-ports-desc", "2(p2): addr:02:00:00:00:00:02"},
		{"of13-dump-tables", "active=1, lookup=10, matched=5"},
		{"of13-dump-ports", "port  1: rx pkts=11, bytes=1100"},
		{"of14-show", "2(p2): addr:02:00:00:00:00:02"},
		{"of14-queue-stats", "port 1 queue 2: bytes=3, pkts=4, errors=5, duration=6.000000007s"},
		{"of15-show", "OFPT_FEATURES_REPLY (OF1.5)"},
		{"of15-show", "speed: 1000 Mbps now, 1000 Mbps max"},
		{"of14-dump-flows", "priority=300,tcp,tp_dst=80 actions=output:2"},
		{"of15-dump-flows", "cookie=0x1234, duration=4s, table=0, n_packets=10, n_bytes=600, priority=300,tcp,tp_dst=80 actions=output:2"},
		{"of15-dump-flows", "ipv6,reg0=0x5,ipv6_src=2001:db8::1 actions=resubmit(,2),CONTROLLER:65535"},
		{"of15-dump-aggregate", "packet_count=7 byte_count=700 flow_count=2"},
		{"of14-dump-ports", "port  1: rx pkts=11, bytes=1100"},
		{"of15-dump-ports-desc", "LOCAL(br0): addr:02:00:00:00:00:fe"},
	} {
		if !strings.Contains(outputs[tc.name], tc.want) {
			t.Errorf("%s: output lacks %q:\n%s", tc.name, tc.want, outputs[tc.name])
		}
	}
}

// liveOrRecordCaptures sends each capture's command with the real
// ovs-ofctl to a fake switch and checks what it sent against the
// checked-in capture; with OFCTL_RECORD=1 it rewrites the captures.
func liveOrRecordCaptures(t *testing.T, cs []capture) {
	t.Helper()
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		t.Skip("ovs-ofctl not installed")
	}
	s := newFakeSwitch(t)
	for _, c := range cs {
		out := s.ofctl(t, c.args...)
		raw, _ := s.take(t)
		t.Logf("%s: %s", c.name, out)
		if os.Getenv("OFCTL_RECORD") == "1" {
			writeCapture(t, c, raw)
			continue
		}
		want := readCapture(t, c.name)
		if len(raw) != len(want) {
			t.Errorf("%s: ovs-ofctl sent %d messages, the capture has %d", c.name, len(raw), len(want))
			continue
		}
		for i := range raw {
			if !bytes.Equal(raw[i], want[i]) {
				t.Errorf("%s: message %d differs from the capture:\n got % x\nwant % x", c.name, i, raw[i], want[i])
			}
		}
	}
}

// recordOrCheckCaptures records the captures from the real ovs-ofctl when
// OFCTL_RECORD=1, then checks each: every message decodes and re-encodes
// to ovs-ofctl's bytes.
func recordOrCheckCaptures(t *testing.T, cs []capture) {
	t.Helper()
	if os.Getenv("OFCTL_RECORD") == "1" {
		if _, err := exec.LookPath("ovs-ofctl"); err != nil {
			t.Skip("ovs-ofctl not installed")
		}
		s := newFakeSwitch(t)
		for _, c := range cs {
			out := s.ofctl(t, c.args...)
			raw, _ := s.take(t)
			t.Logf("%s: %s", c.name, out)
			writeCapture(t, c, raw)
		}
	}
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			for i, raw := range readCapture(t, c.name) {
				m, err := Decode(raw)
				if err != nil {
					t.Fatalf("message %d (% x): %v", i, raw, err)
				}
				out, err := m.Append(nil)
				if err != nil {
					t.Fatalf("message %d (%T): re-encode: %v", i, m, err)
				}
				if !bytes.Equal(out, raw) {
					t.Errorf("message %d (%T) re-encodes differently:\n got % x\nwant % x", i, m, out, raw)
				}
			}
		})
	}
}

func writeCapture(t *testing.T, c capture, raw [][]byte) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# ovs-ofctl %s\n# recorded by TestOvsOfctl (OFCTL_RECORD=1) from ovs-ofctl 3.1; one message per line\n",
		strings.Join(c.args, " "))
	for _, m := range raw {
		sb.WriteString(hex.EncodeToString(m))
		sb.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join("testdata", "ovs-ofctl", c.name+".hex"), []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readCapture loads a checked-in capture.
func readCapture(t testing.TB, name string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "ovs-ofctl", name+".hex"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		b, err := hex.DecodeString(line)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}
