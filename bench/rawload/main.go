// Command rawload is the load of the capacity scenario (issue 19, item 2;
// bench/scenarios/capacity.sh): raw Ethernet/IPv4/UDP frames, every one of
// a new 5-tuple, offered at a fixed rate, and a receiver on the far side
// that counts them and measures how long each took to cross the switch.
// Unlike the TCP storm of bench/scenarios/bed.sh it is not bounded by a
// TCP stack: the offered rate is whatever is asked, so stepping it up finds
// the rate at which a switch starts to lose upcalls.
//
//	rawload send -i IFACE [-rate R] [-T SECS] [-dst MAC] [-src IP] [-dstip IP] [-batch N]
//	rawload recv -i IFACE [-T SECS] [-ready FILE]
//
// send writes R frames per second for SECS seconds, in sendmmsg batches of
// up to N frames paced against the monotonic clock (one clock read per
// batch: in the UML bed a clock read is a trapped system call). Frame k
// carries UDP ports derived from k, so no two frames of a run share a
// 5-tuple, and in its payload a magic word, k and the send time. It prints
// one JSON line: frames sent, send errors, seconds, achieved rate.
//
// recv reads frames on IFACE (an AF_PACKET socket, all frames whatever their
// destination MAC: send's default destination is a MAC no host owns, so the
// far end's IP stack never answers and adds no flows of its own), keeps
// those carrying the magic word, and prints one JSON line when SECS have
// passed or it is interrupted: frames received, distinct sequence numbers,
// and percentiles of the one-way latency (receive time minus send time; both
// ends run in the same kernel, so they share the monotonic clock). Every
// frame is the first of its flow, so this is the latency of a miss: upcall,
// translation and execute, plus the receiver's batching (one clock read per
// recvmmsg batch). It also reports the frames its socket dropped
// (PACKET_STATISTICS), so a receiver too slow to keep up shows as such.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	magic     = 0x676f7663 // "govc"
	frameLen  = 64
	payloadAt = 14 + 20 + 8
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rawload send|recv -i IFACE [flags]")
		os.Exit(2)
	}
	mode, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet("rawload "+mode, flag.ExitOnError)
	ifname := fs.String("i", "", "interface")
	secs := fs.Float64("T", 3, "seconds to send (send) or to listen (recv)")
	rate := fs.Float64("rate", 1000, "send: frames per second")
	batch := fs.Int("batch", 32, "send: most frames per sendmmsg")
	dstMAC := fs.String("dst", "02:00:00:00:00:99", "send: destination MAC")
	srcIP := fs.String("src", "10.0.0.1", "send: source IPv4 address")
	dstIP := fs.String("dstip", "10.0.0.2", "send: destination IPv4 address")
	ready := fs.String("ready", "", "recv: create this file once the socket is bound")
	fs.Parse(args)
	d := time.Duration(*secs * float64(time.Second))
	var err error
	switch mode {
	case "send":
		err = send(*ifname, *dstMAC, *srcIP, *dstIP, *rate, *batch, d)
	case "recv":
		err = recv(*ifname, d, *ready)
	default:
		err = fmt.Errorf("unknown mode %q (send or recv)", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rawload:", err)
		os.Exit(1)
	}
}

func monoNanos() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// mmsghdr is struct mmsghdr of sendmmsg(2)/recvmmsg(2).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
	_   [4]byte
}

