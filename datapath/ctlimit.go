package datapath

// ZoneLimit is one conntrack zone's connection limit, as the kernel's
// ovs_ct_limit family keeps it per network namespace: at most Limit
// committed connections in Zone (0 means unlimited), Count of them now.
type ZoneLimit struct {
	Zone  uint16
	Limit uint32
	Count uint32
}

// CTLimiter is a datapath with per-zone connection limits (Linux's
// ovs_ct_limit family, as `ovs-appctl dpctl/ct-set-limits` drives it).
type CTLimiter interface {
	// SetCTLimits sets the default limit (when def is not nil) and each
	// zone's own limit.
	SetCTLimits(def *uint32, zones []ZoneLimit) error
	// DelCTLimits drops the zones' own limits: they take the default.
	DelCTLimits(zones []uint16) error
	// GetCTLimits returns the default limit and, for each zone asked,
	// its limit and count; with no zones asked, every zone that has its
	// own limit, in the kernel's order.
	GetCTLimits(zones []uint16) (def uint32, out []ZoneLimit, err error)
}
