package dummy

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/datapath/datapathtest"
)

// link is a Netdev seen from the test's end.
type link struct{ dev *Netdev }

func (l link) Name() string            { return l.dev.Name() }
func (l link) Send(frame []byte) error { return l.dev.Send(frame) }
func (l link) Recv(timeout time.Duration, match func([]byte) bool) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	for {
		f, err := l.dev.Recv(time.Until(deadline))
		if err != nil {
			return nil, err
		}
		if match == nil || match(f) {
			return f, nil
		}
	}
}

var names atomic.Uint32

func harness(p *Provider) datapathtest.Harness {
	return datapathtest.Harness{
		Provider:   p,
		DPName:     func(t *testing.T) string { return fmt.Sprintf("dp%d", names.Add(1)) },
		WantPerCPU: true,
		Timeout:    2 * time.Second,
		NewLink: func(t *testing.T) datapathtest.Link {
			dev, err := p.AddNetdev(fmt.Sprintf("veth%d", names.Add(1)))
			if err != nil {
				t.Fatal(err)
			}
			return link{dev}
		},
	}
}

func TestContract(t *testing.T) {
	datapathtest.Run(t, harness(New()))
}

func TestNetdevErrors(t *testing.T) {
	p := New()
	d, err := p.AddNetdev("eth0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddNetdev("eth0"); err == nil {
		t.Error("AddNetdev twice succeeded")
	}
	if err := d.Send([]byte{1}); err == nil {
		t.Error("Send on a detached netdev succeeded")
	}
	if _, err := d.Recv(time.Millisecond); !os.IsTimeout(err) && err == nil {
		t.Errorf("Recv on idle netdev: %v", err)
	}
	dp, err := p.Create("eth0", datapath.Config{})
	if err == nil {
		dp.Close()
		t.Error("Create over an existing device name succeeded")
	}
}
