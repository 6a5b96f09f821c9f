package vswitchd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto"
	"golang.org/x/sys/unix"
)

// The dpctl flow commands write the kernel's flow table directly, in
// ovs-dpctl's flow syntax, as ovs-vswitchd's dpctl/* do. A flow added
// this way is not one the switch translated: the revalidator treats it
// as any datapath flow it finds (it may change or remove it).

// dpctlArgs splits [options] [DP] ARGS... : options are the leading
// arguments that start with "-", the datapath is named when one more
// argument than want is given. It returns the datapath meant: the one
// the bridges share, ovs-system, the only one the daemon has.
func (d *Daemon) dpctlArgs(cmd string, args []string, want int, opts map[string]*bool) (*ofproto.Backer, []string, error) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		p, ok := opts[args[0]]
		if !ok {
			return nil, nil, fmt.Errorf("%s: unknown option %s", cmd, args[0])
		}
		*p = true
		args = args[1:]
	}
	bk := d.Backer()
	switch len(args) {
	case want:
		if bk == nil {
			return nil, nil, fmt.Errorf("%s: no datapaths exist", cmd)
		}
	case want + 1:
		name := args[0]
		if typ, dp, ok := strings.Cut(name, "@"); ok {
			if typ != d.cfg.Datapath {
				return nil, nil, fmt.Errorf("%s: no datapath %s", cmd, args[0])
			}
			name = dp
		}
		if bk == nil || name != bk.DP.Name() {
			return nil, nil, fmt.Errorf("%s: no datapath %s", cmd, args[0])
		}
		args = args[1:]
	default:
		return nil, nil, fmt.Errorf("%s: wrong number of arguments", cmd)
	}
	return bk, args, nil
}

// dpctlKey parses a flow key (with mask) in ovs-dpctl's syntax; ports
// may be named (any bridge's, the datapath's port names).
func dpctlKey(bk *ofproto.Backer, text string) (flow.Key, flow.Mask, error) {
	names := map[string]uint32{}
	if vps, err := bk.DP.Vports(); err == nil {
		for _, vp := range vps {
			names[vp.Name] = vp.PortNo
		}
	}
	k, m, err := flow.ParseWithPorts(text, names)
	if err != nil {
		return k, m, fmt.Errorf("parsing flow key (%v)", err)
	}
	return k, m, nil
}

func statsText(s datapath.FlowStats) string {
	return fmt.Sprintf("packets:%d, bytes:%d, used:%s", s.Packets, s.Bytes, usedString(s.Used))
}

// dpctlPutFlow is dpctl/add-flow and dpctl/mod-flow [DP] FLOW ACTIONS.
func (d *Daemon) dpctlPutFlow(modify bool) func([]string) (string, error) {
	cmd := "dpctl/add-flow"
	if modify {
		cmd = "dpctl/mod-flow"
	}
	return func(args []string) (string, error) {
		var stats, mayCreate, clear bool
		opts := map[string]*bool{"-s": &stats, "--statistics": &stats, "--clear": &clear}
		if modify {
			opts["--may-create"] = &mayCreate
		}
		b, args, err := d.dpctlArgs(cmd, args, 2, opts)
		if err != nil {
			return "", err
		}
		k, m, err := dpctlKey(b, args[0])
		if err != nil {
			return "", err
		}
		acts, err := datapath.ParseActions(args[1])
		if err != nil {
			return "", fmt.Errorf("parsing actions (%v)", err)
		}
		f := datapath.Flow{Key: k, Mask: m, Actions: acts}
		flags := datapath.PutCreate
		if modify {
			flags = datapath.PutModify
			if mayCreate {
				flags |= datapath.PutCreate
			}
		}
		if clear {
			flags |= datapath.PutZeroStats
		}
		var old datapath.Flow
		if stats && modify {
			// The stats the flow had before the change, as ovs-dpctl -s prints.
			if err := b.DP.GetFlow(datapath.UFID{}, &k, &old); err != nil && !errors.Is(err, unix.ENOENT) {
				return "", fmt.Errorf("updating flow table (%s)", datapath.ErrnoText(err))
			}
		}
		if err := b.DP.PutFlow(&f, flags); err != nil {
			return "", fmt.Errorf("updating flow table (%s)", datapath.ErrnoText(err))
		}
		if stats {
			return statsText(old.Stats) + "\n", nil
		}
		return "", nil
	}
}

// dpctlDelFlow is dpctl/del-flow [-s] [DP] FLOW.
func (d *Daemon) dpctlDelFlow(args []string) (string, error) {
	var stats bool
	b, args, err := d.dpctlArgs("dpctl/del-flow", args, 1, map[string]*bool{"-s": &stats, "--statistics": &stats})
	if err != nil {
		return "", err
	}
	var ufid datapath.UFID
	var k flow.Key
	if text, ok := strings.CutPrefix(args[0], "ufid:"); ok {
		if ufid, err = parseUFID(text); err != nil {
			return "", err
		}
	} else if k, _, err = dpctlKey(b, args[0]); err != nil {
		return "", err
	}
	st, err := b.DP.DeleteFlow(ufid, &k)
	if err != nil {
		return "", fmt.Errorf("deleting flow (%s)", datapath.ErrnoText(err))
	}
	if stats {
		return statsText(st) + "\n", nil
	}
	return "", nil
}

// dpctlDelFlows is dpctl/del-flows [DP]: deletes every flow.
func (d *Daemon) dpctlDelFlows(args []string) (string, error) {
	b, _, err := d.dpctlArgs("dpctl/del-flows", args, 0, nil)
	if err != nil {
		return "", err
	}
	if err := b.DP.FlushFlows(); err != nil {
		return "", fmt.Errorf("deleting all flows (%s)", datapath.ErrnoText(err))
	}
	return "", nil
}

// parseUFID reads the UUID of "ufid:UUID" (the text after "ufid:"), the
// inverse of datapath.UFID.String.
func parseUFID(s string) (datapath.UFID, error) {
	var w [5]uint64
	var u datapath.UFID
	hexs := strings.Split(s, "-")
	lens := []int{8, 4, 4, 4, 12}
	if len(hexs) != 5 {
		return u, fmt.Errorf("ufid:%s: want ufid:xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", s)
	}
	for i, h := range hexs {
		if len(h) != lens[i] {
			return u, fmt.Errorf("ufid:%s: want ufid:xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", s)
		}
		v, err := strconv.ParseUint(h, 16, 64)
		if err != nil {
			return u, fmt.Errorf("ufid:%s: %q is not hex", s, h)
		}
		w[i] = v
	}
	words := [4]uint32{uint32(w[0]), uint32(w[1]<<16 | w[2]), uint32(w[3]<<16 | w[4]>>32), uint32(w[4])}
	for i, x := range words {
		binary.NativeEndian.PutUint32(u[4*i:], x) // as UFID.String reads it
	}
	return u, nil
}
