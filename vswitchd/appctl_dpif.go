package vswitchd

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/govswitch/govswitch/classifier"
	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// ofprotoList is ofproto/list: the bridges' names, one a line.
func (d *Daemon) ofprotoList([]string) (string, error) {
	var sb strings.Builder
	for _, b := range d.Bridges() {
		sb.WriteString(b.Name + "\n")
	}
	return sb.String(), nil
}

// dpifDumpFlows is dpif/dump-flows [-m] [--names | --no-names] BRIDGE:
// the bridge's datapath flows, as ovs-vswitchd prints them. -m adds the
// UFID and names ports (as --names does). Unlike ovs-vswitchd, -m does
// not list the attributes a flow wildcards entirely ("dp_hash(0/0)").
func (d *Daemon) dpifDumpFlows(args []string) (string, error) {
	verbose, names := false, false
	var rest []string
	for _, a := range args {
		switch a {
		case "-m", "--more":
			verbose, names = true, true
		case "--names":
			names = true
		case "--no-names":
			names = false
		default:
			if strings.HasPrefix(a, "-") {
				return "", fmt.Errorf("dpif/dump-flows: unknown option %s (-m, --names and --no-names are known)", a)
			}
			rest = append(rest, a)
		}
	}
	if len(rest) != 1 {
		return "", errors.New("dpif/dump-flows: name one bridge")
	}
	b, err := d.bridgeArg(rest[0])
	if err != nil {
		return "", err
	}
	var dpNames map[uint32]string
	if names {
		dpNames = map[uint32]string{}
		for _, p := range b.Ports.Snapshot().List() {
			dpNames[p.DPPort] = p.Name
		}
	}
	var sb strings.Builder
	// As ovs-vswitchd, the bridge's flows are those whose input port is
	// the bridge's: the datapath's other flows are other bridges'.
	err = b.DP.DumpFlows(false, func(f *datapath.Flow) error {
		if b.Backer.Owner(f.Key.InPort) != b {
			return nil
		}
		if verbose && !f.UFID.IsZero() {
			sb.WriteString(f.UFID.String() + " ")
		}
		sb.WriteString(namePorts(flow.Format(&f.Key, dumpedTunnelMask(&f.Key, &f.Mask)), dpNames)) // tunnel.go
		fmt.Fprintf(&sb, ", packets:%d, bytes:%d, used:%s, actions:%s\n",
			f.Stats.Packets, f.Stats.Bytes, usedString(f.Stats.Used), nameActionPorts(datapath.FormatActions(f.Actions), dpNames))
		return nil
	})
	if err != nil {
		return "", err
	}
	return sb.String(), nil
}

// namePorts replaces in_port(N) in a datapath flow's text with the port's
// name, when names has one.
func namePorts(key string, names map[uint32]string) string {
	if names == nil {
		return key
	}
	const attr = "in_port("
	i := strings.Index(key, attr)
	if i < 0 {
		return key
	}
	j := strings.IndexByte(key[i:], ')')
	if j < 0 {
		return key
	}
	n, err := strconv.ParseUint(key[i+len(attr):i+j], 10, 32)
	name, ok := names[uint32(n)]
	if err != nil || !ok {
		return key
	}
	return key[:i+len(attr)] + name + key[i+j:]
}

// nameActionPorts replaces the top-level output actions (bare port
// numbers) of a datapath action list's text with the ports' names.
func nameActionPorts(acts string, names map[uint32]string) string {
	if names == nil {
		return acts
	}
	var out []string
	depth, start := 0, 0
	emit := func(tok string) {
		if n, err := strconv.ParseUint(tok, 10, 32); err == nil {
			if name, ok := names[uint32(n)]; ok {
				tok = name
			}
		}
		out = append(out, tok)
	}
	for i := 0; i < len(acts); i++ {
		switch acts[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				emit(acts[start:i])
				start = i + 1
			}
		}
	}
	emit(acts[start:])
	return strings.Join(out, ",")
}

// bridgeDumpFlows is bridge/dump-flows BRIDGE: every OpenFlow flow with
// its counters, as ovs-vswitchd prints them (ovs-vswitchd also lists
// hidden flows in table 254; govswitchd has none).
func (d *Daemon) bridgeDumpFlows(args []string) (string, error) {
	if len(args) != 1 {
		if len(args) == 2 && args[0] == "--offload-stats" {
			return "", errors.New("bridge/dump-flows: --offload-stats: govswitchd offloads nothing")
		}
		return "", errors.New("bridge/dump-flows: name one bridge")
	}
	b := d.Bridge(args[0])
	if b == nil {
		return "", fmt.Errorf("%s: unknown bridge", args[0])
	}
	rules := b.Tables.Select(openflow.TableAll, &classifier.Match{}, 0, 0, openflow.PortAny)
	// Table by table, then as ovs-vswitchd walks a table: highest priority first.
	sort.SliceStable(rules, func(i, j int) bool {
		if rules[i].Value.Table != rules[j].Value.Table {
			return rules[i].Value.Table < rules[j].Value.Table
		}
		return rules[i].Priority > rules[j].Priority
	})
	now := time.Now()
	var sb strings.Builder
	for _, r := range rules {
		sb.WriteString(formatRule(r, now))
		sb.WriteByte('\n')
	}
	return sb.String(), nil
}

