package ofproto

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// bond-detect-mode=miimon, as ovs-vswitchd's netdev-linux.c has it: every
// MiimonInterval each member's link status is read with the MII ioctls
// (SIOCGMIIPHY, then SIOCGMIIREG of the basic mode status register's
// link bit) or, where the driver has no MII (veth, most virtual
// devices), with ethtool's ETHTOOL_GLINK; that reading, not the carrier
// the kernel announces, is the member's link. A member not polled yet
// follows its carrier. The bond's runner polls (lacp_bond.go's runLoop).

// miimonProbe reads a device's link status. Tests replace it, and set
// miimonAnyDatapath to poll on a datapath whose ports are no host
// devices (the dummy).
var (
	miimonProbe       = miimonLink
	miimonAnyDatapath = false
)

// miimonLink reads the link status of device name as netdev_linux_get_miimon
// does: MII first, ethtool when MII fails. A device neither answers is
// down, as in OVS.
func miimonLink(name string) (up bool, err error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	// struct ifreq: the name, then a union where the MII ioctls keep
	// struct mii_ioctl_data {phy_id, reg_num, val_in, val_out uint16}.
	var mii struct {
		name [unix.IFNAMSIZ]byte
		data [4]uint16
		_    [16]byte
	}
	copy(mii.name[:unix.IFNAMSIZ-1], name)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCGMIIPHY, uintptr(unsafe.Pointer(&mii))); e == 0 {
		mii.data[1] = 1 // MII_BMSR
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCGMIIREG, uintptr(unsafe.Pointer(&mii))); e == 0 {
			return mii.data[3]&0x0004 != 0, nil // BMSR_LSTATUS
		}
	}
	// SIOCETHTOOL: the union holds a pointer to struct ethtool_value.
	val := struct{ cmd, data uint32 }{cmd: unix.ETHTOOL_GLINK}
	et := struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte
	}{name: mii.name, data: unsafe.Pointer(&val)}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&et))); e != 0 {
		return false, e
	}
	return val.data != 0, nil
}

// linkUp is member p's link: the last miimon reading in miimon mode,
// else (and before the first reading) its carrier. The caller holds bd.mu.
func (bd *Bond) linkUp(p *Port) bool {
	if up, ok := bd.miimon[p.Name]; ok && bd.Config.MiimonInterval > 0 {
		return up
	}
	return !p.LinkDown
}

// pollMiimon reads the links of st's members when the interval is up and
// reports whether one changed; next is when to poll again (zero: never).
func (bd *Bond) pollMiimon(st *bondState, now time.Time) (changed bool, next time.Time) {
	iv := bd.Config.MiimonInterval
	if iv <= 0 || st == nil {
		return false, time.Time{}
	}
	if now.Before(bd.miimonAt) {
		return false, bd.miimonAt
	}
	bd.miimonAt = now.Add(iv)
	for _, p := range st.members {
		up, err := miimonProbe(p.Name)
		if err != nil && bd.Config.Log != nil && !bd.miimonWarned[p.Name] {
			bd.Config.Log.Warn("member " + p.Name + ": miimon link status failed: " + err.Error())
		}
		bd.mu.Lock()
		if bd.miimon == nil {
			bd.miimon, bd.miimonWarned = map[string]bool{}, map[string]bool{}
		}
		if err != nil {
			bd.miimonWarned[p.Name] = true
		}
		before := bd.linkUp(p)
		bd.miimon[p.Name] = up
		changed = changed || before != up
		bd.mu.Unlock()
	}
	return changed, bd.miimonAt
}
