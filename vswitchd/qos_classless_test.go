package vswitchd

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/govswitch/govswitch/ovsdb"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// classlessSettings gives ovs-vswitchd 3.1's defaults for what the row
// leaves out or sets to 0, in the order OVS adds them.
func TestClasslessSettings(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  ovsdb.QoSConfig
		want []classlessSetting
	}{
		{"sfq defaults: quantum the MTU", ovsdb.QoSConfig{Type: "linux-sfq"}, []classlessSetting{{"quantum", 1500}, {"perturb", 10}}},
		{"sfq", ovsdb.QoSConfig{Type: "linux-sfq", Params: map[string]uint64{"quantum": 3000, "perturb": 7}},
			[]classlessSetting{{"quantum", 3000}, {"perturb", 7}}},
		{"codel defaults", ovsdb.QoSConfig{Type: "linux-codel"},
			[]classlessSetting{{"target", 5000}, {"limit", 10240}, {"interval", 100000}}},
		{"codel, 0 is the default", ovsdb.QoSConfig{Type: "linux-codel", Params: map[string]uint64{"target": 0, "limit": 5}},
			[]classlessSetting{{"target", 5000}, {"limit", 5}, {"interval", 100000}}},
		{"fq_codel defaults: interval 1 s where codel's is 100 ms", ovsdb.QoSConfig{Type: "linux-fq_codel"},
			[]classlessSetting{{"target", 5000}, {"limit", 10240}, {"interval", 1000000}, {"flows", 1024}, {"quantum", 1514}}},
		{"netem defaults", ovsdb.QoSConfig{Type: "linux-netem"}, []classlessSetting{{"latency", 0}, {"limit", 1000}, {"loss", 0}}},
		{"32 bits, as OVS keeps them", ovsdb.QoSConfig{Type: "linux-netem", Params: map[string]uint64{"limit": 1<<32 + 7}},
			[]classlessSetting{{"latency", 0}, {"limit", 7}, {"loss", 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := classlessSettings(c.cfg, 1500); !slices.Equal(got, c.want) {
				t.Errorf("%v, want %v", got, c.want)
			}
		})
	}
}

// The TCA_OPTIONS each classless qdisc gets, as ovs-vswitchd sends them,
// at the bed's psched clock (15.625 ticks a microsecond).
func TestClasslessOptions(t *testing.T) {
	for _, c := range []struct {
		name, typ, kind string
		set             []classlessSetting
		want            []byte
	}{
		{"codel", "linux-codel", "codel", []classlessSetting{{"target", 5000}, {"limit", 10240}, {"interval", 100000}}, []byte{
			0x1c, 0x00, 0x02, 0x00, // TCA_OPTIONS, 28 bytes
			0x08, 0x00, 0x01, 0x00, 0x88, 0x13, 0x00, 0x00, // TCA_CODEL_TARGET 5000
			0x08, 0x00, 0x02, 0x00, 0x00, 0x28, 0x00, 0x00, // TCA_CODEL_LIMIT 10240
			0x08, 0x00, 0x03, 0x00, 0xa0, 0x86, 0x01, 0x00, // TCA_CODEL_INTERVAL 100000
		}},
		{"fq_codel", "linux-fq_codel", "fq_codel", []classlessSetting{{"target", 1}, {"limit", 2}, {"interval", 3}, {"flows", 4}, {"quantum", 5}}, []byte{
			0x2c, 0x00, 0x02, 0x00, // TCA_OPTIONS, 44 bytes
			0x08, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, // TCA_FQ_CODEL_TARGET
			0x08, 0x00, 0x02, 0x00, 0x02, 0x00, 0x00, 0x00, // TCA_FQ_CODEL_LIMIT
			0x08, 0x00, 0x03, 0x00, 0x03, 0x00, 0x00, 0x00, // TCA_FQ_CODEL_INTERVAL
			0x08, 0x00, 0x05, 0x00, 0x04, 0x00, 0x00, 0x00, // TCA_FQ_CODEL_FLOWS (no ECN attribute, 4)
			0x08, 0x00, 0x06, 0x00, 0x05, 0x00, 0x00, 0x00, // TCA_FQ_CODEL_QUANTUM
		}},
		{"sfq", "linux-sfq", "sfq", []classlessSetting{{"quantum", 1500}, {"perturb", 10}}, []byte{
			0x18, 0x00, 0x02, 0x00, // TCA_OPTIONS, 24 bytes: struct tc_sfq_qopt
			0xdc, 0x05, 0x00, 0x00, // quantum 1500
			0x0a, 0x00, 0x00, 0x00, // perturb_period 10
			0x00, 0x00, 0x00, 0x00, // limit: the kernel's
			0x00, 0x00, 0x00, 0x00, // divisor: the kernel's
			0x00, 0x00, 0x00, 0x00, // flows: the kernel's
		}},
		{"netem", "linux-netem", "netem", []classlessSetting{{"latency", 20000}, {"limit", 500}, {"loss", 10}}, []byte{
			0x1c, 0x00, 0x02, 0x00, // TCA_OPTIONS, 28 bytes: struct tc_netem_qopt
			0xb4, 0xc4, 0x04, 0x00, // latency 20000 us: 312500 ticks
			0xf4, 0x01, 0x00, 0x00, // limit 500
			0x99, 0x99, 0x99, 0x19, // loss 10%: floor(0xffffffff * 0.1)
			0x00, 0x00, 0x00, 0x00, // gap
			0x00, 0x00, 0x00, 0x00, // duplicate
			0x00, 0x00, 0x00, 0x00, // jitter
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			kind, opts, err := classlessOptions(c.typ, c.set, 15.625)
			if err != nil {
				t.Fatal(err)
			}
			if got := opts.Serialize(); kind != c.kind || !bytes.Equal(got, c.want) {
				t.Errorf("%s % x, want %s % x", kind, got, c.kind, c.want)
			}
		})
	}
	if _, _, err := classlessOptions("linux-netem", []classlessSetting{{"loss", 101}}, 15.625); !errors.Is(err, unix.EINVAL) {
		t.Errorf("netem loss 101%%: %v, want EINVAL", err)
	}
}

