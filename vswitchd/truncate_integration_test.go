package vswitchd

import (
	"encoding/binary"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
)

// TestIntegrationTruncateCheckPktLarger: check_pkt_larger(200) splits
// real UDP frames by length in the kernel (OVS_ACTION_ATTR_CHECK_PKT_LEN):
// the longer ones go out truncated to 100 bytes by output(port=2,
// max_len=100) (OVS_ACTION_ATTR_TRUNC), the shorter ones whole; a clone
// between them outputs a rewritten copy to LOCAL and leaves the frame as
// it was. Both kinds are sent twice, so the second of each meets the
// installed datapath flow rather than the upcall's execute.
func TestIntegrationTruncateCheckPktLarger(t *testing.T) {
	b := newBed(t)
	b.start(t, "--fail-mode", "secure")
	for _, f := range []string{
		"table=0,priority=100,in_port=1,udp,actions=clone(mod_dl_dst:02:00:00:00:00:99,LOCAL),check_pkt_larger(200)->NXM_NX_REG0[0],resubmit(,1)",
		"table=1,priority=100,reg0=0x1/0x1,udp,actions=output(port=2,max_len=100)",
		"table=1,priority=10,udp,actions=output:2",
	} {
		b.ofctl(t, "add-flow", f)
	}
	tx := testbed.OpenRaw(t, b.h1, "eth0")
	rx := testbed.OpenRaw(t, b.h2, "eth0")
	lens := map[uint16]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(lens) < 4 {
			f, err := rx.Recv(5*time.Second, func(f []byte) bool {
				return len(f) >= 42 && f[23] == 17 && binary.BigEndian.Uint16(f[36:]) == 9999
			})
			if err != nil {
				return
			}
			lens[binary.BigEndian.Uint16(f[34:])] = len(f)
		}
	}()
	for i, n := range []int{300, 120, 300, 120} {
		if err := tx.Send(bigUDPFrame(b.mac1, b.mac2, uint16(1000+i), 9999, n)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // let the first of each install its flow
	}
	<-done
	dp, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	t.Logf("ovs-dpctl dump-flows:\n%s", dp)
	for i, want := range []int{100, 120, 100, 120} {
		if got := lens[uint16(1000+i)]; got != want {
			t.Errorf("frame %d: %d bytes arrived, want %d", i, got, want)
		}
	}
	if !strings.Contains(string(dp), "check_pkt_len(size=200,gt(trunc(100),") {
		t.Errorf("no datapath flow with check_pkt_len and trunc:\n%s", dp)
	}
}
