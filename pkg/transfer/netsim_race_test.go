//go:build race

package transfer

// simEvery is how many of the simulated grid's cases one run takes: the
// race detector makes the gate's atomics some 30 times as slow, and the
// simulation is one goroutine with nothing to race, so a -race run takes
// one case in simEvery (each case still asserts its targets): with each
// case at least simSteady round trips long, one in five took a minute.
const simEvery = 8
