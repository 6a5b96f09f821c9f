package vlog

import (
	"testing"
	"time"
)

// FuzzSet: vlog/set takes its specs from ovs-appctl, outside input. No
// spec may panic, and a pattern that parses renders.
func FuzzSet(f *testing.F) {
	for _, s := range []string{"", "console:off", "bridge:file:dbg", "ANY:ANY:warn", "err syslog",
		"PATTERN:file:%D{%Y-%m-%dT%H:%M:%S.###Z}|%05N|%c%T|%p|%m", "PATTERN:console:%-20c%%%q", "FACILITY:local7",
		"PATTERN:ANY:%d{%j %a %z %Z}", "bridge:bridge", "::::", "PATTERN:file:%999m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		l := New("fuzz")
		l.SetConsole(nil)
		l.Register("bridge")
		_ = l.Set(spec)
		for d := Destination(0); d < nDest; d++ {
			e := entry{l: l, module: "bridge", level: Warn, msg: "m", seq: 1, now: time.Unix(0, 0)}
			l.patterns[d].render(nil, &e)
		}
		l.List()
		l.ListPattern()
	})
}
