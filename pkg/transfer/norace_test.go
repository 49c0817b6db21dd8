//go:build !race

package transfer

const raceEnabled = false
