package kernel

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/netlinkio"
	"golang.org/x/sys/unix"
)

// OVS_VPORT_* commands and attributes.
const (
	vportCmdNew = 1
	vportCmdDel = 2
	vportCmdGet = 3
	vportCmdSet = 4

	vportAttrPortNo    = 1
	vportAttrType      = 2
	vportAttrName      = 3
	vportAttrOptions   = 4
	vportAttrUpcallPID = 5
	vportAttrStats     = 6
	vportAttrIfindex   = 8

	tunnelAttrDstPort = 1
)

// vportRequest starts a vport request payload for the datapath.
func (d *Datapath) vportRequest() []byte {
	return binary.NativeEndian.AppendUint32(make([]byte, 0, 128), uint32(int32(d.index)))
}

// pidAttr appends the upcall PID of a new or taken-over vport: the next
// handler's, round robin.
func (d *Datapath) pidAttr(b []byte) []byte {
	i := int(d.nextPID.Add(1)-1) % len(d.pids)
	return netlinkio.AppendU32(b, vportAttrUpcallPID, d.pids[i])
}

// AddVport adds a port. Under per-vport dispatch its misses go to one
// handler, chosen round robin over the ports; under per-CPU dispatch the
// kernel ignores the port's PID.
func (d *Datapath) AddVport(spec datapath.VportSpec) (datapath.Vport, error) {
	b := d.vportRequest()
	b = netlinkio.AppendAttr(b, vportAttrName, append([]byte(spec.Name), 0))
	b = netlinkio.AppendU32(b, vportAttrType, uint32(spec.Type))
	if spec.PortNo != 0 {
		b = netlinkio.AppendU32(b, vportAttrPortNo, spec.PortNo)
	}
	b = d.pidAttr(b)
	switch spec.Type {
	case datapath.VportVXLAN, datapath.VportGeneve:
		port := spec.DstPort
		if port == 0 {
			port = 4789
			if spec.Type == datapath.VportGeneve {
				port = 6081
			}
		}
		var start int
		b, start = netlinkio.BeginNested(b, vportAttrOptions)
		b = netlinkio.AppendU16(b, tunnelAttrDstPort, port)
		b = netlinkio.EndNested(b, start)
	}
	v, err := d.vportExecute("vport new", vportCmdNew, netlinkio.FlagEcho, b)
	return v.Vport, datapath.WrapError("add vport", spec.Name, err)
}

// DeleteVport removes port portNo.
func (d *Datapath) DeleteVport(portNo uint32) error {
	b := netlinkio.AppendU32(d.vportRequest(), vportAttrPortNo, portNo)
	_, err := d.vportExecute("vport del", vportCmdDel, netlinkio.FlagEcho, b)
	return datapath.WrapError("delete vport", fmt.Sprintf("%s port %d", d.name, portNo), err)
}

// Vport returns the port called name.
func (d *Datapath) Vport(name string) (datapath.Vport, error) {
	b := netlinkio.AppendAttr(d.vportRequest(), vportAttrName, append([]byte(name), 0))
	v, err := d.vportExecute("vport get", vportCmdGet, 0, b)
	if err == nil && v.dpIndex != d.index {
		// A port of that name exists, on another datapath.
		err = unix.ENODEV
	}
	return v.Vport, datapath.WrapError("get vport", name, err)
}

// Vports returns every port of the datapath, in port number order.
func (d *Datapath) Vports() ([]datapath.Vport, error) {
	msgs, err := d.conn.Execute("vport dump", d.fams.vport, vportCmdGet, netlinkio.FlagDump, d.vportRequest())
	if err != nil {
		return nil, datapath.WrapError("list vports", d.name, err)
	}
	out := make([]datapath.Vport, 0, len(msgs))
	for _, m := range msgs {
		v, err := parseVport(m)
		if err != nil {
			return nil, datapath.WrapError("list vports", d.name, err)
		}
		if v.dpIndex == d.index {
			out = append(out, v.Vport)
		}
	}
	return out, nil
}

