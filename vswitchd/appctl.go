package vswitchd

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto"
	"github.com/govswitch/govswitch/ofproto/maclearn"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// registerCommands installs the ovs-appctl commands. Output shapes follow
// ovs-vswitchd's where scripts are known to parse them.
func (d *Daemon) registerCommands() {
	s := d.ctl
	s.Register("exit", "[--cleanup]", 0, 1, d.exitCmd)
	d.registerMoreCommands()
	d.registerBondCommands() // appctl_bond.go
	d.registerQoSCommands()  // appctl_qos.go
	d.registerSTPCommands()  // appctl_stp.go
	d.registerRSTPCommands() // appctl_rstp.go
	s.Register("dpif/show", "", 0, 0, d.dpifShow)
	s.Register("dpctl/show", "[-s] [DP]", 0, 2, d.dpctlShow)
	s.Register("dpctl/dump-flows", "[-m] [--names | --no-names] [DP]", 0, 4, d.dpctlDumpFlows)
	s.Register("fdb/show", "bridge", 1, 1, d.fdbShow)
	s.Register("fdb/flush", "[bridge]", 0, 1, d.fdbFlush)
	s.Register("mdb/show", "bridge", 1, 1, d.mdbShow)     // mcast.go
	s.Register("mdb/flush", "[bridge]", 0, 1, d.mdbFlush) // mcast.go
	s.Register("upcall/show", "", 0, 0, d.upcallShow)
	s.Register("upcall/set-flow-limit", "flow-limit-number", 1, 1, d.setFlowLimit)
	s.Register("upcall/disable-megaflows", "", 0, 0, func([]string) (string, error) { return d.megaflows(false) })
	s.Register("upcall/enable-megaflows", "", 0, 0, func([]string) (string, error) { return d.megaflows(true) })
	s.Register("revalidator/purge", "", 0, 0, d.purge)
	s.Register("revalidator/wait", "", 0, 0, func([]string) (string, error) {
		if bk := d.Backer(); bk != nil {
			bk.Udpif.Revalidate()
		}
		return "", nil
	})
	s.Register("governor/show", "", 0, 0, d.governorShow)
	s.Register("memory/show", "", 0, 0, d.memoryShow)
	s.Register("coverage/show", "", 0, 0, d.coverageShow)
}

func (d *Daemon) bridgeArg(name string) (*ofproto.Bridge, error) {
	b := d.Bridge(name)
	if b == nil {
		return nil, fmt.Errorf("no such bridge")
	}
	return b, nil
}

// portName returns how OVS names an OpenFlow port in fdb/show.
func portName(p uint32) string {
	if p == openflow.PortLocal {
		return "LOCAL"
	}
	return strconv.FormatUint(uint64(p), 10)
}

// dpifShow is dpif/show: the datapath's counters, then each bridge (by
// name) with its ports (by name) as OpenFlow/datapath numbers, as
// ovs-vswitchd prints them; a patch port has no datapath number.
func (d *Daemon) dpifShow([]string) (string, error) {
	bk := d.Backer()
	if bk == nil {
		return "", nil
	}
	st, err := bk.DP.Stats()
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s@%s: hit:%d missed:%d\n", d.cfg.Datapath, bk.DP.Name(), st.Hit, st.Missed)
	bridges := bk.Bridges()
	sort.Slice(bridges, func(i, j int) bool { return bridges[i].Name < bridges[j].Name })
	for _, b := range bridges {
		fmt.Fprintf(&sb, "  %s:\n", b.Name)
		ports := append([]*ofproto.Port(nil), b.Ports.Snapshot().List()...)
		sort.Slice(ports, func(i, j int) bool { return ports[i].Name < ports[j].Name })
		for _, p := range ports {
			ofp := strconv.FormatUint(uint64(p.OFPort), 10)
			if p.OFPort == openflow.PortLocal {
				ofp = "65534"
			}
			if p.Type == ofproto.PortTypePatch {
				fmt.Fprintf(&sb, "    %s %s/none: (patch: peer=%s)\n", p.Name, ofp, p.Peer)
				continue
			}
			fmt.Fprintf(&sb, "    %s %s/%d: (%s)\n", p.Name, ofp, p.DPPort, p.Type+tunnelShowConfig(p)) // tunnel.go
		}
	}
	return sb.String(), nil
}

