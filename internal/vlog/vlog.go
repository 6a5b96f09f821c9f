// Package vlog is Open vSwitch's logging model for a Go daemon: named
// modules, each with a level per destination (console, syslog, file),
// lines rendered from ovs-vswitchd's patterns
// ("2026-12-01T18:00:00.123Z|00042|bridge|WARN|message"), and the spec
// syntax of -v and ovs-appctl vlog/set ("bridge:file:dbg",
// "console:off", "PATTERN:file:%m"). The code logs through log/slog: a
// Log hands out *slog.Logger values bound to a module (Logger), and a
// logger switches module with the attribute ModuleKey
// (logger.With(vlog.ModuleKey, "rconn")), so packages that know nothing of
// vlog still log under a module that means what OVS's does.
package vlog

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Level is a vlog level, from OFF (nothing) to DBG (everything). A
// destination shows a message when the message's level is at most the
// destination's level for the message's module.
type Level int32

// The levels, in OVS's order.
const (
	Off Level = iota
	Emer
	Err
	Warn
	Info
	Dbg
)

var levelNames = [...]string{"OFF", "EMER", "ERR", "WARN", "INFO", "DBG"}

func (l Level) String() string {
	if l < Off || l > Dbg {
		return fmt.Sprintf("Level(%d)", int(l))
	}
	return levelNames[l]
}

// ParseLevel reads a level name as vlog/set does: off, emer, err, warn,
// info or dbg, in any case.
func ParseLevel(s string) (Level, bool) {
	for i, n := range levelNames {
		if strings.EqualFold(s, n) {
			return Level(i), true
		}
	}
	return 0, false
}

// SlogLevelEmer is the slog level that vlog renders as EMER: the daemon
// is about to die.
const SlogLevelEmer = slog.LevelError + 4

// FromSlog maps a slog level onto vlog's: Debug → DBG, Info → INFO, Warn
// → WARN, Error → ERR, SlogLevelEmer and above → EMER.
func FromSlog(l slog.Level) Level {
	switch {
	case l < slog.LevelInfo:
		return Dbg
	case l < slog.LevelWarn:
		return Info
	case l < slog.LevelError:
		return Warn
	case l < SlogLevelEmer:
		return Err
	}
	return Emer
}

// toSlog is the lowest slog level that FromSlog maps to l.
func toSlog(l Level) slog.Level {
	switch l {
	case Dbg:
		return slog.Level(-1 << 20)
	case Info:
		return slog.LevelInfo
	case Warn:
		return slog.LevelWarn
	case Err:
		return slog.LevelError
	case Emer:
		return SlogLevelEmer
	}
	return slog.Level(1 << 20) // off: nothing is this severe
}

// Destination is where log lines go.
type Destination int

// The destinations, in vlog/list's column order.
const (
	Console Destination = iota
	Syslog
	File
	nDest
)

var destNames = [nDest]string{"console", "syslog", "file"}

func (d Destination) String() string {
	if d < 0 || d >= nDest {
		return fmt.Sprintf("Destination(%d)", int(d))
	}
	return destNames[d]
}

func parseDestination(s string) (Destination, bool) {
	for i, n := range destNames {
		if strings.EqualFold(s, n) {
			return Destination(i), true
		}
	}
	return 0, false
}

// Default patterns, as ovs-vswitchd's.
const (
	DefaultConsolePattern = "%D{%Y-%m-%dT%H:%M:%SZ}|%05N|%c%T|%p|%m"
	DefaultFilePattern    = "%D{%Y-%m-%dT%H:%M:%S.###Z}|%05N|%c%T|%p|%m"
	DefaultSyslogPattern  = "ovs|%05N|%c%T|%p|%m"
)

// ModuleKey is the slog attribute that moves a logger to another module:
// logger.With(vlog.ModuleKey, "vconn"). On a handler that is not a Log's
// it is an ordinary attribute.
const ModuleKey = "vlog_module"

type module struct {
	name   string
	levels [nDest]atomic.Int32
}

