package report

import (
	"fmt"
	"time"
)

// Rate writes a rate for people as one pair of units: bytes in binary
// units, as files are measured ("689 MiB/s", "1.50 GiB/s"), and bits in
// decimal Gbit/s, as network cards are rated ("(5.78 Gbit/s)"), from
// 1 MiB/s up.
func Rate(bytesPerSecond float64) string {
	if bytesPerSecond < 1<<20 {
		return fmt.Sprintf("%s/s", smallBytes(bytesPerSecond))
	}
	v, unit := bytesPerSecond/(1<<20), "MiB/s"
	if bytesPerSecond >= 1<<30 {
		v, unit = bytesPerSecond/(1<<30), "GiB/s"
	}
	return fmt.Sprintf("%s %s (%s Gbit/s)", digits(v), unit, digits(bytesPerSecond*8/1e9))
}

// Gbps is a throughput in decimal gigabits per second (10^9 bits).
func Gbps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) * 8 / 1e9 / d.Seconds()
}

// gibpsToBytes turns a rate in Gibit/s back into bytes per second.
func gibpsToBytes(gibps float64) float64 { return gibps * gib / 8 }

// RateOfGibps is Rate of a rate in Gibit/s (the series' statistics).
func RateOfGibps(gibps float64) string { return Rate(gibpsToBytes(gibps)) }

func smallBytes(v float64) string {
	if v < 1024 {
		return fmt.Sprintf("%d B", int64(v))
	}
	return digits(v/1024) + " KiB"
}

// digits writes v with three significant digits (at least its integer
// part): 1.23, 12.3, 123, 1234.
func digits(v float64) string {
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}