func TestParsePsched(t *testing.T) {
	for _, c := range []struct {
		in    string
		ticks float64
		hz    uint64
	}{
		{"000003e8 00000040 000f4240 3b9aca00\n", 15625000, 1000000000}, // the beds' 6.1 kernels
		{"000c8000 000f4240 000f4240 00000064\n", 819200, 100},
		{"000003e8 00000400 000f4240 3b9aca00", 976562.5, 1000000000},
		{"000003e8 00000040 00000010 00000064", 250, 100}, // c is not 1000000: 100 Hz
		{"0 1 2 3", 1, 100},
		{"garbage", 1, 100},
	} {
		if ticks, hz := parsePsched(c.in); ticks != c.ticks || hz != c.hz {
			t.Errorf("%q: %v ticks/s %d Hz, want %v %d", c.in, ticks, hz, c.ticks, c.hz)
		}
	}
}

func FuzzParsePsched(f *testing.F) {
	f.Add("000003e8 00000040 000f4240 3b9aca00\n")
	f.Add("ffffffff 1 ffffffff 0")
	f.Fuzz(func(t *testing.T, s string) {
		if ticks, hz := parsePsched(s); ticks <= 0 || hz == 0 {
			t.Errorf("%q: %v ticks/s, %d Hz", s, ticks, hz)
		}
	})
}

// htb's rate specs and tables, as ovs-vswitchd's tc_fill_rate and
// tc_put_rtab make them.
func TestHTBRateTable(t *testing.T) {
	if l := tcCellLog(1500); l != 3 {
		t.Errorf("cell log of MTU 1500: %d, want 3 (1518 bytes in 256 cells of 8)", l)
	}
	if l := tcCellLog(9000); l != 6 {
		t.Errorf("cell log of MTU 9000: %d, want 6", l)
	}
	r := nl.TcRateSpec{CellLog: 3, Mpu: 60, Rate: 375000}
	tab := tcRateTable(15625000, r)
	// Entry 0 is 8 bytes, below the 60-byte minimum: 60 bytes' ticks.
	// Entry 255 is 2048 bytes.
	for _, c := range []struct {
		i    int
		want uint32
	}{{0, 15625000 * 60 / 375000}, {7, 15625000 * 64 / 375000}, {255, 15625000 * 2048 / 375000}} {
		if got := uint32(tab[4*c.i]) | uint32(tab[4*c.i+1])<<8 | uint32(tab[4*c.i+2])<<16 | uint32(tab[4*c.i+3])<<24; got != c.want {
			t.Errorf("entry %d: %d ticks, want %d", c.i, got, c.want)
		}
	}
	if got := tcBytesToTicks(15625000, 0, 1500); got != 0 {
		t.Errorf("ticks at rate 0: %d", got)
	}
}
