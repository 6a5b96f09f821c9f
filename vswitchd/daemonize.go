package vswitchd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// --detach and --monitor, as OVS's daemonize: the command returns only
// once the daemon serves (pidfile written, control socket listening,
// database applied), with status 0, or with the daemon's error on
// stderr and status 1; a monitor process restarts a daemon that
// crashes. Go cannot fork, so each stage re-executes the program with
// the same arguments and an environment marker saying which stage it
// is, and a pipe on fd 3 that the child writes one byte to when it is
// ready.

const (
	envStage = "GOVSWITCHD_DAEMON_STAGE" // "monitor" or "daemon"
	envExe   = "GOVSWITCHD_DAEMON_EXE"   // the path every stage executes
	envCwd   = "GOVSWITCHD_DAEMON_CWD"   // the directory the command was started in
	readyFd  = 3
)

// Daemonize runs the --detach/--monitor stages for cfg. In the process
// that is to be the daemon it returns a function to call once the daemon
// is ready (which tells the waiting parent, then, when detached, points
// stdin, stdout and stderr at /dev/null). In the starting process and in
// the monitor it does not return: it exits with the right status. Call it
// after ParseArgs and before New.
func Daemonize(cfg Config) (ready func(), err error) {
	switch os.Getenv(envStage) {
	case "daemon":
		return daemonStage(cfg)
	case "monitor":
		unix.CloseOnExec(readyFd)
		os.Exit(monitor(cfg, os.NewFile(readyFd, "ready")))
	}
	if !cfg.Detach && !cfg.Monitor {
		return func() {}, nil
	}
	exe, err := selfPath()
	if err != nil {
		return nil, err
	}
	cwd, _ := os.Getwd()
	os.Setenv(envExe, exe)
	os.Setenv(envCwd, cwd)
	if !cfg.Detach {
		// --monitor alone: this process is the monitor, in the foreground.
		os.Exit(monitor(cfg, nil))
	}
	stage := "daemon"
	if cfg.Monitor {
		stage = "monitor"
	}
	child, readyR, err := startStage(exe, stage, true)
	if err != nil {
		return nil, err
	}
	if waitReady(readyR) {
		os.Exit(0) // the daemon (and its monitor) carry on
	}
	// The child failed before it was ready; it printed why on our stderr.
	st, _ := child.Process.Wait()
	os.Exit(max(st.ExitCode(), 1))
	return nil, nil
}

// selfPath is the program to execute for the next stage: the name it was
// run by (resolved on PATH, made absolute) rather than /proc/self/exe, so
// that a govswitchd symlinked as ovs-vswitchd keeps that name in
// /proc/PID/comm, where ovs-ctl checks it.
func selfPath() (string, error) {
	if p := os.Getenv(envExe); p != "" {
		return p, nil
	}
	name := os.Args[0]
	if !strings.Contains(name, "/") {
		p, err := exec.LookPath(name)
		if err != nil {
			return os.Executable()
		}
		name = p
	}
	return filepath.Abs(name)
}

// startStage starts the program again as stage, in a new session when
// setsid, with a ready pipe on fd 3, in the directory the command was
// started in (so relative paths on the command line mean the same).
func startStage(exe, stage string, setsid bool) (*exec.Cmd, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(os.Environ(), envStage+"="+stage)
	cmd.Dir = os.Getenv(envCwd)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("starting the %s: %w", stage, err)
	}
	return cmd, r, nil
}

// waitReady reports whether the child wrote its ready byte before it
// closed the pipe (by exiting).
func waitReady(r *os.File) bool {
	defer r.Close()
	var b [1]byte
	n, _ := io.ReadFull(r, b[:])
	return n == 1
}

// daemonStage prepares the process that runs the daemon.
func daemonStage(cfg Config) (func(), error) {
	unix.CloseOnExec(readyFd) // nothing the daemon runs may hold the parent waiting
	ready := os.NewFile(readyFd, "ready")
	os.Unsetenv(envStage)
	if cfg.Detach && !cfg.NoChdir {
		if err := os.Chdir("/"); err != nil {
			return nil, err
		}
	}
	return func() {
		if ready != nil {
			ready.Write([]byte{1})
			ready.Close()
			ready = nil
		}
		if cfg.Detach {
			toDevNull()
		}
	}, nil
}

// toDevNull points stdin, stdout and stderr at /dev/null: a detached
// daemon has no terminal, and must not hold the starting shell's pipes
// open.
func toDevNull() {
	f, err := os.OpenFile("/dev/null", os.O_RDWR, 0)
	if err != nil {
		return
	}
	for fd := 0; fd <= 2; fd++ {
		unix.Dup2(int(f.Fd()), fd)
	}
	f.Close()
}

