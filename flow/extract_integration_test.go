package flow

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"math/rand/v2"

	"golang.org/x/sys/unix"
)

// TestIntegrationExtractKernel holds Extract against the kernel itself.
// Frames of every kind go into a veth whose peer is a port of a kernel
// datapath with no flows, so each one comes back as an OVS_PACKET_CMD_MISS
// upcall carrying the kernel's key and the frame; the key must equal
// Extract of the frame on every L2-L4 field, and every field Extract sets
// must be in the kernel's key.
//
// The datapath is made with ovs-dpctl; the upcalls are read with a bare
// generic netlink socket, so that the test depends on nothing of ours but
// Extract. It needs root and the openvswitch and veth modules, so it runs
// in the bed: scripts/kernel-test ./flow
func TestIntegrationExtractKernel(t *testing.T) {
	if os.Getenv("GOVSWITCH_BED") == "" {
		t.Skip("runs in the kernel bed: scripts/kernel-test ./flow")
	}
	const dp, port, peer = "xextract", "xv0", "xv1"
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("ip", "link", "add", port, "type", "veth", "peer", "name", peer)
	t.Cleanup(func() { exec.Command("ip", "link", "del", port).Run() })
	for _, dev := range []string{port, peer} {
		// No IPv6 autoconfiguration traffic of the guest's own.
		os.WriteFile("/proc/sys/net/ipv6/conf/"+dev+"/disable_ipv6", []byte("1"), 0)
		run("ip", "link", "set", dev, "up")
	}
	run("ovs-dpctl", "add-dp", dp)
	t.Cleanup(func() { exec.Command("ovs-dpctl", "del-dp", dp).Run() })
	run("ovs-dpctl", "add-if", dp, port)

	nl := openGenl(t)
	dpFamily := nl.family(t, "ovs_datapath")
	vportFamily := nl.family(t, "ovs_vport")
	packetFamily := nl.family(t, "ovs_packet")
	nl.perVportDispatch(t, dpFamily, dp)
	nl.setUpcallPID(t, vportFamily, port)

	// Frames: generated ones of every kind and the table cases, each with
	// a unique source MAC so that missing upcalls can be named.
	var frames [][]byte
	var names []string
	// Besides each generated frame, a copy cut at a random length and a
	// copy with a few header bytes changed, to hold the kernel's handling
	// of malformed frames too.
	r := rand.New(rand.NewPCG(genSeed, 2))
	for _, p := range genPackets(t, 30) {
		frames, names = append(frames, p.data), append(names, p.kind)
		cut := 14 + r.IntN(len(p.data)-14)
		frames, names = append(frames, append([]byte(nil), p.data[:cut]...)), append(names, p.kind+" cut")
		bad := append([]byte(nil), p.data...)
		for range 1 + r.IntN(3) {
			bad[12+r.IntN(min(len(bad)-12, 80))] ^= byte(1 + r.IntN(255))
		}
		frames, names = append(frames, bad), append(names, p.kind+" changed")
	}
	for _, c := range extractCases {
		if len(c.pkt) >= 14 { // a packet socket sends no less than a header
			frames, names = append(frames, append([]byte(nil), c.pkt...)), append(names, c.name)
		}
	}
	for i, f := range frames {
		copy(f[6:12], []byte{0x02, 0xee, 0, 0, byte(i >> 8), byte(i)})
	}
	sendFrames(t, peer, frames)

	seen := make([]bool, len(frames))
	compared := 0
	nl.upcalls(t, packetFamily, func(pkt, key []byte) {
		got, lostTPID, err := decodeODPKey(key)
		if err != nil {
			t.Errorf("upcall key %x: %v", key, err)
			return
		}
		i := -1
		if len(pkt) >= 12 && pkt[6] == 0x02 && pkt[7] == 0xee {
			i = int(pkt[10])<<8 | int(pkt[11])
		}
		if i < 0 || i >= len(frames) {
			return // not ours
		}
		seen[i] = true
		compared++
		want := Extract(pkt, Metadata{})
		m := ExactMask()
		for w := 0; w < StageEnd[0]; w++ {
			m.Words()[w] = 0 // metadata is the datapath's (in_port, ...)
		}
		if want.EthType == EthTypeIPv6 && want.IPv6Src == [16]byte{} && want.IPv6Dst == [16]byte{} && want.NwTTL == 0 {
			// An IPv6 header cut short: the kernel zeroes the addresses
			// but sends the flow label of its uninitialised stack key.
			m.IPv6Label = 0
		}
		if lostTPID {
			// The kernel's key has a VLAN TPID as its type (a tag too
			// short to parse, read as the type), but its netlink form
			// carries only a zero TCI and TPID for it.
			if want.EthType != EthTypeVLAN && want.EthType != EthTypeQinQ {
				t.Errorf("frame %d (%s) %x: the kernel saw a tag cut short, Extract has type %#04x", i, names[i], pkt, want.EthType)
			}
			m.EthType = 0
		}
		if !got.EqualMasked(&want, &m) {
			t.Errorf("frame %d (%s) %x: kernel key and Extract differ:\n%s", i, names[i], pkt, extractDiffKeys(&got, &want, &m))
		}
	})
	for i, ok := range seen {
		f := frames[i]
		if tpid := binary.BigEndian.Uint16(f[12:]); len(f) < 20 && (tpid == EthTypeVLAN || tpid == EthTypeQinQ) {
			// The receive path (skb_vlan_untag) drops a tagged frame
			// without 2 bytes after the tag's type before the datapath
			// sees it.
			if ok {
				t.Errorf("frame %d (%s) %x: a short tagged frame reached the datapath", i, names[i], f)
			}
			continue
		}
		if k := Extract(f, Metadata{}); k.EthType == EthTypeNSH {
			// The kernel drops an NSH frame it cannot key; ExtractNSH
			// says which (an untagged frame's: a tagged one is left
			// unchecked).
			if binary.BigEndian.Uint16(f[12:]) != EthTypeNSH {
				continue
			}
			var n NSH
			if !ExtractNSH(&n, f[14:]) {
				if ok {
					t.Errorf("frame %d (%s) %x: an NSH frame ExtractNSH does not key reached the datapath", i, names[i], f)
				}
				continue
			}
		}
		if !ok {
			t.Errorf("frame %d (%s) %x: no upcall", i, names[i], f)
		}
	}
	t.Logf("%d frames sent, %d kernel keys compared", len(frames), compared)
}

