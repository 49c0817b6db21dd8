package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// unit multipliers, as the AWS CLI reads them: KB and KiB are both 1024.
var sizeSuffixes = map[string]int64{
	"kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// ParseSize reads a size in bytes in the AWS CLI's syntax: a non-negative
// integer with an optional, case-insensitive KB, MB, GB, TB (or KiB, MiB,
// GiB, TiB) suffix, each a power of 1024: "16MB", "16MiB", "16mb", "1024".
func ParseSize(s string) (int64, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	suffix := ""
	switch {
	case strings.HasSuffix(v, "ib") && len(v) >= 3:
		suffix = v[len(v)-3:]
	case len(v) >= 2:
		suffix = v[len(v)-2:]
	}
	mult, ok := sizeSuffixes[suffix]
	if !ok {
		mult, suffix = 1, ""
	}
	n, err := parseCount(strings.TrimSpace(v[:len(v)-len(suffix)]))
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: want an integer with an optional KB, MB, GB, TB (or KiB, MiB, GiB, TiB) suffix%s", s, sizeHint(s))
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return n * mult, nil
}

// sizeHint suggests the spelling meant by a size with a one-letter unit
// ("16M": "; did you mean 16MiB?"), which the AWS CLI refuses too; ""
// when there is none.
func sizeHint(s string) string {
	v := strings.TrimSpace(s)
	if len(v) < 2 || !strings.ContainsRune("kmgtKMGT", rune(v[len(v)-1])) {
		return ""
	}
	if _, err := parseCount(v[:len(v)-1]); err != nil {
		return ""
	}
	return fmt.Sprintf("; did you mean %s%ciB?", v[:len(v)-1], strings.ToUpper(v[len(v)-1:])[0])
}

// ParseRate reads a rate in bytes per second in the AWS CLI's syntax: a
// size followed by B/s for bytes or b/s for bits ("50GB/s", "10Gb/s",
// "100MB/s", "800KB/s", "800B/s"), or a plain integer of bytes per second.
// Prefixes are powers of 1024, as in the AWS CLI. The "/s" may be left
// out ("100MB", "10Gb"): the unit suffix means the same with or without
// it, and a lower-case b is bits either way.
func ParseRate(s string) (int64, error) {
	v := strings.TrimSpace(s)
	if n, err := parseCount(v); err == nil {
		return n, nil
	}
	bad := fmt.Errorf("invalid rate %q: want bytes per second (100MB/s or 100MB, 800KB/s), bits per second (10Gb/s or 10Gb) or an integer of bytes per second", s)
	body := strings.TrimSuffix(v, "/s")
	if body == "" {
		return 0, bad
	}
	bits := false
	switch body[len(body)-1] {
	case 'B':
	case 'b':
		bits = true
	default:
		return 0, bad
	}
	body = body[:len(body)-1]
	mult := int64(1)
	lower := strings.ToLower(body)
	lower = strings.TrimSuffix(lower, "i")
	if lower != "" {
		if m, ok := sizeSuffixes[lower[len(lower)-1:]+"b"]; ok {
			mult, lower = m, lower[:len(lower)-1]
		} else if len(lower) != len(strings.ToLower(body)) {
			return 0, bad // an "i" without a prefix
		}
	}
	n, err := parseCount(strings.TrimSpace(lower))
	if err != nil {
		return 0, bad
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("invalid rate %q: too large", s)
	}
	n *= mult
	if bits {
		n /= 8
	}
	return n, nil
}

// parseCount reads a non-negative decimal integer.
func parseCount(s string) (int64, error) {
	if s == "" || strings.ContainsAny(s, "+-") {
		return 0, fmt.Errorf("not a non-negative integer: %q", s)
	}
	return strconv.ParseInt(s, 10, 64)
}

// FormatSize writes n bytes in the largest binary unit that divides it
// exactly ("16MiB", "1000"); ParseSize reads the result back.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// FormatRate writes a rate in bytes per second ("50GiB/s"); 0 is "0".
// ParseRate reads the result back.
func FormatRate(n int64) string {
	if n == 0 {
		return "0"
	}
	s := FormatSize(n)
	if s[len(s)-1] == 'B' {
		return s + "/s"
	}
	return s + "B/s"
}
