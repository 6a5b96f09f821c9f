package conntrack

import (
	"encoding/binary"
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Timeout policies: named per-protocol conntrack timeouts, kept by the
// kernel's cttimeout (NETLINK_NETFILTER, subsystem
// NFNL_SUBSYS_CTNETLINK_TIMEOUT; linux/netfilter/nfnetlink_cttimeout.h).
// A ct(commit) action of the openvswitch datapath names one
// (OVS_CT_ATTR_TIMEOUT) to give the connection it commits those timeouts.
// Each kernel policy is for one L3 and one L4 protocol.

const (
	nfnlSubsysCttimeout = 8
	msgTimeoutNew       = 0
	msgTimeoutGet       = 1
	msgTimeoutDelete    = 2

	ctaTimeoutName    = 1
	ctaTimeoutL3Proto = 2
	ctaTimeoutL4Proto = 3
	ctaTimeoutData    = 4

	// TimeoutNameMax is CTNL_TIMEOUT_NAME_MAX, the NUL included.
	TimeoutNameMax = 32
)

// The per-protocol attributes of CTA_TIMEOUT_DATA: seconds, big-endian.
const (
	TimeoutTCPSynSent     = 1
	TimeoutTCPSynRecv     = 2
	TimeoutTCPEstablished = 3
	TimeoutTCPFinWait     = 4
	TimeoutTCPCloseWait   = 5
	TimeoutTCPLastAck     = 6
	TimeoutTCPTimeWait    = 7
	TimeoutTCPClose       = 8
	TimeoutTCPSynSent2    = 9
	TimeoutTCPRetrans     = 10
	TimeoutTCPUnack       = 11

	TimeoutUDPUnreplied = 1
	TimeoutUDPReplied   = 2

	TimeoutICMP = 1 // ICMP and ICMPv6
)

// TimeoutPolicy is one kernel timeout policy.
type TimeoutPolicy struct {
	Name string
	L3   uint16 // unix.AF_INET or unix.AF_INET6
	L4   uint8  // unix.IPPROTO_TCP, _UDP, _ICMP or _ICMPV6
	// Timeouts maps the protocol's attribute (TimeoutTCPSynSent, ...) to
	// seconds; an attribute left out keeps the kernel's default.
	Timeouts map[uint16]uint32
}

func cttimeout(typ uint16, flags netlink.HeaderFlags, attrs []byte) ([][]byte, error) {
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, nil)
	if err != nil {
		return nil, fmt.Errorf("cttimeout: %w", err)
	}
	defer c.Close()
	msg := netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(nfnlSubsysCttimeout<<8 | typ),
		Flags: netlink.Request | flags}, Data: append([]byte{unix.AF_UNSPEC, 0, 0, 0}, attrs...)}
	msgs, err := c.Execute(msg)
	if err != nil {
		return nil, fmt.Errorf("cttimeout: %w", err)
	}
	out := make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Data)
	}
	return out, nil
}

func checkName(name string) error {
	if name == "" || len(name) >= TimeoutNameMax {
		return fmt.Errorf("cttimeout: policy name %q: want 1 to %d bytes: %w", name, TimeoutNameMax-1, unix.EINVAL)
	}
	return nil
}

// SetTimeoutPolicy creates the policy, or changes an existing one of the
// same name and protocols. It needs the nfnetlink_cttimeout module.
func SetTimeoutPolicy(tp *TimeoutPolicy) error {
	if err := checkName(tp.Name); err != nil {
		return err
	}
	ae := netlink.NewAttributeEncoder()
	ae.String(ctaTimeoutName, tp.Name)
	ae.Bytes(ctaTimeoutL3Proto, binary.BigEndian.AppendUint16(nil, tp.L3))
	ae.Uint8(ctaTimeoutL4Proto, tp.L4)
	ae.Nested(ctaTimeoutData, func(ne *netlink.AttributeEncoder) error {
		for typ, v := range tp.Timeouts {
			ne.Bytes(typ, binary.BigEndian.AppendUint32(nil, v))
		}
		return nil
	})
	b, err := ae.Encode()
	if err != nil {
		return fmt.Errorf("cttimeout: %w", err)
	}
	_, err = cttimeout(msgTimeoutNew, netlink.Create|netlink.Acknowledge, b)
	return err
}

// DeleteTimeoutPolicy deletes a policy: an error wrapping unix.ENOENT
// when there is none of that name, unix.EBUSY while a connection uses it.
func DeleteTimeoutPolicy(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	ae := netlink.NewAttributeEncoder()
	ae.String(ctaTimeoutName, name)
	b, err := ae.Encode()
	if err != nil {
		return fmt.Errorf("cttimeout: %w", err)
	}
	_, err = cttimeout(msgTimeoutDelete, netlink.Acknowledge, b)
	return err
}

// TimeoutPolicyNames returns the names of every policy the kernel has.
func TimeoutPolicyNames() ([]string, error) {
	msgs, err := cttimeout(msgTimeoutGet, netlink.Dump, nil)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, m := range msgs {
		name, err := parseTimeoutName(m)
		if err != nil {
			return nil, err
		}
		if name != "" {
			names = append(names, name)
		}
	}
	return names, nil
}

// parseTimeoutName reads a policy message's name: the nfgenmsg, then
// attributes.
func parseTimeoutName(b []byte) (string, error) {
	if len(b) < 4 {
		return "", fmt.Errorf("cttimeout: message of %d bytes: %w", len(b), unix.EBADMSG)
	}
	ad, err := netlink.NewAttributeDecoder(b[4:])
	if err != nil {
		return "", fmt.Errorf("cttimeout: %w", err)
	}
	name := ""
	for ad.Next() {
		if ad.Type() == ctaTimeoutName {
			name = ad.String()
		}
	}
	if err := ad.Err(); err != nil {
		return "", fmt.Errorf("cttimeout: %w", err)
	}
	return name, nil
}
