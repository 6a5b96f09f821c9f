package vswitchd

import (
	"strings"
	"testing"
	"time"
)

// TestNeighCache: entries are set, refreshed, shown in ovs-vswitchd's
// columns, aged out (a shorter aging cuts the ones already there) and
// flushed; bad arguments get ovs-vswitchd's errors.
func TestNeighCache(t *testing.T) {
	now := time.Unix(1000, 0)
	d := &Daemon{}
	d.neigh.now = func() time.Time { return now }
	for _, args := range [][]string{
		{"br0", "10.0.0.2", "f8:bc:12:44:34:b6"},
		{"br0", "::ffff:10.0.0.3", "f8:bc:12:44:34:b7"},
		{"br1", "fc00::1", "0:1:2:3:4:5"},
		{"a-bridge-name-longer-than-15", "10.0.0.2", "f8:bc:12:44:34:b6"},
	} {
		if out, err := d.tnlNeighSet(args); err != nil || out != "OK\n" {
			t.Fatalf("set %q: %q %v", args, out, err)
		}
	}
	want := "IP                                            MAC                 Bridge\n" +
		"==========================================================================\n" +
		"10.0.0.2                                      f8:bc:12:44:34:b6   a-bridge-name-l\n" +
		"10.0.0.2                                      f8:bc:12:44:34:b6   br0\n" +
		"10.0.0.3                                      f8:bc:12:44:34:b7   br0\n" +
		"fc00::1                                       00:01:02:03:04:05   br1\n"
	if got, _ := d.tnlNeighShow(nil); got != want {
		t.Errorf("show:\n%s\nwant\n%s", got, want)
	}
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"br0", "10.0.0.300", "00:00:00:00:00:01"}, "bad IP address"},
		{[]string{"br0", "10.0.0.1", "00:00:00:00:00"}, "bad MAC address"},
		{[]string{"br0", "10.0.0.1", "00:00:00:00:00:100"}, "bad MAC address"},
	} {
		if _, err := d.tnlNeighSet(c.args); err == nil || err.Error() != c.err {
			t.Errorf("set %q: %v, want %s", c.args, err, c.err)
		}
	}
	if got, _ := d.tnlNeighAging(nil); got != "900\n" {
		t.Errorf("aging: %q", got)
	}
	for _, bad := range []string{"0", "3601", "x", "-1"} {
		if _, err := d.tnlNeighAging([]string{bad}); err == nil || err.Error() != "bad aging value" {
			t.Errorf("aging %s: %v", bad, err)
		}
	}
	now = now.Add(5 * time.Second)
	d.tnlNeighSet([]string{"br1", "fc00::1", "00:01:02:03:04:05"}) // refreshed: lives 900 s from now
	if out, err := d.tnlNeighAging([]string{"10"}); err != nil || out != "OK\n" {
		t.Fatalf("aging 10: %q %v", out, err)
	}
	now = now.Add(9 * time.Second)
	if got, _ := d.tnlNeighShow(nil); strings.Count(got, "\n") != 6 {
		t.Errorf("9 s after aging 10, entries went:\n%s", got)
	}
	d.tnlNeighSet([]string{"br0", "10.0.0.9", "00:00:00:00:00:09"}) // lives 10 s
	now = now.Add(time.Second)
	if got, _ := d.tnlNeighShow(nil); !strings.HasSuffix(got, "=\n10.0.0.9                                      00:00:00:00:00:09   br0\n") {
		t.Errorf("10 s after aging 10, only the new entry should be left:\n%s", got)
	}
	d.tnlNeighFlush(nil)
	if got, _ := d.tnlNeighShow(nil); strings.Count(got, "\n") != 2 {
		t.Errorf("after flush:\n%s", got)
	}
}