func (d *Daemon) dpctlShow(args []string) (string, error) {
	var sb strings.Builder
	for _, bk := range d.backers() {
		st, err := bk.DP.Stats()
		if err != nil {
			return "", err
		}
		vps, err := bk.DP.Vports()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&sb, "%s@%s:\n", d.cfg.Datapath, bk.DP.Name())
		fmt.Fprintf(&sb, "  lookups: hit:%d missed:%d lost:%d\n", st.Hit, st.Missed, st.Lost)
		fmt.Fprintf(&sb, "  flows: %d\n", st.Flows)
		hitPerPkt := 0.0
		if n := st.Hit + st.Missed; n > 0 {
			hitPerPkt = float64(st.MaskHit) / float64(n)
		}
		fmt.Fprintf(&sb, "  masks: hit:%d total:%d hit/pkt:%.2f\n", st.MaskHit, st.Masks, hitPerPkt)
		fmt.Fprintf(&sb, "  cache: hit:%d hit-rate:%.2f%%\n", st.CacheHit, 0.0)
		for _, vp := range vps {
			typ := ""
			if vp.Type == datapath.VportInternal {
				typ = " (internal)"
			}
			if k := bk.TunnelVportKind(vp.PortNo); k != "" {
				typ = " (" + k + ": " + dpctlTunnelConfig(k) + ")" // tunnel.go
			}
			fmt.Fprintf(&sb, "  port %d: %s%s\n", vp.PortNo, vp.Name, typ)
			if len(args) > 0 && args[0] == "-s" {
				s := vp.Stats
				fmt.Fprintf(&sb, "    RX packets:%d errors:%d dropped:%d\n", s.RxPackets, s.RxErrors, s.RxDropped)
				fmt.Fprintf(&sb, "    TX packets:%d errors:%d dropped:%d\n", s.TxPackets, s.TxErrors, s.TxDropped)
				fmt.Fprintf(&sb, "    RX bytes:%d  TX bytes:%d\n", s.RxBytes, s.TxBytes)
			}
		}
	}
	return sb.String(), nil
}