// sendFrames writes each frame into dev with a packet socket.
func sendFrames(t *testing.T, dev string, frames [][]byte) {
	t.Helper()
	ifc, err := net.InterfaceByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	proto := uint16(unix.ETH_P_ALL)<<8 | uint16(unix.ETH_P_ALL)>>8
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(proto))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	to := &unix.SockaddrLinklayer{Ifindex: ifc.Index, Protocol: proto}
	for i, f := range frames {
		if err := unix.Sendto(fd, f, 0, to); err != nil {
			t.Fatalf("send frame %d (%d bytes): %v", i, len(f), err)
		}
	}
}

// genlSock is a bare generic netlink socket.
type genlSock struct {
	fd  int
	pid uint32
	seq uint32
}

func openGenl(t *testing.T) *genlSock {
	t.Helper()
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	tv := unix.Timeval{Sec: 2}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	return &genlSock{fd: fd, pid: sa.(*unix.SockaddrNetlink).Pid}
}

func nlAttr(typ uint16, data []byte) []byte {
	b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(data)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// request sends one generic netlink request and returns the payload after
// the genl header of its first reply.
func (s *genlSock) request(t *testing.T, family uint16, cmd, version uint8, body []byte) []byte {
	t.Helper()
	s.seq++
	msg := binary.NativeEndian.AppendUint32(nil, uint32(16+4+len(body)))
	msg = binary.NativeEndian.AppendUint16(msg, family)
	msg = binary.NativeEndian.AppendUint16(msg, unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	msg = binary.NativeEndian.AppendUint32(msg, s.seq)
	msg = binary.NativeEndian.AppendUint32(msg, s.pid)
	msg = append(msg, cmd, version, 0, 0)
	msg = append(msg, body...)
	if err := unix.Sendto(s.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	var reply []byte
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(s.fd, buf, 0)
		if errors.Is(err, unix.EINTR) { // the Go runtime's signals interrupt blocking calls
			continue
		}
		if err != nil {
			t.Fatalf("netlink reply to command %d: %v", cmd, err)
		}
		for b := buf[:n]; len(b) >= 16; {
			l := int(binary.NativeEndian.Uint32(b))
			typ := binary.NativeEndian.Uint16(b[4:])
			seq := binary.NativeEndian.Uint32(b[8:])
			if l < 16 || l > len(b) {
				t.Fatalf("bad netlink message")
			}
			m := b[16:l]
			b = b[(l+3)&^3:]
			if seq != s.seq {
				continue
			}
			if typ == unix.NLMSG_ERROR {
				if errno := -int32(binary.NativeEndian.Uint32(m)); errno != 0 {
					t.Fatalf("netlink command %d: %v", cmd, unix.Errno(errno))
				}
				return reply
			}
			if reply == nil && len(m) >= 4 {
				reply = append([]byte(nil), m[4:]...)
			}
		}
	}
}

func nlAttrs(b []byte, fn func(typ uint16, data []byte) error) error {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b))
		typ := binary.NativeEndian.Uint16(b[2:]) & 0x3fff
		if l < 4 || l > len(b) {
			return errors.New("bad attribute length")
		}
		if err := fn(typ, b[4:l]); err != nil {
			return err
		}
		b = b[min((l+3)&^3, len(b)):]
	}
	return nil
}

