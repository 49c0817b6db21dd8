//go:build !race

package transfer

// simEvery is how many of the simulated grid's cases one run takes:
// every one without the race detector (see netsim_race_test.go).
const simEvery = 1