func (d *Daemon) dpctlDumpFlows(args []string) (string, error) {
	o, err := parseDpctlDumpArgs(args)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, bk := range d.backers() {
		if o.dp != "" && o.dp != bk.DP.Name() && o.dp != "system@"+bk.DP.Name() {
			continue
		}
		names := o.backerPortNames(bk)
		err := bk.DP.DumpFlows(false, func(f *datapath.Flow) error {
			if o.verbose {
				fmt.Fprintf(&sb, "%s, ", f.UFID)
			}
			sb.WriteString(namePorts(flow.Format(&f.Key, dumpedTunnelMask(&f.Key, &f.Mask)), names)) // tunnel.go
			fmt.Fprintf(&sb, ", packets:%d, bytes:%d, used:%s, actions:%s\n",
				f.Stats.Packets, f.Stats.Bytes, usedString(f.Stats.Used), nameActionPorts(datapath.FormatActions(f.Actions), names))
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return sb.String(), nil
}

// usedString formats a flow's last-use time (monotonic ms) as ovs-dpctl
// does: "never" or seconds ago.
func usedString(used uint64) string {
	if used == 0 {
		return "never"
	}
	now := uint64(monotonicMillis())
	if used > now {
		return "0.000s"
	}
	return fmt.Sprintf("%.3fs", float64(now-used)/1000)
}

func (d *Daemon) fdbShow(args []string) (string, error) {
	b, err := d.bridgeArg(args[0])
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	sb.WriteString(" port  VLAN  MAC                Age\n")
	now := time.Now()
	b.MAC.Entries(now, func(e maclearn.Entry) {
		m := e.MAC
		fmt.Fprintf(&sb, "%5s  %4d  %02x:%02x:%02x:%02x:%02x:%02x  %3d\n", portName(e.Port), e.VLAN,
			m[0], m[1], m[2], m[3], m[4], m[5], int(e.Age.Seconds()))
	})
	return sb.String(), nil
}

func (d *Daemon) fdbFlush(args []string) (string, error) {
	bridges := d.Bridges()
	if len(args) == 1 {
		b, err := d.bridgeArg(args[0])
		if err != nil {
			return "", err
		}
		bridges = []*ofproto.Bridge{b}
	}
	for _, b := range bridges {
		b.MAC.Flush()
		b.Udpif.Wake() // flows forwarding to the flushed entries flood again
	}
	return "table successfully flushed\n", nil
}

func (d *Daemon) upcallShow([]string) (string, error) {
	var sb strings.Builder
	for _, bk := range d.backers() {
		s := bk.Udpif.Stats()
		fmt.Fprintf(&sb, "%s@%s:\n", d.cfg.Datapath, bk.DP.Name())
		fmt.Fprintf(&sb, "  flows         : (current %d) (avg %d) (max %d) (limit %d)\n",
			s.DatapathFlows, s.DatapathFlows, s.DatapathFlows, s.FlowLimit)
		fmt.Fprintf(&sb, "  dump duration : %dms\n", s.DumpDuration.Milliseconds())
		fmt.Fprintf(&sb, "  ufid enabled : %v\n", bk.DP.Features().UFID)
		fmt.Fprintf(&sb, "\n  %d: (keys %d)\n", 0, s.UkeysInUse)
		fmt.Fprintf(&sb, "  upcalls : %d (misses %d, actions %d, lost %d) in %d batches\n",
			s.Upcalls, s.Misses, s.ActionUpcalls, s.Lost, s.Batches)
		fmt.Fprintf(&sb, "  flow setups : %d (failed %d, duplicates %d, limit hits %d, executes %d)\n",
			s.FlowsInstalled, s.PutFailed, s.Duplicates, s.LimitHits, s.Executes)
		if s.LastError != "" {
			fmt.Fprintf(&sb, "  last error : %s\n", s.LastError)
		}
	}
	return sb.String(), nil
}

func (d *Daemon) setFlowLimit(args []string) (string, error) {
	n, err := strconv.Atoi(args[0])
	if err != nil || n <= 0 {
		return "", fmt.Errorf("flow limit %q is not a positive number", args[0])
	}
	for _, bk := range d.backers() {
		bk.Udpif.SetFlowLimit(n)
	}
	return fmt.Sprintf("set flow_limit to %d\n", n), nil
}

func (d *Daemon) megaflows(on bool) (string, error) {
	var errs []error
	for _, bk := range d.backers() {
		errs = append(errs, bk.Udpif.SetMegaflows(on))
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	if on {
		return "megaflows enabled\n", nil
	}
	return "megaflows disabled\n", nil
}

func (d *Daemon) purge([]string) (string, error) {
	var errs []error
	for _, bk := range d.backers() {
		errs = append(errs, bk.Udpif.Purge())
	}
	return "", errors.Join(errs...)
}

func (d *Daemon) governorShow([]string) (string, error) {
	var sb strings.Builder
	if !d.cfg.Governor {
		return "governor disabled (start govswitchd with --governor)\n", nil
	}
	for _, bk := range d.backers() {
		fmt.Fprintf(&sb, "%s@%s:\n", d.cfg.Datapath, bk.DP.Name())
		for _, g := range bk.Udpif.GovernorStatus() {
			state := "idle"
			if g.Engaged {
				state = "engaged"
			}
			s := g.Stats
			fmt.Fprintf(&sb, "  handler %d: mode %s, %s (engages above %d flows, %d times), size %d, generations %d\n",
				g.Handler, g.Mode, state, g.Threshold/2, g.Engagements, s.Size, s.Generations)
			fmt.Fprintf(&sb, "    decisions: install %d, shortcut %d, execute %d; generation: packets %d, flows %d, setups %d\n",
				s.TotalInstalls, s.TotalShortcuts, s.TotalExecutes, s.Packets, s.Flows, s.Setups)
		}
		u := bk.Udpif.Stats()
		fmt.Fprintf(&sb, "  upcall path: governor installs %d, governor executes %d\n", u.GovernorInstalls, u.GovernorExecutes)
	}
	return sb.String(), nil
}

func (d *Daemon) memoryShow([]string) (string, error) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	ukeys, rules := 0, 0
	for _, b := range d.Bridges() {
		rules += b.Tables.Len()
	}
	handlers := 0
	for _, bk := range d.backers() {
		ukeys += bk.Udpif.Stats().UkeysInUse
		handlers += len(bk.DP.Handlers())
	}
	return fmt.Sprintf("handlers:%d ports:%d revalidators:%d rules:%d udpif keys:%d heap:%dkB\n",
		handlers, d.portCount(), d.cfg.Revalidators, rules, ukeys, ms.HeapAlloc/1024), nil
}

func (d *Daemon) portCount() int {
	n := 0
	for _, b := range d.Bridges() {
		n += len(b.Ports.Snapshot().List())
	}
	return n
}

// coverageShow prints the upcall path's counters in coverage/show's
// shape. Rates are not tracked; they print as 0.
func (d *Daemon) coverageShow([]string) (string, error) {
	var total ofproto.UpcallStats
	for _, bk := range d.backers() {
		s := bk.Udpif.Stats()
		total.Upcalls += s.Upcalls
		total.Duplicates += s.Duplicates
		total.LimitHits += s.LimitHits
		total.LimitKilled += s.LimitKilled
		total.FlowsInstalled += s.FlowsInstalled
		total.Executes += s.Executes
		total.GovernorExecutes += s.GovernorExecutes
		total.Lost += s.Lost
		total.IdleDeleted += s.IdleDeleted
	}
	counters := map[string]uint64{
		"upcall_received": total.Upcalls, "handler_duplicate_upcall": total.Duplicates,
		"upcall_flow_limit_hit": total.LimitHits, "upcall_flow_limit_kill": total.LimitKilled,
		"dpif_flow_put": total.FlowsInstalled, "dpif_execute": total.Executes,
		"facet_suppress": total.GovernorExecutes, "netlink_overflow": total.Lost,
		"revalidate_idle_delete": total.IdleDeleted,
	}
	names := make([]string, 0, len(counters))
	never := 0
	for n, v := range counters {
		if v == 0 {
			never++
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	var sb strings.Builder
	sb.WriteString("Event coverage, avg rate over last: 5 seconds, last minute, last hour,  hash=00000000:\n")
	for _, n := range names {
		fmt.Fprintf(&sb, "%-24s %5.1f/sec %9.3f/sec %13.4f/sec   total: %d\n", n, 0.0, 0.0, 0.0, counters[n])
	}
	fmt.Fprintf(&sb, "%d events never hit\n", never)
	return sb.String(), nil
}

// backers returns the datapaths the bridges are on: ovs-system, or none.
func (d *Daemon) backers() []*ofproto.Backer {
	if bk := d.Backer(); bk != nil {
		return []*ofproto.Backer{bk}
	}
	return nil
}
