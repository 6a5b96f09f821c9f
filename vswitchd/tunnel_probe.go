package vswitchd

import (
	"errors"
	"fmt"
	"strconv"
	"syscall"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ovsdb"
)

// bareudp and gtpu Interfaces (issue 17). govswitchd carries neither. On
// the kernel datapath ovs-vswitchd 3.1 makes a bareudp port a bareudp
// device over rtnetlink attached as a netdev vport, or, where the kernel
// has no bareudp (Debian's 6.1 kernels, UML's and the vm bed's), asks for
// its own vport type 111, which the kernel refuses with EAFNOSUPPORT; it
// supports gtpu in the userspace datapath only, and on the kernel one
// asks for vport type 110, refused the same way. govswitchd takes the
// same steps (datapath.KernelTunnelProber), undoes what succeeded, and
// refuses the port with the kernel's answer in ovs-vswitchd's words: the
// Interface error "could not add network device gt0 to ofproto (Address
// family not supported by protocol)" and dpif's WARN before the bridge's.
// Where the kernel would have taken the vport, the refusal says that
// govswitchd does not carry the type.

// refuseTunnel refuses bareudp or gtpu Interface p of bridge b; it never
// adds a port.
func (s *ovsdbSwitch) refuseTunnel(b *ofproto.Bridge, p *ovsdb.PortConfig) error {
	port, ethertype, multiproto, err := probedTunnelOptions(p)
	if err != nil {
		return err
	}
	pr, ok := b.DP.(datapath.KernelTunnelProber)
	if !ok {
		return fmt.Errorf("interface type %q is not supported by govswitchd", p.Type)
	}
	err = pr.ProbeTunnelVport(p.Type, port, ethertype, multiproto)
	var en syscall.Errno
	switch {
	case err == nil || errors.Is(err, datapath.ErrNotSupported):
		return fmt.Errorf("interface type %q is not supported by govswitchd (%v)", p.Type, err)
	case errors.As(err, &en):
		msg := en.Error()
		if msg != "" && msg[0] >= 'a' && msg[0] <= 'z' {
			msg = string(msg[0]-'a'+'A') + msg[1:]
		}
		s.d.moduleLogger("dpif").Warn(fmt.Sprintf("system@%s: failed to add %s as port: %s", b.DP.Name(), p.Name, msg))
		// Not an errno: the database layer words it as ovs-vswitchd's
		// "could not add network device NAME to ofproto (MSG)".
		return errors.New(msg)
	}
	return err
}

// probedTunnelOptions reads a bareudp or gtpu Interface's options as
// ovs-vswitchd's set_tunnel_config reads those its vport needs: dst_port
// (bareudp: none is port 0; gtpu: 2152) and bareudp's payload_type (mpls
// or ip, each in multiproto mode, or an ethertype number).
func probedTunnelOptions(p *ovsdb.PortConfig) (port, ethertype uint16, multiproto bool, err error) {
	if v, ok := p.Options["dst_port"]; ok {
		n, perr := strconv.ParseUint(v, 10, 16)
		if perr != nil {
			return 0, 0, false, fmt.Errorf("%s: %s tunnel: dst_port=%q is not a UDP port", p.Name, p.Type, v)
		}
		port = uint16(n)
	}
	if p.Type != datapath.TunnelBareUDP {
		return port, 0, false, nil
	}
	switch v := p.Options["payload_type"]; v {
	case "mpls":
		return port, 0x8847, true, nil
	case "ip":
		return port, 0x0800, true, nil
	default:
		n, perr := strconv.ParseUint(v, 0, 16)
		if perr != nil {
			return 0, 0, false, fmt.Errorf("%s: bareudp tunnel: payload_type=%q: want mpls, ip or an ethertype", p.Name, v)
		}
		return port, uint16(n), false, nil
	}
}