// Log is a process's logging: its modules, their levels and the open
// destinations. Its methods are safe for concurrent use.
type Log struct {
	program string
	start   time.Time

	mu       sync.Mutex // guards what follows, and serializes writes
	modules  map[string]*module
	patterns [nDest]*pattern
	console  io.Writer // nil: console off
	file     *os.File
	filePath string
	syslog   syslogSink
	facility int // syslog facility code
	// defaults are the levels of a module made now: INFO, or what the
	// last spec for every module set.
	defaults [nDest]Level

	seq atomic.Uint32 // %N
	// active[d] is whether destination d can take a line at all; with the
	// module levels it decides Enabled without the lock.
	active [nDest]atomic.Bool
}

// New returns a Log for program (what %A prints and syslog's tag) with
// the console on stderr, no file, no syslog, and every module at INFO on
// every destination, as ovs-vswitchd starts.
func New(program string) *Log {
	l := &Log{program: program, start: time.Now(), modules: map[string]*module{}, facility: facilityDaemon,
		defaults: [nDest]Level{Info, Info, Info}}
	for d, p := range [nDest]string{DefaultConsolePattern, DefaultSyslogPattern, DefaultFilePattern} {
		l.patterns[d] = mustPattern(p)
	}
	l.SetConsole(os.Stderr)
	l.module("vlog")
	return l
}

// Program returns the program name the Log was made for.
func (l *Log) Program() string { return l.program }

// Register makes modules known, so that specs can name them before they
// log anything. A new module starts at INFO on every destination, or at
// what the last spec that named no module set.
func (l *Log) Register(names ...string) {
	for _, n := range names {
		l.module(n)
	}
}

func (l *Log) module(name string) *module {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.modules[name]; m != nil {
		return m
	}
	m := &module{name: name}
	for d := range m.levels {
		m.levels[d].Store(int32(l.defaults[d]))
	}
	l.modules[name] = m
	return m
}

// Modules returns the registered module names, sorted.
func (l *Log) Modules() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := make([]string, 0, len(l.modules))
	for n := range l.modules {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Level returns module's level on dest (Off for an unknown module).
func (l *Log) Level(module string, dest Destination) Level {
	l.mu.Lock()
	m := l.modules[module]
	l.mu.Unlock()
	if m == nil || dest < 0 || dest >= nDest {
		return Off
	}
	return Level(m.levels[dest].Load())
}

// SetLevel sets the level of module name on dest. name "" means every module;
// dest -1 means every destination.
func (l *Log) SetLevel(name string, dest Destination, lvl Level) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var mods []*module
	if name == "" {
		for _, m := range l.modules {
			mods = append(mods, m)
		}
	} else if m := l.modules[name]; m != nil {
		mods = []*module{m}
	} else {
		return fmt.Errorf("no module %q", name)
	}
	for d := Destination(0); d < nDest; d++ {
		if name == "" && (dest < 0 || dest == d) {
			l.defaults[d] = lvl
		}
	}
	for _, m := range mods {
		for d := Destination(0); d < nDest; d++ {
			if dest < 0 || dest == d {
				m.levels[d].Store(int32(lvl))
			}
		}
	}
	return nil
}

// SetConsole sends console lines to w (nil turns the console off: a
// detached daemon has none).
func (l *Log) SetConsole(w io.Writer) {
	l.mu.Lock()
	l.console = w
	l.active[Console].Store(w != nil)
	l.mu.Unlock()
}

// OpenFile starts logging to path (appending, creating it 0640), closing
// any earlier file, and logs "opened log file PATH" there as OVS does.
func (l *Log) OpenFile(path string) error {
	if err := l.OpenFileSilently(path); err != nil {
		return err
	}
	l.emit(l.module("vlog"), Info, "opened log file "+path)
	return nil
}

// OpenFileSilently is OpenFile without the "opened log file" line: for a
// process that writes the odd line into another's log (a monitor), and
// opens the file afresh each time so it follows the file's rotation.
func (l *Log) OpenFileSilently(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("log file %s: %w", path, err)
	}
	l.mu.Lock()
	old := l.file
	l.file, l.filePath = f, path
	l.active[File].Store(true)
	l.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// FilePath returns the log file's path, or "" when no file was opened.
