package vswitchd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/govswitch/govswitch/conntrack"
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// ctFlushUsage is dpctl/flush-conntrack's usage, as ovs-vswitchd 3.1
// gives it.
const ctFlushUsage = "[dp] [zone=N] [ct-orig-tuple] [ct-reply-tuple]"

// parseCtFlush parses the arguments of dpctl/flush-conntrack after an
// optional datapath: [zone=N] [ct-orig-tuple [ct-reply-tuple]], where an
// empty tuple argument stands for none. Errors carry ovs-vswitchd
// 3.1's texts and errno.
func parseCtFlush(args []string) (zone *uint16, m conntrack.Match, err error) {
	if len(args) > 0 && strings.HasPrefix(args[0], "zone=") {
		n, perr := strconv.ParseUint(strings.TrimPrefix(args[0], "zone="), 10, 16)
		if perr != nil {
			return nil, m, errors.New("failed to parse zone (Invalid argument)")
		}
		z := uint16(n)
		zone = &z
		args = args[1:]
	}
	for i := 0; i < 2 && len(args) > 0; i++ {
		if args[0] != "" {
			if err := conntrack.ParseTuple(args[0], &m, i == 1); err != nil {
				return nil, m, fmt.Errorf("%v (Invalid argument)", err)
			}
		}
		args = args[1:]
	}
	if len(args) > 0 {
		return nil, m, errors.New("invalid arguments (Invalid argument)")
	}
	return zone, m, nil
}

// dpctlFlushConntrack is dpctl/flush-conntrack [DP] [zone=N]
// [ct-orig-tuple [ct-reply-tuple]]: every connection, those of a zone, one
// connection by its five-tuple, or those a partial tuple matches (see
// conntrack.FlushMatch). ovs-vswitchd 3.1 takes a DP only alone; here it
// may precede the other arguments too, as its usage says.
func (d *Daemon) dpctlFlushConntrack(args []string) (string, error) {
	if len(args) > 0 && args[0] != "" && !strings.ContainsAny(args[0], "=:") {
		name := args[0]
		if _, dp, ok := strings.Cut(name, "@"); ok {
			name = dp
		}
		if d.Bridge(name) == nil {
			return "", fmt.Errorf("dpctl/flush-conntrack: no datapath %s", args[0])
		}
		args = args[1:]
	}
	// ovs-vswitchd's dpctl errors name the program.
	zone, m, err := parseCtFlush(args)
	if err != nil {
		return "", fmt.Errorf("ovs-vswitchd: %v", err)
	}
	if err := conntrack.FlushMatch(zone, &m); err != nil {
		return "", fmt.Errorf("ovs-vswitchd: failed to flush conntrack (%s)", datapath.ErrnoText(err))
	}
	return "", nil
}

// flushConntrackOF carries out NXT_CT_FLUSH (ovs-ofctl ct-flush) as
// dpctl/flush-conntrack does the same zone and tuples.
func flushConntrackOF(m *openflow.CtFlush) error {
	match := conntrack.Match{Proto: m.Proto, Family: m.Family, Orig: ofTuple(&m.Orig), Reply: ofTuple(&m.Reply)}
	var zone *uint16
	if m.HasZone {
		zone = &m.Zone
	}
	if err := conntrack.FlushMatch(zone, &match); err != nil {
		return fmt.Errorf("flushing conntrack %s (%v)", match.String(), err)
	}
	return nil
}

func ofTuple(t *openflow.CtFlushTuple) conntrack.MatchTuple {
	return conntrack.MatchTuple{Src: t.Src, Dst: t.Dst, SrcPort: t.SrcPort, DstPort: t.DstPort,
		ICMPID: t.ICMPID, ICMPType: t.ICMPType, ICMPCode: t.ICMPCode}
}
