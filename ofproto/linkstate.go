package ofproto

import (
	"net"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Link state of the bridge's network devices, for the liveness that fast
// failover groups watch: a port whose device has no carrier (a veth whose
// peer is down, a NIC without link) is not live, as ovs-vswitchd takes
// OFPPS_LINK_DOWN from the netdev's carrier. The bridge follows the
// kernel's RTM_NEWLINK notifications and re-translates when a port's link
// changes, so failover takes effect at the next packet.

// ofppsLinkDown is OFPPS_LINK_DOWN, the port state bit (the same in every
// OpenFlow version) that port descriptions carry for a port without link,
// as ovs-vswitchd's do.
const ofppsLinkDown uint32 = 1 << 0

// linkWatch is the running watcher of a bridge.
type linkWatch struct {
	done chan struct{}
	wg   sync.WaitGroup
}

// linkDownOf reports whether the device named name, index ifindex, has
// no carrier; false when it cannot be read.
func linkDownOf(ifindex int, name string) bool {
	ifi, err := net.InterfaceByIndex(ifindex)
	if err != nil || ifi.Name != name {
		return false
	}
	return ifi.Flags&net.FlagRunning == 0
}

// startLinkWatch follows link changes of the bridge's devices. It does
// nothing for a datapath whose ports are not host devices (the dummy).
func (b *Bridge) startLinkWatch() {
	if !b.hostDevices {
		return
	}
	w := &linkWatch{done: make(chan struct{})}
	ch := make(chan netlink.LinkUpdate, 64)
	err := netlink.LinkSubscribeWithOptions(ch, w.done, netlink.LinkSubscribeOptions{ListExisting: true,
		ErrorCallback: func(error) {}})
	if err != nil {
		// Without notifications the link state stays as the ports were
		// added; fast failover then follows administrative state only.
		return
	}
	b.links = w
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for u := range ch {
			if u.Attrs() == nil {
				continue
			}
			b.setLinkDown(u.Attrs().Name, u.Flags&unix.IFF_LOWER_UP == 0 && u.Flags&unix.IFF_RUNNING == 0)
			b.setHWAddr(u.Attrs().Name, u.Attrs().HardwareAddr)
		}
	}()
}

func (b *Bridge) stopLinkWatch() {
	if w := b.links; w != nil {
		close(w.done)
		w.wg.Wait()
		b.links = nil
	}
}

// setLinkDown records the link state of the port whose device is name.
func (b *Bridge) setLinkDown(name string, down bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.portNamed(name)
	if err != nil || p.LinkDown == down {
		return
	}
	np := *p
	np.LinkDown = down
	if b.Ports.Add(np) == nil {
		b.Tables.Invalidate()
	}
}

// setHWAddr records the Ethernet address of the port whose device is
// name (the bridge's own port takes the bridge's address when it is
// configured), for OpenFlow's port descriptions.
func (b *Bridge) setHWAddr(name string, mac net.HardwareAddr) {
	if len(mac) != 6 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.portNamed(name)
	if err != nil || [6]byte(mac) == p.HWAddr {
		return
	}
	np := *p
	np.HWAddr = [6]byte(mac)
	b.Ports.Add(np)
}
