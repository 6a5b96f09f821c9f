// Command rawstorm floods an interface with raw Ethernet/IPv4/UDP frames,
// each of a new UDP port pair, so that every frame is a new exact-match
// flow for a switch behind the interface: an upcall storm as fast as one
// core can write frames. It is the load of bench/reliability/storm.sh.
//
//	rawstorm -i IFACE -dst MAC [-T SECS] [-src IP] [-dstip IP]
//
// It prints one JSON line: frames sent, send errors, seconds, rate.
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	ifname := flag.String("i", "", "interface to send on")
	dstMAC := flag.String("dst", "ff:ff:ff:ff:ff:ff", "destination MAC")
	secs := flag.Float64("T", 5, "seconds to send for")
	srcIP := flag.String("src", "10.0.0.1", "source IPv4 address")
	dstIP := flag.String("dstip", "10.0.0.2", "destination IPv4 address")
	flag.Parse()
	if err := run(*ifname, *dstMAC, *srcIP, *dstIP, time.Duration(*secs*float64(time.Second))); err != nil {
		fmt.Fprintln(os.Stderr, "rawstorm:", err)
		os.Exit(1)
	}
}

func run(ifname, dstMAC, srcIP, dstIP string, d time.Duration) error {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return err
	}
	dst, err := net.ParseMAC(dstMAC)
	if err != nil {
		return err
	}
	sip, dip := net.ParseIP(srcIP).To4(), net.ParseIP(dstIP).To4()
	if sip == nil || dip == nil {
		return fmt.Errorf("want IPv4 addresses, got %q and %q", srcIP, dstIP)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	sa := &unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6}
	copy(sa.Addr[:], dst)

	f := make([]byte, 60)
	copy(f, dst)
	copy(f[6:], ifi.HardwareAddr)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], 46)
	copy(ip[12:], sip)
	copy(ip[16:], dip)
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[4:], 26)

	var sent, errs uint64
	start := time.Now()
	end := start.Add(d)
	for n := uint32(0); ; n++ {
		if n&1023 == 0 && time.Now().After(end) {
			break
		}
		// A new port pair per frame: 2^32 flows before one repeats.
		binary.BigEndian.PutUint16(udp[0:], uint16(n>>16)|1024)
		binary.BigEndian.PutUint16(udp[2:], uint16(n))
		if err := unix.Sendto(fd, f, 0, sa); err != nil {
			errs++
			continue
		}
		sent++
	}
	el := time.Since(start).Seconds()
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"frames": sent, "errors": errs,
		"seconds": el, "rate": float64(sent) / el})
}
