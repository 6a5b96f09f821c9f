package netlinkio

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// OpError is the error of a netlink operation: Op names what was being done
// ("sendmsg", "recvmmsg", "transact", "dump", "family ovs_flow", ...) and
// Err is the cause, usually a unix.Errno taken from the kernel's
// NLMSG_ERROR reply or from a failed system call. errors.Is(err,
// unix.ENOENT) and errors.Is(err, os.ErrNotExist) both see through it.
type OpError struct {
	Op  string
	Err error
}

func (e *OpError) Error() string {
	if e.Err == nil {
		return "netlinkio: " + e.Op + ": <nil>"
	}
	return "netlinkio: " + e.Op + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

// opError wraps err, unless it is nil. Errors that arrive from
// mdlayher/netlink are unwrapped down to their errno first, so the chain a
// caller sees is one OpError deep and ends in the unix.Errno.
func opError(op string, err error) error {
	if err == nil {
		return nil
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		err = errno
	}
	return &OpError{Op: op, Err: err}
}

// Errno extracts the errno an error carries, or 0 when it carries none.
func Errno(err error) unix.Errno {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return 0
}