// formatRule prints a rule as bridge/dump-flows does: "duration=1s,
// n_packets=0, n_bytes=0, priority=10,ip,in_port=1,actions=output:2".
func formatRule(r *ofproto.Rule, now time.Time) string {
	e := r.Value
	var sb strings.Builder
	if e.Table != 0 {
		fmt.Fprintf(&sb, "table_id=%d, ", e.Table)
	}
	if e.Cookie != 0 {
		fmt.Fprintf(&sb, "cookie=%#x, ", e.Cookie)
	}
	packets, bytes := e.Stats()
	fmt.Fprintf(&sb, "duration=%ds, n_packets=%d, n_bytes=%d, ", int(now.Sub(e.Created).Seconds()), packets, bytes)
	idle, hard := e.Timeouts()
	if idle != 0 {
		fmt.Fprintf(&sb, "idle_timeout=%d, ", idle)
	}
	if hard != 0 {
		fmt.Fprintf(&sb, "hard_timeout=%d, ", hard)
	}
	// OVS prints the priority of every rule here, the default included.
	fmt.Fprintf(&sb, "priority=%d", r.Priority)
	if match := openflow.AppendMatchText(nil, &r.Match.Key, &r.Match.Mask, openflow.MatchText{Priority: openflow.DefaultPriority}); len(match) > 0 {
		sb.WriteByte(',')
		sb.Write(match)
	}
	sb.WriteString(",actions=" + ofproto.InstructionsString(&e.Instructions))
	return sb.String()
}

// dpFeature is one line of dpif/show-dp-features: a datapath feature
// govswitchd probes when it opens the datapath.
type dpFeature struct {
	name, title string
	on          func(datapath.Features) bool
	// size is set for a numeric feature (on is then nil).
	size func(datapath.Features) int
	// off is the ofproto.Feature* bit that turns the feature off at run
	// time (0: it cannot be changed).
	off uint32
}

// value is the feature's value as show-dp-features prints it.
func (ft *dpFeature) value(f datapath.Features) string {
	if ft.size != nil {
		return strconv.Itoa(ft.size(f))
	}
	return yesNo(ft.on(f))
}

// setValue is the feature's value as set-dp-features prints it.
func (ft *dpFeature) setValue(f datapath.Features) string {
	if ft.size != nil {
		return strconv.Itoa(ft.size(f))
	}
	return strconv.FormatBool(ft.on(f))
}

// dpFeatures are the features govswitchd probes, named and titled as
// ovs-vswitchd names them. ovs-vswitchd probes many more (actions such as
// clone and check_pkt_len, conntrack fields); govswitchd reports only
// what it has probed.
var dpFeatures = []dpFeature{
	{name: "ufid", title: "Ufid", on: func(f datapath.Features) bool { return f.UFID }},
	{name: "ct_clear", title: "Conntrack clear", on: func(f datapath.Features) bool { return f.CtClear }},
	{name: "max_vlan_headers", title: "Max VLAN headers", size: func(f datapath.Features) int { return f.MaxVLANHeaders }},
	{name: "recirc", title: "Recirc", on: func(f datapath.Features) bool { return f.Recirc }},
	{name: "ct_state", title: "CT state", on: func(f datapath.Features) bool { return f.CtState }},
	{name: "ct_zone", title: "CT zone", on: func(f datapath.Features) bool { return f.CtZone }},
	{name: "ct_mark", title: "CT mark", on: func(f datapath.Features) bool { return f.CtMark }},
	{name: "ct_label", title: "CT label", on: func(f datapath.Features) bool { return f.CtLabel }},
	{name: "ct_state_nat", title: "CT state NAT", on: func(f datapath.Features) bool { return f.CtNAT }},
	{name: "trunc", title: "Truncate action", on: func(f datapath.Features) bool { return f.Trunc }, off: ofproto.FeatureTrunc},
	{name: "clone", title: "Clone action", on: func(f datapath.Features) bool { return f.Clone }},
	{name: "check_pkt_len", title: "Check pkt length action", on: func(f datapath.Features) bool { return f.CheckPktLen }},
	// OVS probes the hash algorithms above l4 (0); kernels to 6.1 have
	// only l4, and -1 says the hash action itself is missing.
	{name: "max_hash_alg", title: "Max dp_hash algorithm", size: func(f datapath.Features) int {
		if f.Hash {
			return datapath.HashAlgL4
		}
		return -1
	}},
	{name: "add_mpls", title: "MPLS Label add", on: func(f datapath.Features) bool { return f.AddMPLS }, off: ofproto.FeatureAddMPLS},
}

func yesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}