func (s *genlSock) family(t *testing.T, name string) uint16 {
	t.Helper()
	const ctrlCmdGetFamily, ctrlAttrFamilyID, ctrlAttrFamilyName = 3, 1, 2
	reply := s.request(t, unix.GENL_ID_CTRL, ctrlCmdGetFamily, 1, nlAttr(ctrlAttrFamilyName, append([]byte(name), 0)))
	var id uint16
	nlAttrs(reply, func(typ uint16, data []byte) error {
		if typ == ctrlAttrFamilyID && len(data) >= 2 {
			id = binary.NativeEndian.Uint16(data)
		}
		return nil
	})
	if id == 0 {
		t.Fatalf("no generic netlink family %s", name)
	}
	return id
}

// perVportDispatch turns off per-CPU upcall dispatch on datapath dp, so
// that misses go to the socket of their vport.
func (s *genlSock) perVportDispatch(t *testing.T, family uint16, dp string) {
	t.Helper()
	const dpCmdSet, dpAttrName, dpAttrUserFeatures = 4, 1, 5
	const unaligned, vportPIDs = 1 << 0, 1 << 1
	body := make([]byte, 4) // struct ovs_header: dp_ifindex 0, found by name
	body = append(body, nlAttr(dpAttrName, append([]byte(dp), 0))...)
	body = append(body, nlAttr(dpAttrUserFeatures, binary.NativeEndian.AppendUint32(nil, unaligned|vportPIDs))...)
	s.request(t, family, dpCmdSet, 2, body)
}

// setUpcallPID points the misses of vport at this socket.
func (s *genlSock) setUpcallPID(t *testing.T, family uint16, vport string) {
	t.Helper()
	const vportCmdSet, vportAttrName, vportAttrUpcallPID = 4, 3, 5
	body := make([]byte, 4) // struct ovs_header: dp_ifindex 0, found by name
	body = append(body, nlAttr(vportAttrName, append([]byte(vport), 0))...)
	body = append(body, nlAttr(vportAttrUpcallPID, binary.NativeEndian.AppendUint32(nil, s.pid))...)
	s.request(t, family, vportCmdSet, 1, body)
}

