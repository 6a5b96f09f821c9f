package vswitchd

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sync"

	"github.com/govswitch/govswitch/ovsdb"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// The classless QoS types of ovs-vswitchd 3.1's netdev-linux: linux-sfq,
// linux-codel, linux-fq_codel and linux-netem each make one root qdisc
// 1: of their kind with the settings of the QoS's other_config (OVS's
// defaults for those left out) and have no queues; linux-noop makes
// nothing and leaves the device's qdisc as it is, as ovs-vswitchd does.
// classlessSettings gives the values ovs-vswitchd computes from the
// row, which are what it sets up and what qos/show prints.

// classlessSetting is one of a classless QoS's settings, as qos/show
// names it.
type classlessSetting struct {
	key   string
	value uint32
}

// classlessSettings returns the settings of a linux-sfq, linux-codel,
// linux-fq_codel or linux-netem QoS on a device of MTU mtu (0: the
// device has none) in the order ovs-vswitchd adds them to what qos/show
// prints, with its defaults for those the row leaves out or sets to 0
// (each value in 32 bits, as OVS keeps it).
func classlessSettings(cfg ovsdb.QoSConfig, mtu int) []classlessSetting {
	get := func(k string, def uint32) uint32 {
		if v := uint32(cfg.Params[k]); v != 0 {
			return v
		}
		return def
	}
	switch cfg.Type {
	case "linux-sfq":
		return []classlessSetting{{"quantum", get("quantum", uint32(max(mtu, 0)))}, {"perturb", get("perturb", 10)}}
	case "linux-codel":
		return []classlessSetting{{"target", get("target", 5000)}, {"limit", get("limit", 10240)}, {"interval", get("interval", 100000)}}
	case "linux-fq_codel":
		return []classlessSetting{{"target", get("target", 5000)}, {"limit", get("limit", 10240)},
			{"interval", get("interval", 1000000)}, {"flows", get("flows", 1024)}, {"quantum", get("quantum", 1514)}}
	case "linux-netem":
		return []classlessSetting{{"latency", get("latency", 0)}, {"limit", get("limit", 1000)}, {"loss", get("loss", 0)}}
	}
	return nil
}

func settingOf(s []classlessSetting, key string) uint32 {
	for _, e := range s {
		if e.key == key {
			return e.value
		}
	}
	return 0
}

// classlessOptions returns the qdisc kind and its TCA_OPTIONS for the
// settings, as ovs-vswitchd sends them: codel's and fq_codel's as nested
// u32 attributes, sfq's as a struct tc_sfq_qopt, netem's as a struct
// tc_netem_qopt (latency in scheduler ticks, loss as a fraction of 2^32-1).
func classlessOptions(typ string, s []classlessSetting, ticksPerUs float64) (string, *nl.RtAttr, error) {
	opts := nl.NewRtAttr(nl.TCA_OPTIONS, nil)
	u32 := func(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
	switch typ {
	case "linux-codel":
		// TCA_CODEL_TARGET, _LIMIT, _INTERVAL
		for i, k := range []string{"target", "limit", "interval"} {
			opts.AddRtAttr(i+1, u32(settingOf(s, k)))
		}
		return "codel", opts, nil
	case "linux-fq_codel":
		// TCA_FQ_CODEL_TARGET 1, _LIMIT 2, _INTERVAL 3, _FLOWS 5, _QUANTUM 6
		for _, a := range []struct {
			typ int
			key string
		}{{1, "target"}, {2, "limit"}, {3, "interval"}, {5, "flows"}, {6, "quantum"}} {
			opts.AddRtAttr(a.typ, u32(settingOf(s, a.key)))
		}
		return "fq_codel", opts, nil
	case "linux-sfq":
		// struct tc_sfq_qopt: quantum, perturb_period, limit, divisor,
		// flows; 0 leaves the kernel's default.
		b := make([]byte, 20)
		binary.NativeEndian.PutUint32(b[0:], settingOf(s, "quantum"))
		binary.NativeEndian.PutUint32(b[4:], settingOf(s, "perturb"))
		return "sfq", nl.NewRtAttr(nl.TCA_OPTIONS, b), nil
	case "linux-netem":
		loss := settingOf(s, "loss")
		if loss > 100 {
			return "", nil, fmt.Errorf("loss should be a percentage value between 0 to 100, loss was %d (%w)", loss, unix.EINVAL)
		}
		// struct tc_netem_qopt: latency, limit, loss, gap, duplicate, jitter.
		b := make([]byte, 24)
		lat := float64(settingOf(s, "latency")) * ticksPerUs
		binary.NativeEndian.PutUint32(b[0:], uint32(min(lat, math.MaxUint32)))
		binary.NativeEndian.PutUint32(b[4:], settingOf(s, "limit"))
		binary.NativeEndian.PutUint32(b[8:], uint32(math.Floor(math.MaxUint32*(float64(loss)/100))))
		return "netem", nl.NewRtAttr(nl.TCA_OPTIONS, b), nil
	}
	return "", nil, fmt.Errorf("QoS type %s has no qdisc", typ)
}

// pschedClock is the kernel's packet scheduler clock from
// /proc/net/psched, read once as ovs-vswitchd reads it: ticks per second
// is a*c/b of its first three numbers, and the rate of the timer that
// qdiscs must buffer for is the fourth when the third is 1000000 (1 tick
// a second and 100 Hz when the file cannot be read or makes no sense).
var pschedClock = sync.OnceValues(func() (ticksPerSec float64, bufferHz uint64) {
	b, err := os.ReadFile("/proc/net/psched")
	if err != nil {
		return 1, 100
	}
	return parsePsched(string(b))
})

// parsePsched reads the contents of /proc/net/psched as pschedClock
// says.
func parsePsched(s string) (ticksPerSec float64, bufferHz uint64) {
	var a, b, c, d uint32
	if n, _ := fmt.Sscanf(s, "%x %x %x %x", &a, &b, &c, &d); n != 4 || a == 0 || b == 0 || c == 0 {
		return 1, 100
	}
	bufferHz = 100
	if c == 1000000 && d != 0 {
		bufferHz = uint64(d)
	}
	return float64(a) * float64(c) / float64(b), bufferHz
}

func psched() float64 { t, _ := pschedClock(); return t }

func pschedBufferHz() uint64 { _, hz := pschedClock(); return hz }

// setupClassless replaces dev's root qdisc with cfg's classless one.
// The old root qdisc goes first, as with ovs-vswitchd, so a QoS that
// cannot be set up leaves the device on its default qdisc.
func setupClassless(dev string, cfg ovsdb.QoSConfig) error {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("device %s: %w", dev, err)
	}
	if err := delRootQdisc(dev); err != nil {
		return err
	}
	s := classlessSettings(cfg, l.Attrs().MTU)
	kind, opts, err := classlessOptions(cfg.Type, s, psched()/1e6)
	if err != nil {
		return fmt.Errorf("%s: %w", dev, err)
	}
	req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(l.Attrs().Index), Handle: netlink.MakeHandle(1, 0),
		Parent: netlink.HANDLE_ROOT})
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated(kind)))
	req.AddData(opts)
	if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
		return fmt.Errorf("failed to replace %s qdisc with %s %v (%w)", dev, kind, s, err)
	}
	return nil
}