// dpifShowDPFeatures is dpif/show-dp-features BRIDGE.
func (d *Daemon) dpifShowDPFeatures(args []string) (string, error) {
	b, err := d.bridgeArg(args[0])
	if err != nil {
		return "", err
	}
	f := runTimeFeatures(b)
	var sb strings.Builder
	for i := range dpFeatures {
		fmt.Fprintf(&sb, "%s: %s\n", dpFeatures[i].title, dpFeatures[i].value(f))
	}
	return sb.String(), nil
}

// runTimeFeatures are the datapath's features less those turned off at
// run time.
func runTimeFeatures(b *ofproto.Bridge) datapath.Features {
	f := b.DP.Features()
	off := b.Backer.FeaturesOff()
	if off&ofproto.FeatureTrunc != 0 {
		f.Trunc = false
	}
	if off&ofproto.FeatureAddMPLS != 0 {
		f.AddMPLS = false
	}
	return f
}

// dpifSetDPFeatures is dpif/set-dp-features BRIDGE [FEATURE [true|false]].
// Alone it lists the features as ovs-vswitchd does, at run time and as
// probed at boot time; with a feature, that one. A feature govswitchd can
// turn off (off set: translation then marks its actions for the slow path)
// is turned off or back on as ovs-vswitchd does, its datapath's flows
// flushed; changing any other is refused.
func (d *Daemon) dpifSetDPFeatures(args []string) (string, error) {
	b, err := d.bridgeArg(args[0])
	if err != nil {
		return "", err
	}
	boot, rt := b.DP.Features(), runTimeFeatures(b)
	line := func(ft *dpFeature) string {
		return fmt.Sprintf("%s (%s) : [run time]:%s, [boot time]:%s\n", ft.name, ft.title, ft.setValue(rt), ft.setValue(boot))
	}
	if len(args) == 1 {
		var sb strings.Builder
		for i := range dpFeatures {
			sb.WriteString(line(&dpFeatures[i]))
		}
		return sb.String(), nil
	}
	for i := range dpFeatures {
		ft := &dpFeatures[i]
		if ft.name != args[1] {
			continue
		}
		switch {
		case len(args) == 2:
			return line(ft), nil
		case ft.off == 0:
			return "", fmt.Errorf("dpif/set-dp-features: govswitchd cannot change %s at run time (it is %s, as probed when the datapath was opened)",
				ft.name, ft.setValue(boot))
		case strings.EqualFold(args[2], "false"):
			b.Backer.SetFeatureOff(ft.off, true)
		case strings.EqualFold(args[2], "true"):
			if !ft.on(boot) {
				return "Can not enable features not supported by the datapth", nil // sic, as ovs-vswitchd
			}
			b.Backer.SetFeatureOff(ft.off, false)
		default:
			return "Boolean value expected", nil
		}
		// As ovs-vswitchd's udpif_flush: no flow of the old translation
		// survives.
		if err := b.Udpif.Purge(); err != nil {
			return "", fmt.Errorf("dpif/set-dp-features: flush the datapath's flows: %w", err)
		}
		return "", nil
	}
	return "", fmt.Errorf("dpif/set-dp-features: unknown feature %q (govswitchd knows %s)", args[1], featureNames())
}

func featureNames() string {
	var n []string
	for _, ft := range dpFeatures {
		n = append(n, ft.name)
	}
	return strings.Join(n, ", ")
}

// fdbStatsShow is fdb/stats-show BRIDGE, in ovs-vswitchd's words.
func (d *Daemon) fdbStatsShow(args []string) (string, error) {
	b, err := d.bridgeArg(args[0])
	if err != nil {
		return "", err
	}
	st := b.MAC.Stats()
	var sb strings.Builder
	fmt.Fprintf(&sb, "Statistics for bridge %q:\n", b.Name)
	fmt.Fprintf(&sb, "  Current/maximum MAC entries in the table: %d/%d\n", b.MAC.Len(), b.MAC.Capacity())
	fmt.Fprintf(&sb, "  Current static MAC entries in the table : %d\n", 0)
	fmt.Fprintf(&sb, "  Total number of learned MAC entries     : %d\n", st.Learned)
	fmt.Fprintf(&sb, "  Total number of expired MAC entries     : %d\n", st.Expired)
	fmt.Fprintf(&sb, "  Total number of evicted MAC entries     : %d\n", st.Evicted)
	fmt.Fprintf(&sb, "  Total number of port moved MAC entries  : %d\n", st.Moved)
	return sb.String(), nil
}

// fdbStatsClear is fdb/stats-clear [BRIDGE].
func (d *Daemon) fdbStatsClear(args []string) (string, error) {
	bridges := d.Bridges()
	if len(args) == 1 {
		b, err := d.bridgeArg(args[0])
		if err != nil {
			return "", err
		}
		bridges = []*ofproto.Bridge{b}
	}
	for _, b := range bridges {
		b.MAC.ClearStats()
	}
	return "statistics successfully cleared\n", nil
}
