package vlog

import (
	"errors"
	"fmt"
	"strings"
)

// Set applies one spec in the syntax of ovs-vswitchd's -v and ovs-appctl
// vlog/set:
//
//	[MODULE][:DESTINATION][:LEVEL]   words in any order, separated by ':'
//	                                 or blanks; "ANY" or no word means
//	                                 every module or destination; no
//	                                 level means DBG
//	PATTERN:DESTINATION:PATTERN      the line pattern of a destination
//	FACILITY:FACILITY                the syslog facility (daemon, local0...)
//
// The empty spec sets every module on every destination to DBG (plain -v).
// Errors read as OVS's do: `no destination, level, or module "x"`.
func (l *Log) Set(spec string) error {
	if k, rest, ok := strings.Cut(spec, ":"); ok && strings.EqualFold(k, "PATTERN") {
		ds, pat, ok := strings.Cut(rest, ":")
		if !ok {
			return errors.New("missing destination")
		}
		var dests []Destination
		if strings.EqualFold(ds, "ANY") {
			dests = []Destination{Console, Syslog, File}
		} else if d, ok := parseDestination(ds); ok {
			dests = []Destination{d}
		} else {
			return fmt.Errorf("unknown destination %q", ds)
		}
		p, err := parsePattern(pat)
		if err != nil {
			return err
		}
		l.mu.Lock()
		for _, d := range dests {
			l.patterns[d] = p
		}
		l.mu.Unlock()
		return nil
	}
	if k, rest, ok := strings.Cut(spec, ":"); ok && strings.EqualFold(k, "FACILITY") {
		f, ok := parseFacility(rest)
		if !ok {
			return errors.New("invalid facility")
		}
		l.mu.Lock()
		l.facility = f
		l.mu.Unlock()
		return nil
	}
	module, dest, lvl := "", Destination(-1), Dbg
	var haveMod, haveDest, haveLvl bool
	for _, w := range strings.FieldsFunc(spec, func(r rune) bool { return r == ':' || r == ' ' || r == '\t' }) {
		if strings.EqualFold(w, "ANY") {
			continue
		}
		if d, ok := parseDestination(w); ok {
			if haveDest {
				return fmt.Errorf("cannot specify multiple destinations")
			}
			dest, haveDest = d, true
			continue
		}
		if v, ok := ParseLevel(w); ok {
			if haveLvl {
				return fmt.Errorf("cannot specify multiple levels")
			}
			lvl, haveLvl = v, true
			continue
		}
		l.mu.Lock()
		_, known := l.modules[w]
		l.mu.Unlock()
		if !known {
			return fmt.Errorf("no destination, level, or module %q", w)
		}
		if haveMod {
			return fmt.Errorf("cannot specify multiple modules")
		}
		module, haveMod = w, true
	}
	return l.SetLevel(module, dest, lvl)
}

// Check reports whether spec would be accepted by Set on a Log with the
// given modules, without changing anything (for checking a command line
// before the daemon's Log exists).
func Check(spec string, modules []string) error {
	l := New("check")
	l.SetConsole(nil)
	l.Register(modules...)
	return l.Set(spec)
}
