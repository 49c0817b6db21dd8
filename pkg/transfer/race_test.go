//go:build race

package transfer

// raceEnabled: the race detector is on, and sync.Pool drops a quarter of
// what it is given, at random.
const raceEnabled = true
