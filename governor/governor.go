// Package governor decides, for each flow miss, whether installing a
// datapath flow is worth its cost or whether the switch should just execute
// the packet. It is the 2012 Open vSwitch flow-setup governor (OVS 1.7–2.0),
// adapted to megaflows: the caller hashes the masked key, so packets are
// counted per megaflow.
//
// The idea: setting up and later tearing down a datapath flow costs several
// times more than executing one packet in userspace, so for flows of one or
// two packets (connection storms, scans, DNS) it is cheaper never to
// install them. The governor counts packets per flow hash in a table of
// 4-bit counters and says "install" once a hash has been seen Threshold
// times within one generation. A generation lasts a quarter as many packets
// as the table has bytes (one packet per eight counters), ends with the
// whole table cleared, and the table doubles or halves so that a generation
// lasts between MinElapsed and MaxElapsed. When nearly every flow counted
// ends up installed anyway, a shortcut installs 63 of every 64 hashes at
// once and keeps sampling the rest.
//
// A Governor is not safe for concurrent use: give each upcall handler its
// own. With per-CPU upcall dispatch a flow's packets reach one handler, so
// per-handler counts are exact per flow.
package governor

import "time"

// Tunables of the 2012 governor.
const (
	// Threshold is the number of packets of a hash, within one generation,
	// after which the flow is installed. It must fit in a nibble.
	Threshold = 5
	// MinSize and MaxSize bound the counter table, in bytes (two counters
	// a byte). Both are powers of two.
	MinSize = 16 << 10
	MaxSize = 256 << 10
	// MinElapsed and MaxElapsed bound the length of a generation: shorter
	// ones double the table, longer ones halve it.
	MinElapsed = 1000 * time.Millisecond
	MaxElapsed = 5000 * time.Millisecond

	// shortcutMinFlows is how many distinct hashes a generation must have
	// counted before shortcut mode can start.
	shortcutMinFlows = 64
	// shortcutSampleMask selects the hashes (1 in 64) that always take the
	// counting path, so the governor notices when traffic changes.
	shortcutSampleMask = 0x3f
)

// Decision is what the governor said about one miss.
type Decision uint8

const (
	// Execute: do not install a datapath flow; execute the packets.
	Execute Decision = iota
	// Install: the flow has been seen often enough; install it.
	Install
	// Shortcut: installed without counting, because nearly every flow is
	// installed anyway.
	Shortcut
)

func (d Decision) String() string {
	switch d {
	case Execute:
		return "execute"
	case Install:
		return "install"
	case Shortcut:
		return "shortcut"
	}
	return "unknown"
}

// Installs reports whether d means "install a datapath flow".
func (d Decision) Installs() bool { return d != Execute }

// Generation summarises one generation, for the log line OVS printed when a
// generation ended.
type Generation struct {
	Packets   uint64        // packets counted in the generation
	Elapsed   time.Duration // how long it lasted
	OldSize   int           // table size in bytes during the generation
	NewSize   int           // table size for the next one
	Flows     uint64        // distinct hashes counted (decayed, see Stats)
	Setups    uint64        // counting-path installs (decayed)
	Shortcuts uint64        // shortcut installs in the generation
}

// Stats are a governor's counters. Flows and Setups halve at each
// generation's end, so they weigh recent traffic; the totals do not.
type Stats struct {
	Size        int    // current table size in bytes
	Packets     uint64 // packets counted in the current generation
	Flows       uint64 // distinct hashes counted, halved each generation
	Setups      uint64 // installs by counting, halved each generation
	Shortcuts   uint64 // shortcut installs in the current generation
	Generations uint64 // generations ended

	TotalInstalls  uint64 // Install decisions ever
	TotalShortcuts uint64 // Shortcut decisions ever
	TotalExecutes  uint64 // Execute decisions ever
}

// Governor is one flow-setup governor. The zero value is not usable; call
// New.
type Governor struct {
	// table holds the counters: byte i holds two nibbles. Its backing array
	// is MaxSize bytes, allocated once; table is a prefix of it, so
	// resizing never allocates.
	table   []byte
	backing []byte
	start   time.Time
	stats   Stats

	// OnGeneration, if set, is called at the end of each generation. It
	// runs on the caller's goroutine inside ShouldInstall or Run.
	OnGeneration func(Generation)
}