func packetSocket(ifname string) (int, *net.Interface, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return -1, nil, err
	}
	proto := int(htons(unix.ETH_P_IP))
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, proto)
	if err != nil {
		return -1, nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: uint16(proto), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	// Large buffers: the point is to measure the switch, not our socket.
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 8<<20)
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20)
	return fd, ifi, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func send(ifname, dstMAC, srcIP, dstIP string, rate float64, batch int, d time.Duration) error {
	if rate <= 0 || batch < 1 {
		return errors.New("-rate and -batch must be positive")
	}
	dst, err := net.ParseMAC(dstMAC)
	if err != nil {
		return err
	}
	sip, dip := net.ParseIP(srcIP).To4(), net.ParseIP(dstIP).To4()
	if sip == nil || dip == nil {
		return fmt.Errorf("want IPv4 addresses, got %q and %q", srcIP, dstIP)
	}
	fd, ifi, err := packetSocket(ifname)
	if err != nil {
		return err
	}
	defer unix.Close(fd)

	frames := make([][frameLen]byte, batch)
	iov := make([]unix.Iovec, batch)
	mm := make([]mmsghdr, batch)
	for i := range frames {
		f := frames[i][:]
		copy(f, dst)
		copy(f[6:], ifi.HardwareAddr)
		binary.BigEndian.PutUint16(f[12:], 0x0800)
		ip := f[14:34]
		ip[0], ip[8], ip[9] = 0x45, 64, 17
		binary.BigEndian.PutUint16(ip[2:], frameLen-14)
		copy(ip[12:], sip)
		copy(ip[16:], dip)
		binary.BigEndian.PutUint16(f[38:], frameLen-34) // UDP length; checksum 0 (none)
		binary.BigEndian.PutUint32(f[payloadAt:], magic)
		iov[i].Base = &frames[i][0]
		iov[i].SetLen(frameLen)
		mm[i].hdr.Iov = &iov[i]
		mm[i].hdr.SetIovlen(1)
	}
	setIPChecksum := func(ip []byte) {
		ip[10], ip[11] = 0, 0
		var s uint32
		for i := 0; i < 20; i += 2 {
			s += uint32(binary.BigEndian.Uint16(ip[i:]))
		}
		for s > 0xffff {
			s = s>>16 + s&0xffff
		}
		binary.BigEndian.PutUint16(ip[10:], ^uint16(s))
	}

	var sent, errs uint64
	start := monoNanos()
	end := start + d.Nanoseconds()
	nsPerFrame := 1e9 / rate
	for {
		now := monoNanos()
		if now >= end {
			break
		}
		due := uint64(float64(now-start) / nsPerFrame)
		if due <= sent {
			// Ahead of schedule: sleep until the next frame is due.
			wait := time.Duration(float64(sent+1)*nsPerFrame) - time.Duration(now-start)
			time.Sleep(max(wait, 50*time.Microsecond))
			continue
		}
		n := int(min(due-sent, uint64(batch)))
		for i := range n {
			k := sent + uint64(i)
			f := frames[i][:]
			// A new 5-tuple per frame: ports from k, and the IP id too.
			binary.BigEndian.PutUint16(f[34:], uint16(1024+k%64512))
			binary.BigEndian.PutUint16(f[36:], uint16(1024+(k/64512)%64512))
			binary.BigEndian.PutUint16(f[18:], uint16(k))
			setIPChecksum(f[14:34])
			binary.BigEndian.PutUint64(f[payloadAt+4:], k)
			binary.BigEndian.PutUint64(f[payloadAt+12:], uint64(now))
		}
		r, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&mm[0])), uintptr(n), 0, 0, 0)
		if errno != 0 {
			errs++
			if errno == unix.ENOBUFS || errno == unix.EAGAIN {
				time.Sleep(100 * time.Microsecond)
				continue
			}
			return fmt.Errorf("sendmmsg: %w", errno)
		}
		sent += uint64(r)
	}
	el := float64(monoNanos()-start) / 1e9
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"mode": "send", "sent": sent, "errors": errs, "elapsed_s": round3(el),
		"rate": round3(float64(sent) / el), "asked_rate": rate,
	})
}

func recv(ifname string, d time.Duration, ready string) error {
	fd, _, err := packetSocket(ifname)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if ready != "" {
		// The sender waits for this: a process start in the UML bed can
		// take longer than any fixed pause, and frames sent before the
		// bind would count as lost by the switch.
		if err := os.WriteFile(ready, nil, 0o644); err != nil {
			return err
		}
	}
	tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)

	const batch = 64
	bufs := make([][256]byte, batch)
	iov := make([]unix.Iovec, batch)
	mm := make([]mmsghdr, batch)
	for i := range bufs {
		iov[i].Base = &bufs[i][0]
		iov[i].SetLen(len(bufs[i]))
		mm[i].hdr.Iov = &iov[i]
		mm[i].hdr.SetIovlen(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)

	var got, other, calls, timeouts uint64
	seen := map[uint64]struct{}{}
	lat := make([]int64, 0, 1<<16) // ns
	deadline := monoNanos() + d.Nanoseconds()
	for monoNanos() < deadline {
		select {
		case <-sig:
			deadline = 0
			continue
		default:
		}
		r, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&mm[0])), batch, unix.MSG_WAITFORONE, 0, 0)
		calls++
		if errno == unix.EAGAIN || errno == unix.EINTR {
			timeouts++
			continue
		}
		if errno != 0 {
			return fmt.Errorf("recvmmsg: %w", errno)
		}
		now := monoNanos()
		for i := range int(r) {
			f := bufs[i][:mm[i].n]
			if len(f) < payloadAt+20 || binary.BigEndian.Uint32(f[payloadAt:]) != magic {
				other++
				continue
			}
			got++
			seen[binary.BigEndian.Uint64(f[payloadAt+4:])] = struct{}{}
			lat = append(lat, now-int64(binary.BigEndian.Uint64(f[payloadAt+12:])))
		}
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return math.NaN()
		}
		i := int(math.Ceil(p/100*float64(len(lat)))) - 1
		return round3(float64(lat[max(i, 0)]) / 1e3)
	}
	out := map[string]any{"mode": "recv", "received": got, "distinct": len(seen), "other": other,
		"calls": calls, "timeouts": timeouts}
	// The socket's own count of frames it had to drop (queue full): a
	// receiver too slow to keep up must not pass for a lossy switch.
	if st, err := unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
		out["socket_drops"], out["socket_packets"] = st.Drops, st.Packets
	}
	if len(lat) > 0 {
		out["lat_us_p50"], out["lat_us_p90"], out["lat_us_p99"], out["lat_us_max"] = pct(50), pct(90), pct(99), pct(100)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
