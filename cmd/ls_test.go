package cmd

import "testing"

// TestLsSizes: --human-readable writes sizes as the AWS CLI's
// human_readable_size does.
func TestLsSizes(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{0, "0 Bytes"}, {1, "1 Byte"}, {3, "3 Bytes"}, {1023, "1023 Bytes"},
		{1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {1 << 20, "1.0 MiB"},
		{1024*1024 - 300, "1.0 MiB"}, // 1023.7 KiB rounds to 1024: the next unit
		{1024*1024 - 700, "1023.3 KiB"},
		{3 << 30, "3.0 GiB"}, {5 << 40, "5.0 TiB"},
	} {
		if got := sizeText(tt.n, true); got != tt.want {
			t.Errorf("sizeText(%d): %q, want %q", tt.n, got, tt.want)
		}
	}
	if got := sizeText(1536, false); got != "1536" {
		t.Errorf("sizeText(1536) without -H: %q, want 1536", got)
	}
}
