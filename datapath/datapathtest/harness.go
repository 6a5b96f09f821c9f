// Package datapathtest is the contract every datapath.Datapath meets: one
// suite, Run, that the in-memory datapath passes in an ordinary test and
// the kernel datapath passes in the test bed. What differs between them
// (how a test gets a network device with a far end it can send on and
// capture from, what names are free, what real tools can see) is the
// Harness.
package datapathtest

import (
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
)

// Harness adapts the suite to one datapath implementation.
type Harness struct {
	// Provider creates, opens and deletes the datapaths under test.
	Provider datapath.Provider
	// DPName returns a datapath name (at most 15 bytes) that no other
	// datapath or device uses, unique per call.
	DPName func(t *testing.T) string
	// NewLink makes a network device the datapath can attach as a netdev
	// vport, and returns the test's far end of it. It is torn down in
	// t.Cleanup.
	NewLink func(t *testing.T) Link
	// WantPerCPU says that per-CPU upcall dispatch must be negotiated
	// (kernel 5.15 and later, and the dummy).
	WantPerCPU bool
	// DumpFlowsTool, when set, lists the datapath's flows as a real tool
	// prints them (ovs-dpctl dump-flows), one flow per line, so the suite
	// can check the tool sees what the datapath dumped.
	DumpFlowsTool func(t *testing.T, dpName string) []string
	// Timeout bounds every wait for a frame or an upcall; 0 means 5 s.
	Timeout time.Duration
}

func (h *Harness) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return 5 * time.Second
}

// Link is a network device as the test sees it from the wire's far end.
type Link interface {
	// Name is the device's name on the datapath's side, for a netdev
	// vport.
	Name() string
	// Send puts frame on the wire towards the datapath.
	Send(frame []byte) error
	// Recv returns the first frame the datapath sent out on the device
	// for which match is true (nil matches any), waiting up to timeout;
	// an error wrapping os.ErrDeadlineExceeded when none came.
	Recv(timeout time.Duration, match func(frame []byte) bool) ([]byte, error)
}
