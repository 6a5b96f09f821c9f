package vswitchd

// registerMoreCommands installs the commands of issue 14: those OVS's
// tests and users type beyond the first set in registerCommands.
func (d *Daemon) registerMoreCommands() {
	s := d.ctl
	s.Register("ofproto/trace", traceUsage, 1, 4, d.trace)
	s.Register("ofproto/list", "", 0, 0, d.ofprotoList)
	s.Register("dpif/dump-flows", "[-m] [--names | --no-names] bridge", 1, 3, d.dpifDumpFlows)
	s.Register("dpif/show-dp-features", "bridge", 1, 1, d.dpifShowDPFeatures)
	s.Register("dpif/set-dp-features", "bridge", 1, 3, d.dpifSetDPFeatures)
	s.Register("bridge/dump-flows", "[--offload-stats] bridge", 1, 2, d.bridgeDumpFlows)
	s.Register("fdb/stats-show", "bridge", 1, 1, d.fdbStatsShow)
	s.Register("fdb/stats-clear", "[bridge]", 0, 1, d.fdbStatsClear)
	s.Register("dpctl/add-flow", "[dp] flow actions", 2, 5, d.dpctlPutFlow(false))
	s.Register("dpctl/mod-flow", "[dp] flow actions", 2, 6, d.dpctlPutFlow(true))
	s.Register("dpctl/del-flow", "[dp] flow", 1, 3, d.dpctlDelFlow)
	s.Register("dpctl/del-flows", "[dp]", 0, 1, d.dpctlDelFlows)
	s.Register("dpctl/dump-conntrack", "[-m] [-s] [dp] [zone=N]", 0, 4, d.dpctlDumpConntrack)
	s.Register("dpctl/flush-conntrack", ctFlushUsage, 0, 4, d.dpctlFlushConntrack)
	s.Register("dpctl/ct-stats-show", "[-m] [dp] [zone=N]", 0, 3, d.dpctlCtStatsShow)
	s.Register("dpctl/ct-set-limits", "[dp] [default=L] [zone=N,limit=L]...", 1, 1<<16, d.dpctlCtSetLimits)
	s.Register("dpctl/ct-del-limits", "[dp] zone=N1[,N2]...", 1, 2, d.dpctlCtDelLimits)
	s.Register("dpctl/ct-get-limits", "[dp] [zone=N1[,N2]...]", 0, 2, d.dpctlCtGetLimits)
	s.Register("ovs/route/add", "ip_addr/prefix_len out_br_name [gw] [pkt_mark=mark]", 2, 4, d.routeAdd)
	s.Register("ovs/route/del", "ip_addr/prefix_len [pkt_mark=mark]", 1, 2, d.routeDel)
	s.Register("ovs/route/show", "", 0, 0, d.routeShow)
	s.Register("ovs/route/lookup", "ip_addr [pkt_mark=mark]", 1, 2, d.routeLookup)
	s.Register("tnl/ports/show", tnlPortsUsage, 0, 1, d.tnlPortsShow) // appctl_tnl.go
	for _, prefix := range []string{"tnl/neigh/", "tnl/arp/"} {       // tnl_neigh.go
		s.Register(prefix+"show", neighUsage, 0, 0, d.tnlNeighShow)
		s.Register(prefix+"set", "BRIDGE IP MAC", 3, 3, d.tnlNeighSet)
		s.Register(prefix+"flush", "", 0, 0, d.tnlNeighFlush)
		s.Register(prefix+"aging", "[SECS]", 0, 1, d.tnlNeighAging)
	}
}
