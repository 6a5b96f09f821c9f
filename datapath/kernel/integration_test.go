package kernel

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath/datapathtest"
	"github.com/govswitch/govswitch/internal/testbed"
)

// rawLink is a veth pair: Name is the end in the test's namespace that the
// datapath attaches; the test sends and captures on the peer, inside a
// namespace of its own, with a packet socket.
type rawLink struct {
	name string
	raw  *testbed.RawConn
}

func (l rawLink) Name() string            { return l.name }
func (l rawLink) Send(frame []byte) error { return l.raw.Send(frame) }
func (l rawLink) Recv(timeout time.Duration, match func([]byte) bool) ([]byte, error) {
	return l.raw.Recv(timeout, match)
}

var seq atomic.Uint32

// uniqueName returns an interface name unique to this process and call.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s%d_%d", prefix, os.Getpid()%100000, seq.Add(1))
}

func newLink(t *testing.T) datapathtest.Link {
	ns := testbed.NewNetns(t)
	host := uniqueName("gv")
	testbed.Veth(t, host, ns, "eth0", "")
	// A veth drops what it is given until link watch has seen its carrier
	// and swapped in its real qdisc; wait for both ends to say "up".
	deadline := time.Now().Add(5 * time.Second)
	for {
		hostUp, _ := os.ReadFile("/sys/class/net/" + host + "/operstate")
		peerUp, _ := ns.Exec("cat", "/sys/class/net/eth0/operstate")
		if strings.TrimSpace(string(hostUp)) == "up" && strings.TrimSpace(peerUp) == "up" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("veth %s: operstate %q, peer %q after 5s", host, hostUp, peerUp)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return rawLink{name: host, raw: testbed.OpenRaw(t, ns, "eth0")}
}

// dumpFlowsTool runs the real ovs-dpctl against the datapath.
func dumpFlowsTool(t *testing.T, dp string) []string {
	t.Helper()
	out, err := exec.Command("ovs-dpctl", "dump-flows", "--more", "--no-names", "system@"+dp).Output()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows system@%s: %v", dp, err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func harness() datapathtest.Harness {
	return datapathtest.Harness{
		Provider:      Provider{},
		DPName:        func(*testing.T) string { return uniqueName("gd") },
		NewLink:       newLink,
		WantPerCPU:    true, // kernel 6.1 has it (5.15+)
		DumpFlowsTool: dumpFlowsTool,
	}
}

// TestIntegrationContract runs the datapath contract against the kernel
// module: scripts/kernel-test ./datapath/kernel
func TestIntegrationContract(t *testing.T) {
	testbed.Require(t)
	datapathtest.Run(t, harness())
}