// crashSignals are the deaths after which the monitor restarts the
// daemon, as OVS's: faults, aborts, resource limits. SIGTERM, SIGINT and
// SIGKILL are someone stopping it.
var crashSignals = map[syscall.Signal]bool{
	syscall.SIGABRT: true, syscall.SIGALRM: true, syscall.SIGBUS: true, syscall.SIGFPE: true,
	syscall.SIGILL: true, syscall.SIGPIPE: true, syscall.SIGSEGV: true, syscall.SIGXCPU: true,
	syscall.SIGXFSZ: true,
}

// goPanicStatus is the exit status of a Go program that panicked or hit
// a fatal runtime error: the Go analogue of a crash signal.
const goPanicStatus = 2

// minRestartInterval spaces restarts, so a daemon that crashes at once
// does not spin.
var minRestartInterval = 10 * time.Second

// monitor runs the daemon as a child and restarts it when it crashes,
// returning the exit status for the monitor: the daemon's, once it exits
// without crashing. ready (nil in the foreground) is signalled when the
// first daemon is ready.
func monitor(cfg Config, ready *os.File) int {
	os.Unsetenv(envStage)
	logFile := cfg.LogFile
	cfg.LogFile = ""             // the daemon opens and announces it; we append the odd line
	vl, err := newVlog(cfg, nil) // stderr and syslog, as the daemon
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", filepath.Base(os.Args[0]), err)
		return 1
	}
	logger := vl.Logger("daemon_unix")
	log := func(lvl slog.Level, msg string) {
		if logFile != "" && vl.OpenFileSilently(logFile) == nil {
			defer vl.CloseFile()
		}
		logger.Log(context.Background(), lvl, msg)
	}
	if cfg.Detach && !cfg.NoChdir {
		os.Chdir("/")
	}
	exe, err := selfPath()
	if err != nil {
		log(slog.LevelError, "monitor: cannot find the program to run: "+err.Error())
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	everReady := false
	// becameReady, when the first daemon is ready, tells the --detach
	// parent so and lets go of the console.
	becameReady := func() {
		everReady = true
		if ready != nil {
			ready.Write([]byte{1})
			ready.Close()
			ready = nil
		}
		if cfg.Detach {
			vl.SetConsole(nil)
			toDevNull()
		}
	}
	for {
		started := time.Now()
		child, readyR, err := startStage(exe, "daemon", false)
		if err != nil {
			log(slog.LevelError, "monitor: "+err.Error())
			return 1
		}
		readyCh := make(chan bool, 1)
		go func() { readyCh <- waitReady(readyR) }()
		exited := make(chan *os.ProcessState, 1)
		go func() { st, _ := child.Process.Wait(); exited <- st }()
		var st *os.ProcessState
		stopping := false
	wait:
		for {
			select {
			case ok := <-readyCh:
				if ok && !everReady {
					becameReady()
				}
			case s := <-sigs:
				stopping = true
				child.Process.Signal(s)
			case st = <-exited:
				break wait
			}
		}
		pid := child.Process.Pid
		if stopping || !everReady {
			return exitStatus(st)
		}
		if !crashed(st) {
			log(slog.LevelInfo, fmt.Sprintf("pid %d died, %s, exiting", pid, describe(st)))
			return exitStatus(st)
		}
		log(slog.LevelError, fmt.Sprintf("pid %d died, %s, restarting", pid, describe(st)))
		if wait := minRestartInterval - time.Since(started); wait > 0 {
			select {
			case <-time.After(wait):
			case <-sigs:
				return 0
			}
		}
	}
}

func crashed(st *os.ProcessState) bool {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok {
		return false
	}
	if ws.Signaled() {
		return crashSignals[ws.Signal()]
	}
	return ws.ExitStatus() == goPanicStatus
}

// exitStatus is the child's exit status, or 128+N for a child killed by
// signal N, as a shell reports it.
func exitStatus(st *os.ProcessState) int {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return max(st.ExitCode(), 0)
}

func describe(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Signaled():
			return fmt.Sprintf("killed (%s)", ws.Signal())
		case ws.ExitStatus() == goPanicStatus:
			return "exit status 2 (a Go panic or fatal runtime error)"
		}
		return fmt.Sprintf("exit status %d", ws.ExitStatus())
	}
	return st.String()
}

// Mlockall locks the process's memory, current and future, for
// --mlockall. Failing is logged, not fatal, as for ovs-vswitchd.
func (d *Daemon) Mlockall() {
	if !d.cfg.Mlockall {
		return
	}
	if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE); err != nil {
		d.moduleLogger("vswitchd").Error("mlockall failed", "err", err)
	}
}
