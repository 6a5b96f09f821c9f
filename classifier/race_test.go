//go:build race

package classifier

// raceEnabled shortens the slowest property tests under the race detector,
// which makes them ten times slower; the concurrency tests run in full.
const raceEnabled = true
