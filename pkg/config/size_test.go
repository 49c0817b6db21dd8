package config

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"1024", 1024, false},
		{"0", 0, false},
		{"16MB", 16 << 20, false},
		{"16MiB", 16 << 20, false},
		{"16mb", 16 << 20, false},
		{"16mib", 16 << 20, false},
		{"8KB", 8 << 10, false},
		{"8KiB", 8 << 10, false},
		{"2GB", 2 << 30, false},
		{"1TB", 1 << 40, false},
		{"1TiB", 1 << 40, false},
		{" 16 MB ", 16 << 20, false},
		{"16XB", 0, true},
		{"16M", 0, true},
		{"16B", 0, true},
		{"MB", 0, true},
		{"", 0, true},
		{"-5", 0, true},
		{"-5MB", 0, true},
		{"1.5MB", 0, true},
		{"9999999999TB", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestParseSizeSuggests: a one-letter unit, which the AWS CLI refuses
// too, is refused with the spelling meant.
func TestParseSizeSuggests(t *testing.T) {
	for _, tt := range []struct{ in, hint string }{
		{"16M", "did you mean 16MiB?"},
		{"512k", "did you mean 512KiB?"},
		{"2G", "did you mean 2GiB?"},
		{"16X", ""},
		{"M", ""},
	} {
		_, err := ParseSize(tt.in)
		if err == nil {
			t.Fatalf("ParseSize(%q) accepted", tt.in)
		}
		if got := strings.Contains(err.Error(), "did you mean"); got != (tt.hint != "") || !strings.Contains(err.Error(), tt.hint) {
			t.Errorf("ParseSize(%q): %v, want hint %q", tt.in, err, tt.hint)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"0", 0, false},
		{"1048576", 1 << 20, false},
		{"50GB/s", 50 << 30, false},
		{"50GiB/s", 50 << 30, false},
		{"100MB/s", 100 << 20, false},
		{"800KB/s", 800 << 10, false},
		{"800B/s", 800, false},
		{"10Gb/s", 10 << 30 / 8, false},
		{"100Mb/s", 100 << 20 / 8, false},
		{"8b/s", 1, false},
		{"50GB", 50 << 30, false},
		{"100MiB", 100 << 20, false},
		{"800KB", 800 << 10, false},
		{"800B", 800, false},
		{"10Gb", 10 << 30 / 8, false},
		{"100mb", 100 << 20 / 8, false},
		{"50G", 0, true},
		{"50GB/", 0, true},
		{"50GB/s/s", 0, true},
		{"1.5MB", 0, true},
		{"50XB/s", 0, true},
		{"50iB/s", 0, true},
		{"fastB/s", 0, true},
		{"/s", 0, true},
		{"-1", 0, true},
		{"-1MB/s", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestFormatRoundTrip(t *testing.T) {
	for _, n := range []int64{1, 1000, 1024, 16 << 20, 3 << 30, 1<<40 + 1, 5 << 40} {
		got, err := ParseSize(FormatSize(n))
		if err != nil || got != n {
			t.Errorf("ParseSize(FormatSize(%d) = %q) = %d, %v; want %d", n, FormatSize(n), got, err, n)
		}
		got, err = ParseRate(FormatRate(n))
		if err != nil || got != n {
			t.Errorf("ParseRate(FormatRate(%d) = %q) = %d, %v; want %d", n, FormatRate(n), got, err, n)
		}
	}
	if got, want := FormatSize(16<<20), "16MiB"; got != want {
		t.Errorf("FormatSize(16MiB) = %q, want %q", got, want)
	}
	if got, want := FormatRate(50<<30), "50GiB/s"; got != want {
		t.Errorf("FormatRate(50GiB) = %q, want %q", got, want)
	}
}
