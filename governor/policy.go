package governor

import (
	"fmt"
	"time"
)

// Mode overrides when the governor is consulted, like OVS's
// other_config:force-miss-model.
type Mode uint8

const (
	// Auto engages the governor when many flows are installed and
	// disengages it when few are and it has gone idle (the default).
	Auto Mode = iota
	// AlwaysInstall never consults the governor: every miss installs a
	// flow ("with-facets").
	AlwaysInstall
	// NeverInstall installs no flow: every miss is executed only
	// ("without-facets"). For experiments; the datapath then does no work.
	NeverInstall
)

var modeNames = [...]string{Auto: "auto", AlwaysInstall: "always", NeverInstall: "never"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", m)
}

// ParseMode parses "auto", "always" or "never" (and OVS's "with-facets"
// and "without-facets").
func ParseMode(s string) (Mode, error) {
	switch s {
	case "auto", "":
		return Auto, nil
	case "always", "with-facets":
		return AlwaysInstall, nil
	case "never", "without-facets":
		return NeverInstall, nil
	}
	return Auto, fmt.Errorf("governor mode %q: want auto, always or never", s)
}

// DefaultThreshold is the installed-flow count that sizes engagement, as
// OVS 1.10's flow-eviction-threshold default: the governor engages above
// half of it and disengages below a quarter.
const DefaultThreshold = 2500

// MinThreshold is the smallest threshold accepted, as in OVS.
const MinThreshold = 100

// Policy decides per miss whether to install, engaging a Governor when the
// datapath holds many flows. Different engage and disengage points give
// hysteresis: it engages when installed flows exceed Threshold/2 and
// disengages only when they fall below Threshold/4 and the governor has
// been idle (minimum size, no generation for MaxElapsed).
//
// Like Governor, a Policy is not safe for concurrent use; give each handler
// its own. The installed-flow count it is given may be approximate (a
// cached datapath count).
type Policy struct {
	Mode      Mode
	Threshold int // see DefaultThreshold; values below MinThreshold are raised to it

	gov     *Governor
	engaged bool
	// Engagements counts how many times the governor engaged.
	Engagements uint64
}

// NewPolicy returns a policy in mode m with the given threshold (0 means
// DefaultThreshold). The governor's table is allocated here, once.
func NewPolicy(m Mode, threshold int, now time.Time) *Policy {
	if threshold == 0 {
		threshold = DefaultThreshold
	}
	if threshold < MinThreshold {
		threshold = MinThreshold
	}
	return &Policy{Mode: m, Threshold: threshold, gov: New(now)}
}

// Governor returns the policy's governor, for its stats and log hook.
func (p *Policy) Governor() *Governor { return p.gov }

// Engaged reports whether misses currently go through the governor.
func (p *Policy) Engaged() bool { return p.engaged }

// Decide says whether to install the flow of n packets whose (masked-key)
// hash is hash, given that installed flows are currently installed. Call it
// only for misses that have no flow installed or being installed.
func (p *Policy) Decide(hash uint32, n int, installed int, now time.Time) Decision {
	switch p.Mode {
	case AlwaysInstall:
		return Install
	case NeverInstall:
		return Execute
	}
	if !p.engaged {
		if installed*2 <= p.Threshold {
			return Install
		}
		p.engage(now)
	}
	return p.gov.ShouldInstall(hash, n, now)
}

func (p *Policy) engage(now time.Time) {
	p.engaged = true
	p.Engagements++
	// Start from a clean minimum-size table, as a new governor would.
	p.gov.reset(now)
}

// Run does periodic work: the governor's own, and disengaging it when few
// flows remain installed and it has gone idle.
func (p *Policy) Run(installed int, now time.Time) {
	if !p.engaged {
		return
	}
	p.gov.Run(now)
	if installed*4 < p.Threshold && p.gov.Idle(now) {
		p.engaged = false
	}
}
