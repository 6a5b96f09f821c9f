package vswitchd

import (
	"github.com/govswitch/govswitch/ovsdb"
)

// Capabilities reports the capabilities column of the Datapath row of
// type typ: the datapath features govswitchd probed when it opened the
// datapath all bridges share, under ovs-vswitchd's key names and in its
// "true"/"false" and number form (dpif/show-dp-features lists the same).
// Features govswitchd does not probe are left out, which readers take as
// unsupported: ovn-controller, say, reads ct_zero_snat and so does not rely
// on all-zero SNAT. There is nothing to report before a bridge of the type
// runs, or for a type govswitchd does not serve.
func (s *ovsdbSwitch) Capabilities(typ string) (map[string]string, bool) {
	if typ == "" {
		typ = "system"
	}
	if typ != s.d.cfg.Datapath {
		return nil, false
	}
	bridges := s.d.Bridges()
	if len(bridges) == 0 {
		return nil, false
	}
	f := bridges[0].DP.Features()
	caps := make(map[string]string, len(dpFeatures))
	for i := range dpFeatures {
		caps[dpFeatures[i].name] = dpFeatures[i].setValue(f)
	}
	return caps, true
}

var _ ovsdb.DatapathCapabilities = (*ovsdbSwitch)(nil)
