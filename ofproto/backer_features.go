package ofproto

import "github.com/govswitch/govswitch/datapath"

// Datapath features turned off at run time, as ovs-vswitchd's
// dpif/set-dp-features does for its tests: translation still emits the
// action the feature names, marks the flow SLOW_ACTION, and the action
// runs in userspace on the slow path (upcall_slow.go) instead of in the
// kernel. A feature the kernel lacks cannot be turned on.
const (
	// FeatureTrunc is the truncate action (output(port,max_len)).
	FeatureTrunc uint32 = 1 << iota
	// FeatureAddMPLS is the add_mpls action: encap(mpls) and decap() of
	// MPLS, with the push_eth and pop_eth around them, go to userspace.
	FeatureAddMPLS
)

// SetFeatureOff turns feature (a Feature* bit) off or back on and has
// every datapath flow translated again, so the change takes effect before
// the next packet of each.
func (bk *Backer) SetFeatureOff(feature uint32, off bool) {
	for {
		old := bk.featOff.Load()
		nw := old &^ feature
		if off {
			nw |= feature
		}
		if old == nw || bk.featOff.CompareAndSwap(old, nw) {
			if old != nw {
				for _, b := range bk.set.Load().bridges {
					b.Tables.Invalidate()
				}
			}
			return
		}
	}
}

// FeaturesOff returns the features turned off at run time.
func (bk *Backer) FeaturesOff() uint32 { return bk.featOff.Load() }

// slowIfOff marks the translation slow when feature is turned off on the
// bridge's datapath: the action just emitted must run in userspace.
func (c *xctx) slowIfOff(feature uint32) {
	if bk := c.x.backer; bk != nil && bk.featOff.Load()&feature != 0 {
		c.out.Slow |= datapath.SlowAction
		c.out.slowOff |= feature
	}
}
