package unixctl

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Pidfile is a daemon's pidfile, held locked for the daemon's life.
//
// ovs-appctl finds its target by reading <rundir>/<program>.pid and
// checking, with F_GETLK, that the pid written there holds a POSIX record
// lock on the file. So the lock is an fcntl F_SETLK write lock on an fd
// kept open — not flock(2), which F_GETLK cannot see, and not an OFD lock,
// whose owner reads back as -1.
type Pidfile struct {
	f    *os.File
	path string
}

// CreatePidfile writes the calling process's pid to path and locks it. It
// fails if another live process holds the lock, naming that process.
func CreatePidfile(path string) (*Pidfile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pidfile %s: %w", path, err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		probe := unix.Flock_t{Type: unix.F_WRLCK}
		gerr := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &probe)
		f.Close()
		if gerr == nil && probe.Type != unix.F_UNLCK {
			return nil, fmt.Errorf("pidfile %s is locked by pid %d: is another daemon running?", path, probe.Pid)
		}
		return nil, fmt.Errorf("pidfile %s: lock: %w (is another daemon running?)", path, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("pidfile %s: %w", path, err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("pidfile %s: %w", path, err)
	}
	return &Pidfile{f: f, path: path}, nil
}

// Path returns the pidfile's path.
func (p *Pidfile) Path() string { return p.path }

// Remove deletes the pidfile and releases its lock.
func (p *Pidfile) Remove() error {
	err := os.Remove(p.path)
	p.f.Close()
	return err
}

// ReadPidfile returns the pid written in path if a live process holds its
// lock, as ovs-appctl checks it.
func ReadPidfile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(string(trimNL(b)))
	if err != nil {
		return 0, fmt.Errorf("pidfile %s: bad contents %q", path, b)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
		return 0, fmt.Errorf("pidfile %s: F_GETLK: %w", path, err)
	}
	if lk.Type == unix.F_UNLCK {
		return 0, fmt.Errorf("pidfile %s is not locked: stale", path)
	}
	if int(lk.Pid) != pid {
		return 0, fmt.Errorf("pidfile %s names pid %d but pid %d holds its lock", path, pid, lk.Pid)
	}
	return pid, nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// SocketPath returns where program's control socket lives: the name
// ovs-appctl derives from the pidfile, <rundir>/<program>.<pid>.ctl.
func SocketPath(rundir, program string, pid int) string {
	return filepath.Join(rundir, fmt.Sprintf("%s.%d.ctl", program, pid))
}

func umask(m int) int { return unix.Umask(m) }