// upcalls calls fn with the packet and key of each miss until none has
// come for the receive timeout.
func (s *genlSock) upcalls(t *testing.T, family uint16, fn func(pkt, key []byte)) {
	t.Helper()
	const packetCmdMiss, packetAttrPacket, packetAttrKey = 1, 1, 2
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(s.fd, buf, 0)
		if errors.Is(err, unix.EINTR) { // the Go runtime's signals interrupt blocking calls
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			return
		}
		if err != nil {
			t.Fatalf("receive upcall: %v", err)
		}
		for b := buf[:n]; len(b) >= 16; {
			l := int(binary.NativeEndian.Uint32(b))
			typ := binary.NativeEndian.Uint16(b[4:])
			if l < 16 || l > len(b) {
				t.Fatalf("bad netlink message")
			}
			m := b[16:l]
			b = b[min((l+3)&^3, len(b)):]
			if typ != family || len(m) < 8 || m[0] != packetCmdMiss {
				continue
			}
			var pkt, key []byte
			nlAttrs(m[8:], func(typ uint16, data []byte) error { // genl header, ovs_header
				switch typ {
				case packetAttrPacket:
					pkt = data
				case packetAttrKey:
					key = data
				}
				return nil
			})
			fn(pkt, key)
		}
	}
}

// decodeODPKey decodes the OVS_KEY_ATTR_* attributes of an upcall key, as
// the kernel writes them (net/openvswitch/flow_netlink.c), into a Key.
// lostTPID reports a VLAN level with a zero TCI: the kernel's key had a tag
// too short to parse, whose TPID it took as the type, but the attributes
// say only "ETHERTYPE 0, VLAN 0, empty ENCAP" (which OVS userspace rejects
// as an invalid ethertype), so k.EthType is not known.
func decodeODPKey(b []byte) (k Key, lostTPID bool, err error) {
	k.EthType = EthTypeNone // an 802.2 frame has no ETHERTYPE attribute
	err = decodeODPLevel(&k, b, 0, &lostTPID)
	if !(k.EthType == EthTypeIPv6 && k.NwProto == IPProtoICMPv6 && k.TpDst == 0 &&
		(k.TpSrc == ndSolicit || k.TpSrc == ndAdvert)) {
		// The kernel sends OVS_KEY_ATTR_ND for types 135 and 136 whatever
		// the code, filled only for code 0 (otherwise from its
		// uninitialised stack key); OVS userspace reads it only for code 0.
		k.NDTarget, k.NDSLL, k.NDTLL = [16]byte{}, [6]byte{}, [6]byte{}
	}
	return k, lostTPID, err
}

