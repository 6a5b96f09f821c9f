package netlinkio

import (
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// Conn is a control-plane generic netlink connection, over
// mdlayher/genetlink: family lookup, single requests, dumps and multicast
// notifications. It allocates per message and is meant for the cold paths
// (creating datapaths and vports, reading their attributes). The hot paths
// use Socket.
//
// A Conn is safe for concurrent use, as genetlink.Conn is; but a Conn that
// has joined a multicast group should be used only to Receive, so that
// notifications do not interleave with replies.
type Conn struct {
	c *genetlink.Conn
}

// Family is a generic netlink family as the kernel registered it.
type Family struct {
	Name    string
	ID      uint16
	Version uint8
	// Groups maps multicast group names to their IDs.
	Groups map[string]uint32
}

// Dial opens a Conn.
func Dial() (*Conn, error) {
	c, err := genetlink.Dial(nil)
	if err != nil {
		return nil, opError("dial", err)
	}
	return &Conn{c: c}, nil
}

// Close closes the connection, unblocking a Receive in progress.
func (c *Conn) Close() error { return c.c.Close() }

// Family looks up a family by name. A family that is not registered (the
// openvswitch module is not loaded, say) fails with an error for which
// errors.Is(err, unix.ENOENT).
func (c *Conn) Family(name string) (Family, error) {
	f, err := c.c.GetFamily(name)
	if err != nil {
		return Family{}, opError("family "+name, err)
	}
	out := Family{Name: f.Name, ID: f.ID, Version: f.Version, Groups: make(map[string]uint32, len(f.Groups))}
	for _, g := range f.Groups {
		out.Groups[g.Name] = g.ID
	}
	return out, nil
}

// Execute sends one request, payload being the family header and
// attributes, and returns the payloads (family header and attributes,
// after the genlmsghdr) of the reply messages. With FlagDump it returns
// every message of the dump. A kernel error comes back as an *OpError
// wrapping the errno; op names the request in it.
func (c *Conn) Execute(op string, fam Family, cmd uint8, flags uint16, payload []byte) ([][]byte, error) {
	msgs, err := c.c.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: fam.Version},
		Data:   payload,
	}, fam.ID, netlink.HeaderFlags(flags|FlagRequest))
	if err != nil {
		return nil, opError(op, err)
	}
	out := make([][]byte, len(msgs))
	for i := range msgs {
		out[i] = msgs[i].Data
	}
	return out, nil
}

// JoinGroup subscribes the connection to a multicast group; Receive then
// returns its notifications.
func (c *Conn) JoinGroup(id uint32) error { return opError("join group", c.c.JoinGroup(id)) }

// Notification is one multicast message: its generic netlink command and
// payload (family header and attributes).
type Notification struct {
	Family  uint16
	Command uint8
	Data    []byte
}

// Receive waits for the next batch of messages on a connection that joined
// a group.
func (c *Conn) Receive() ([]Notification, error) {
	msgs, nlmsgs, err := c.c.Receive()
	if err != nil {
		return nil, opError("receive", err)
	}
	out := make([]Notification, len(msgs))
	for i := range msgs {
		out[i] = Notification{Family: uint16(nlmsgs[i].Header.Type), Command: msgs[i].Header.Command, Data: msgs[i].Data}
	}
	return out, nil
}

// SetReadDeadline sets the deadline of Receive.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.c.SetReadDeadline(t) }
