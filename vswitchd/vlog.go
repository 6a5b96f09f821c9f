package vswitchd

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/govswitch/govswitch/internal/vlog"
)

// Logging, as ovs-vswitchd's vlog: the daemon's modules (ovsModules),
// the -v specs and --log-level, the log file and syslog, and the vlog/*
// ovs-appctl commands.

// programName is what %A prints and syslog's tag: ovs-vswitchd when
// govswitchd runs under that name (in its place), else govswitchd.
func programName() string {
	if filepath.Base(os.Args[0]) == "ovs-vswitchd" {
		return "ovs-vswitchd"
	}
	return "govswitchd"
}

// newVlog builds the daemon's log from cfg: console on logOut (stderr and
// syslog when nil), --log-level on console and file, then the -v specs
// in order, then the log file.
func newVlog(cfg Config, logOut io.Writer) (*vlog.Log, error) {
	vl := vlog.New(programName())
	vl.Register(allModules()...)
	if logOut != nil {
		vl.SetConsole(logOut)
	} else {
		sock, target := "/dev/log", cfg.SyslogTarget
		switch m := cfg.SyslogMethod; {
		case strings.HasPrefix(m, "unix:"):
			sock = strings.TrimPrefix(m, "unix:")
		case strings.HasPrefix(m, "udp:"):
			sock = ""
			if target == "" {
				target = strings.TrimPrefix(m, "udp:")
			}
		}
		if err := vl.OpenSyslog(sock, target); err != nil {
			return nil, err
		}
	}
	lvl, err := parseLevel(cfg.LogLevel)
	if err != nil {
		return nil, err
	}
	vl.SetLevel("", vlog.Console, lvl)
	vl.SetLevel("", vlog.File, lvl)
	for _, spec := range cfg.Verbose {
		if err := vl.Set(spec); err != nil {
			return nil, fmt.Errorf("processing %q: %v", spec, err)
		}
	}
	if cfg.LogFile != "" {
		if err := vl.OpenFile(cfg.LogFile); err != nil {
			return nil, err
		}
	}
	return vl, nil
}

// parseLevel reads --log-level: govswitchd's names (debug, info, warn,
// error) or vlog's (dbg, err, ...).
func parseLevel(s string) (vlog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return vlog.Dbg, nil
	case "", "info":
		return vlog.Info, nil
	case "warning":
		return vlog.Warn, nil
	case "error":
		return vlog.Err, nil
	}
	if l, ok := vlog.ParseLevel(s); ok && l != vlog.Off {
		return l, nil
	}
	return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
}

// moduleLogger returns a logger of the daemon's under module.
func (d *Daemon) moduleLogger(module string) *slog.Logger { return d.vlog.Logger(module) }

// registerVlogCommands installs vlog/set, vlog/list, vlog/list-pattern,
// vlog/reopen and vlog/close, with ovs-vswitchd's arguments and output.
func (d *Daemon) registerVlogCommands() {
	s := d.ctl
	s.Register("vlog/set", "{spec | PATTERN:destination:pattern}", 0, -1, func(args []string) (string, error) {
		if len(args) == 0 {
			args = []string{""} // no argument: everything at dbg, as OVS
		}
		for _, a := range args {
			if err := d.vlog.Set(a); err != nil {
				return "", err
			}
		}
		return "", nil
	})
	s.Register("vlog/list", "", 0, 0, func([]string) (string, error) { return d.vlog.List(), nil })
	s.Register("vlog/list-pattern", "", 0, 0, func([]string) (string, error) { return d.vlog.ListPattern(), nil })
	s.Register("vlog/reopen", "", 0, 0, func([]string) (string, error) {
		err := d.vlog.Reopen()
		if errors.Is(err, vlog.ErrNoFile) {
			return "", err
		}
		if err != nil {
			d.moduleLogger("vlog").Error("reopening the log file failed", "err", err)
			return "", fmt.Errorf("could not reopen log file: %v", err)
		}
		return "", nil
	})
	s.Register("vlog/close", "", 0, 0, func([]string) (string, error) {
		if d.vlog.FilePath() == "" {
			return "", vlog.ErrNoFile
		}
		d.vlog.CloseFile()
		return "", nil
	})
}
