//go:build race

package bench

// raceOn: the race detector slows every goroutine several times over, so
// tests whose truth is a timing (a capacity from a cost model) skip under it;
// the sweep's concurrency is still raced by the tests of its records.
const raceOn = true
