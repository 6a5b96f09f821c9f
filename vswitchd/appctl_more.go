package vswitchd

// registerMoreCommands installs the commands of issue 14: those OVS's
// tests and users type beyond the first set in registerCommands.
func (d *Daemon) registerMoreCommands() {
	s := d.ctl
	s.Register("ofproto/trace", traceUsage, 1, 4, d.trace)
}