func (d *Datapath) setVportPID(portNo uint32) error {
	b := netlinkio.AppendU32(d.vportRequest(), vportAttrPortNo, portNo)
	b = d.pidAttr(b)
	_, err := d.vportExecute("vport set", vportCmdSet, netlinkio.FlagEcho, b)
	return err
}

type vportInfo struct {
	datapath.Vport
	dpIndex int
}

func (d *Datapath) vportExecute(op string, cmd uint8, flags uint16, b []byte) (vportInfo, error) {
	msgs, err := d.conn.Execute(op, d.fams.vport, cmd, flags, b)
	if err != nil {
		return vportInfo{}, err
	}
	if len(msgs) == 0 {
		return vportInfo{}, fmt.Errorf("%s: no reply: %w", op, unix.EBADMSG)
	}
	return parseVport(msgs[0])
}

// parseVport decodes an OVS_VPORT_CMD_* payload (ovs_header, attributes).
func parseVport(b []byte) (vportInfo, error) {
	var v vportInfo
	if len(b) < datapath.OVSHeaderLen {
		return v, fmt.Errorf("vport message of %d bytes: %w", len(b), unix.EBADMSG)
	}
	v.dpIndex = int(int32(binary.NativeEndian.Uint32(b)))
	it := netlinkio.NewAttrIter(b[datapath.OVSHeaderLen:])
	for it.Next() {
		data := it.Data()
		switch it.Type() {
		case vportAttrPortNo:
			v.PortNo = it.U32()
		case vportAttrType:
			v.Type = datapath.VportType(it.U32())
		case vportAttrName:
			v.Name = it.String()
		case vportAttrIfindex:
			v.IfIndex = it.U32()
		case vportAttrUpcallPID:
			for i := 0; i+4 <= len(data); i += 4 {
				v.UpcallPIDs = append(v.UpcallPIDs, binary.NativeEndian.Uint32(data[i:]))
			}
		case vportAttrStats:
			if len(data) >= 64 {
				s := &v.Stats
				for i, p := range []*uint64{&s.RxPackets, &s.TxPackets, &s.RxBytes, &s.TxBytes,
					&s.RxErrors, &s.TxErrors, &s.RxDropped, &s.TxDropped} {
					*p = binary.NativeEndian.Uint64(data[8*i:])
				}
			}
		case vportAttrOptions:
			opt := it.Nested()
			for opt.Next() {
				if opt.Type() == tunnelAttrDstPort {
					v.DstPort = opt.U16()
				}
			}
			if err := opt.Err(); err != nil {
				return v, err
			}
		}
	}
	return v, it.Err()
}

// WatchVports delivers port notifications of this datapath to fn until
// stop is called. It opens a connection of its own that joins the
// ovs_vport multicast group.
func (d *Datapath) WatchVports(fn func(datapath.VportEvent)) (func(), error) {
	group, ok := d.fams.vport.Groups["ovs_vport"]
	if !ok {
		return nil, datapath.WrapError("watch vports", d.name, fmt.Errorf("no ovs_vport group: %w", datapath.ErrNotSupported))
	}
	c, err := netlinkio.Dial()
	if err != nil {
		return nil, datapath.WrapError("watch vports", d.name, err)
	}
	if err := c.JoinGroup(group); err != nil {
		c.Close()
		return nil, datapath.WrapError("watch vports", d.name, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ns, err := c.Receive()
			if err != nil {
				return // closed by stop
			}
			for _, n := range ns {
				if n.Family != d.fams.vport.ID {
					continue
				}
				v, err := parseVport(n.Data)
				if err != nil || v.dpIndex != d.index {
					continue
				}
				ev := datapath.VportEvent{Index: v.dpIndex, Vport: v.Vport}
				switch n.Command {
				case vportCmdNew:
					ev.Kind = datapath.VportAdded
				case vportCmdDel:
					ev.Kind = datapath.VportDeleted
				case vportCmdSet:
					ev.Kind = datapath.VportChanged
				default:
					continue
				}
				fn(ev)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.Close()
			<-done
		})
	}, nil
}