func (l *Log) FilePath() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.filePath
}

// ErrNoFile is returned by Reopen when no log file was configured.
var ErrNoFile = fmt.Errorf("logging to file not configured")

// Reopen closes the log file and opens it again by name, so that a file
// logrotate moved away is replaced by a fresh one (vlog/reopen). A file
// closed by CloseFile is reopened too.
func (l *Log) Reopen() error {
	path := l.FilePath()
	if path == "" {
		return ErrNoFile
	}
	return l.OpenFile(path)
}

// CloseFile stops logging to the file, keeping its name for Reopen
// (vlog/close).
func (l *Log) CloseFile() {
	l.mu.Lock()
	f := l.file
	l.file = nil
	l.active[File].Store(false)
	l.mu.Unlock()
	if f != nil {
		f.Close()
	}
}

// Close closes the file and syslog destinations.
func (l *Log) Close() {
	l.CloseFile()
	l.mu.Lock()
	s := l.syslog
	l.syslog = nil
	l.active[Syslog].Store(false)
	l.mu.Unlock()
	if s != nil {
		s.Close()
	}
}

// enabled reports whether a line of module m at level lvl goes anywhere.
func (l *Log) enabled(m *module, lvl Level) bool {
	for d := Destination(0); d < nDest; d++ {
		if l.active[d].Load() && Level(m.levels[d].Load()) >= lvl {
			return true
		}
	}
	return false
}

// emit renders msg for each destination that takes it and writes it. A
// failed write is dropped: logging must not stop the daemon.
func (l *Log) emit(m *module, lvl Level, msg string) { l.emitTo(m, lvl, msg, 1<<nDest-1) }

// emitTo is emit to the destinations in the bit set dests only.
func (l *Log) emitTo(m *module, lvl Level, msg string, dests uint) {
	if lvl <= Off || !l.enabled(m, lvl) {
		return
	}
	seq := l.seq.Add(1)
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var buf []byte
	for d := Destination(0); d < nDest; d++ {
		if dests&(1<<d) == 0 || !l.active[d].Load() || Level(m.levels[d].Load()) < lvl {
			continue
		}
		e := entry{l: l, module: m.name, level: lvl, msg: msg, seq: seq, now: now}
		buf = l.patterns[d].render(buf[:0], &e)
		switch d {
		case Console:
			if l.console != nil {
				l.console.Write(append(buf, '\n'))
			}
		case File:
			if l.file != nil {
				l.file.Write(append(buf, '\n'))
			}
		case Syslog:
			if l.syslog != nil {
				l.syslog.Send(syslogPriority(lvl)|l.facility<<3, now, string(buf))
			}
		}
	}
}

// Fatal logs msg under module at EMER on the file and syslog but not the
// console: for the error that ends a daemon, which its main also prints
// on stderr.
func (l *Log) Fatal(module, msg string) {
	l.emitTo(l.module(module), Emer, msg, 1<<Syslog|1<<File)
}

// List renders the level table of ovs-appctl vlog/list.
func (l *Log) List() string {
	var sb strings.Builder
	sb.WriteString("                 console    syslog    file\n")
	sb.WriteString("                 -------    ------    ------\n")
	for _, n := range l.Modules() {
		m := l.module(n)
		fmt.Fprintf(&sb, "%-16s %5s %10s %10s\n", n,
			Level(m.levels[Console].Load()), Level(m.levels[Syslog].Load()), Level(m.levels[File].Load()))
	}
	return sb.String()
}

// ListPattern renders ovs-appctl vlog/list-pattern: each destination's
// pattern.
func (l *Log) ListPattern() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sb strings.Builder
	sb.WriteString("         prefix                            format\n")
	sb.WriteString("         ------                            ------\n")
	prefix := [nDest]string{"none", "<%B> %D{%h %e %T} %E %A:", "none"}
	for _, d := range []Destination{Syslog, Console, File} {
		fmt.Fprintf(&sb, "%-8s %-33s %s\n", strings.ToUpper(d.String()), prefix[d], l.patterns[d].text)
	}
	return sb.String()
}