// New returns a governor of minimum size whose first generation starts at
// now.
func New(now time.Time) *Governor {
	g := &Governor{backing: make([]byte, MaxSize), start: now}
	g.table = g.backing[:MinSize]
	g.stats.Size = MinSize
	return g
}

// Stats returns the governor's counters.
func (g *Governor) Stats() Stats { return g.stats }

// ShouldInstall counts n packets (the packets of this flow in the current
// upcall batch, normally 1) of the flow whose hash is hash, at time now, and
// says whether to install the flow. Colliding hashes share a counter, so a
// flow may be installed early, never late. It does not allocate.
func (g *Governor) ShouldInstall(hash uint32, n int, now time.Time) Decision {
	if n < 1 {
		n = 1
	}
	g.stats.Packets += uint64(n)
	if g.stats.Packets >= uint64(len(g.table)/4) {
		g.endGeneration(now)
	}

	if g.stats.Setups >= g.stats.Flows-g.stats.Flows/16 &&
		g.stats.Flows >= shortcutMinFlows &&
		hash&shortcutSampleMask != 0 {
		g.stats.Shortcuts++
		g.stats.TotalShortcuts++
		return Shortcut
	}

	i := int(hash>>1) & (len(g.table) - 1)
	shift := uint(0) // odd hashes use the low nibble
	if hash&1 == 0 {
		shift = 4
	}
	old := int(g.table[i]>>shift) & 0xf
	if old == 0 {
		g.stats.Flows++
	}
	count := old + n
	if count >= Threshold {
		g.table[i] &^= 0xf << shift
		g.stats.Setups++
		g.stats.TotalInstalls++
		return Install
	}
	g.table[i] = g.table[i]&^(0xf<<shift) | byte(count)<<shift
	g.stats.TotalExecutes++
	return Execute
}

// endGeneration resizes the table by how long the generation took, clears
// it and starts the next generation at now.
func (g *Governor) endGeneration(now time.Time) {
	elapsed := now.Sub(g.start)
	size := len(g.table)
	switch {
	case elapsed < MinElapsed && size < MaxSize:
		size *= 2
	case elapsed > MaxElapsed && size > MinSize:
		size /= 2
	}
	g.newGeneration(now, size, elapsed)
}

// reset returns g to a fresh minimum-size table whose generation starts at
// now, as New does, keeping the totals.
func (g *Governor) reset(now time.Time) {
	g.table = g.backing[:MinSize]
	clear(g.table)
	g.start = now
	g.stats.Size = MinSize
	g.stats.Packets, g.stats.Flows, g.stats.Setups, g.stats.Shortcuts = 0, 0, 0, 0
}

func (g *Governor) newGeneration(now time.Time, size int, elapsed time.Duration) {
	gen := Generation{
		Packets:   g.stats.Packets,
		Elapsed:   elapsed,
		OldSize:   len(g.table),
		NewSize:   size,
		Flows:     g.stats.Flows,
		Setups:    g.stats.Setups,
		Shortcuts: g.stats.Shortcuts,
	}
	g.table = g.backing[:size]
	clear(g.table)
	g.start = now
	g.stats.Size = size
	g.stats.Packets = 0
	g.stats.Flows /= 2
	g.stats.Setups /= 2
	g.stats.Shortcuts = 0
	g.stats.Generations++
	if g.OnGeneration != nil {
		g.OnGeneration(gen)
	}
}

// Run does the governor's periodic work at time now: when traffic has
// stopped (a generation has lasted longer than MaxElapsed) and the table is
// above minimum size, it starts a new generation at half the size. Call it
// at least every MaxElapsed; NextRun says when it next has work.
func (g *Governor) Run(now time.Time) {
	if elapsed := now.Sub(g.start); elapsed > MaxElapsed && len(g.table) > MinSize {
		g.newGeneration(now, len(g.table)/2, elapsed)
	}
}

// NextRun returns when Run next has work to do, and false when it has none
// (the table is already at minimum size), so an idle switch does not wake.
func (g *Governor) NextRun() (time.Time, bool) {
	if len(g.table) <= MinSize {
		return time.Time{}, false
	}
	return g.start.Add(MaxElapsed), true
}

// Idle reports whether the governor has shrunk to minimum size and seen no
// generation start for MaxElapsed: the condition, with few installed flows,
// for the switch to stop consulting it.
func (g *Governor) Idle(now time.Time) bool {
	return len(g.table) == MinSize && now.Sub(g.start) > MaxElapsed
}
