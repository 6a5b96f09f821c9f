package ofproto

import (
	"fmt"
	"strings"
)

// What a translation tells ofproto/trace beyond the rules it matched:
// the lines ovs-vswitchd's trace prints under a rule's actions (NORMAL's
// "-> forwarding to learned port", a group's "-> using bucket 1" and its
// bucket), and the "thaw" of a recirculated packet's frozen translation.
// Only a trace has a log (Out.trace); everywhere else the hooks are one
// nil check, and their arguments are built behind it, so the upcall path
// allocates nothing for them.

// traceLog is a trace's record of those lines, in the order written.
type traceLog struct {
	lines []traceLine
	// actions, while set, has the actions a resumed translation runs
	// at the top of its pipeline noted one by one, as OVS prints the
	// thawed actions (there is no rule line to list them).
	actions bool
	// failed, when set, is why the translation failed, in OVS's words
	// (xlate_strerror): the trace says so in place of the drop reason.
	failed string
	// cutRule, when not 0, is the rule (Out.Rules index plus one) whose
	// actions froze: the trace lists its first cutActs actions only.
	cutRule, cutActs int
}

// traceLine is one line of the trace: text, indented as printed, after
// the rule the translation noted last when it was written (Out.Rules
// index plus one, 0 before any rule).
type traceLine struct {
	after int
	text  string
}

// trace appends a line to the trace log. Callers check c.out.trace
// first: the arguments would be built even for a translation that has
// no log.
func (c *xctx) trace(indent int, format string, args ...any) {
	t := c.out.trace
	t.lines = append(t.lines, traceLine{after: c.out.NRules, text: strings.Repeat(" ", indent) + fmt.Sprintf(format, args...)})
}

// Indentation of OVS's trace lines: an action under a rule, a detail
// (" -> ") of that action, and an action in a bucket or a thaw's second
// level.
const (
	traceAction = 4
	traceNested = 12
)

// traceDetail notes an OVS detail line ("     -> text") when tracing.
func (c *xctx) traceDetail(text string) {
	if c.out.trace != nil {
		c.trace(traceAction, " -> %s", text)
	}
}

// macText is an Ethernet address as OVS's ETH_ADDR_FMT writes it.
func macText(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// cHex formats v as C's %#x does: 0 without the 0x.
func cHex(v uint64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%#x", v)
}