func decodeODPLevel(k *Key, b []byte, level int, lostTPID *bool) error {
	const (
		attrEncap, attrEthernet, attrVLAN, attrEthertype    = 1, 4, 5, 6
		attrIPv4, attrIPv6, attrTCP, attrUDP, attrICMP      = 7, 8, 9, 10, 11
		attrICMPv6, attrARP, attrND, attrSCTP, attrTCPFlags = 12, 13, 14, 17, 18
		attrMPLS, attrNSH                                   = 21, 28
		fragNone, fragFirst, fragLater                      = 0, 1, 2
	)
	frag := func(f uint8) uint8 {
		return map[uint8]uint8{fragNone: 0, fragFirst: FragAny, fragLater: FragAny | FragLater}[f]
	}
	var (
		typ     uint16
		hasType bool
		tci     uint16
		hasVLAN bool
		encap   []byte
	)
	short := func(name string, data []byte, n int) error {
		if len(data) < n {
			return fmt.Errorf("%s attribute of %d bytes", name, len(data))
		}
		return nil
	}
	err := nlAttrs(b, func(a uint16, d []byte) error {
		be16 := binary.BigEndian.Uint16
		switch a {
		case attrEthernet:
			if err := short("ethernet", d, 12); err != nil {
				return err
			}
			copy(k.EthSrc[:], d[0:6])
			copy(k.EthDst[:], d[6:12])
		case attrEthertype:
			if err := short("ethertype", d, 2); err != nil {
				return err
			}
			typ, hasType = be16(d), true
		case attrVLAN:
			if err := short("vlan", d, 2); err != nil {
				return err
			}
			tci, hasVLAN = be16(d), true
		case attrEncap:
			encap = d
		case attrIPv4:
			if err := short("ipv4", d, 12); err != nil {
				return err
			}
			copy(k.IPv4Src[:], d[0:4])
			copy(k.IPv4Dst[:], d[4:8])
			k.NwProto, k.NwTos, k.NwTTL, k.NwFrag = d[8], d[9], d[10], frag(d[11])
		case attrIPv6:
			if err := short("ipv6", d, 40); err != nil {
				return err
			}
			copy(k.IPv6Src[:], d[0:16])
			copy(k.IPv6Dst[:], d[16:32])
			k.IPv6Label = binary.BigEndian.Uint32(d[32:])
			k.NwProto, k.NwTos, k.NwTTL, k.NwFrag = d[36], d[37], d[38], frag(d[39])
		case attrTCP, attrUDP, attrSCTP:
			if err := short("ports", d, 4); err != nil {
				return err
			}
			k.TpSrc, k.TpDst = be16(d), be16(d[2:])
		case attrICMP, attrICMPv6:
			if err := short("icmp", d, 2); err != nil {
				return err
			}
			k.TpSrc, k.TpDst = uint16(d[0]), uint16(d[1])
		case attrTCPFlags:
			if err := short("tcp_flags", d, 2); err != nil {
				return err
			}
			k.TCPFlags = be16(d)
		case attrARP:
			if err := short("arp", d, 22); err != nil {
				return err
			}
			copy(k.IPv4Src[:], d[0:4])
			copy(k.IPv4Dst[:], d[4:8])
			k.NwProto = uint8(be16(d[8:])) // the kernel stores the opcode's low byte
			copy(k.ArpSHA[:], d[10:16])
			copy(k.ArpTHA[:], d[16:22])
		case attrND:
			if err := short("nd", d, 28); err != nil {
				return err
			}
			copy(k.NDTarget[:], d[0:16])
			copy(k.NDSLL[:], d[16:22])
			copy(k.NDTLL[:], d[22:28])
		case attrMPLS:
			if len(d) >= 4 {
				k.MPLSLSE = binary.BigEndian.Uint32(d)
			}
		case attrNSH:
			// Nested: 1 base (flags, ttl, mdtype, np, spi << 8 | si),
			// 2 the MD type 1 context.
			return nlAttrs(d, func(a uint16, d []byte) error {
				switch a {
				case 1:
					if err := short("nsh base", d, 8); err != nil {
						return err
					}
					k.NSH.Flags, k.NSH.TTL, k.NSH.MDType, k.NSH.NP = d[0], d[1], d[2], d[3]
					ph := binary.BigEndian.Uint32(d[4:])
					k.NSH.SPI, k.NSH.SI = ph>>8, uint8(ph)
				case 2:
					if err := short("nsh md1", d, 16); err != nil {
						return err
					}
					for i := range k.NSH.C {
						k.NSH.C[i] = binary.BigEndian.Uint32(d[4*i:])
					}
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if hasVLAN {
		if level >= len(k.VLANs) {
			return errors.New("more than two VLAN levels")
		}
		if tci != 0 {
			k.VLANs[level] = VLAN{TPID: typ, TCI: tci}
		}
		if encap == nil || tci == 0 {
			*lostTPID = true
			k.EthType = 0
			return nil
		}
		return decodeODPLevel(k, encap, level+1, lostTPID)
	}
	if hasType {
		k.EthType = typ
	}
	return nil
}
