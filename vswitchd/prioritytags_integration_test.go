package vswitchd

import (
	"encoding/binary"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
)

// priorityTagsRun sends, from h1 on a trunk port, UDP frames on VLAN 10
// with priority 5 and then 0, and returns what tcpdump -e showed of each at
// h2 (access 10, priority-tags=if-nonzero) and h3 (access 10, no setting),
// reduced to the 802.1Q part: "vlan 0, p 5" or "untagged".
func (b *groupBed) priorityTagsRun(t *testing.T, vsctl func(args ...string) string, ofctl func(args ...string) (string, error)) [2][2]string {
	t.Helper()
	vsctl("set", "Port", b.ports[0], "trunks=10")
	vsctl("set", "Port", b.ports[1], "tag=10", "other_config:priority-tags=if-nonzero")
	vsctl("set", "Port", b.ports[2], "tag=10")
	if out, err := ofctl("add-flow", "actions=NORMAL"); err != nil {
		t.Fatalf("add-flow: %v\n%s", err, out)
	}
	time.Sleep(500 * time.Millisecond)
	var got [2][2]string
	tx := testbed.OpenRaw(t, b.hosts[0], "eth0")
	defer tx.Close()
	vlanRE := regexp.MustCompile(`vlan \d+, p \d+`)
	for i, pcp := range []uint16{5, 0} {
		outs := make(chan [2]string)
		for h := 1; h <= 2; h++ {
			go func(h int) {
				out, _ := b.hosts[h].Exec("timeout", "6", "tcpdump", "-i", "eth0", "-e", "-nn", "-c", "1", "ether src "+b.macs[0].String())
				outs <- [2]string{string(rune('0' + h)), out}
			}(h)
		}
		time.Sleep(2 * time.Second) // tcpdump starting
		f := udpFrame(b.macs[0], b.macs[1], 7000+uint16(i), 7001)
		tagged := append(append(append([]byte{}, f[:12]...), 0x81, 0x00, 0, 0), f[12:]...)
		binary.BigEndian.PutUint16(tagged[14:], pcp<<13|10)
		copy(tagged[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		for range 3 {
			if err := tx.Send(tagged); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		for range 2 {
			o := <-outs
			h := int(o[0][0] - '1')
			line := ""
			for _, l := range strings.Split(o[1], "\n") {
				if strings.Contains(l, b.macs[0].String()) {
					line = l
					break
				}
			}
			switch {
			case line == "":
				got[i][h] = "nothing"
			case vlanRE.MatchString(line):
				got[i][h] = vlanRE.FindString(line)
			default:
				got[i][h] = "untagged"
			}
			t.Logf("priority %d at h%d: %s", pcp, h+2, line)
		}
	}
	return got
}

// TestIntegrationPriorityTags: Port other_config:priority-tags=if-nonzero
// makes NORMAL output a frame of nonzero priority to an access port with
// an 802.1Q header of VLAN 0 carrying the priority, as ovs-vswitchd 3.1
// does in the same bed; a frame of priority 0, and any frame to an access
// port without the setting, leave untagged.
func TestIntegrationPriorityTags(t *testing.T) {
	b := newGroupBed(t)
	o := startOVS(t)
	ovsVsctl := func(args ...string) string { return o.must(t, "ovs-vsctl", args...) }
	b.configure(ovsVsctl)
	ovsMgmt := filepath.Join(o.dir, b.name+".mgmt")
	ovs := b.priorityTagsRun(t, ovsVsctl, func(args ...string) (string, error) { return ofctlAt(ovsMgmt, args...) })
	o.exitCleanup(t, b.name)

	g := startGovSwitch(t, b.rundir)
	govVsctl := func(args ...string) string { t.Helper(); return g.vsctl(t, args...) }
	b.configure(govVsctl)
	govMgmt := g.mgmt(t, b.name)
	gov := b.priorityTagsRun(t, govVsctl, func(args ...string) (string, error) { return ofctlAt(govMgmt, args...) })

	want := [2][2]string{{"vlan 0, p 5", "untagged"}, {"untagged", "untagged"}}
	if ovs != want {
		t.Errorf("ovs-vswitchd: h2, h3 saw %v, want %v", ovs, want)
	}
	if gov != ovs {
		t.Errorf("govswitchd: h2, h3 saw %v; ovs-vswitchd %v", gov, ovs)
	}
}
