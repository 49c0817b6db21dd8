package transfer

import (
	"errors"
	"strings"
	"testing"
)

// TestRequired: --verify require fails every object of some size that no
// checksum verified, saying why, and nothing else.
func TestRequired(t *testing.T) {
	for _, tt := range []struct {
		name string
		v    Verification
		size int64
		fail bool
	}{
		{"verified", Verification{Checksums: []string{"crc64nvme"}}, 10, false},
		{"off", Verification{Off: true}, 10, false},
		{"empty", Verification{Unverified: UnverifiedEmpty}, 0, false},
		{"empty upload, size checked", Verification{Unverified: UnverifiedNoChecksum}, 0, false},
		{"no checksum", Verification{Unverified: UnverifiedNoChecksum, Detail: "the object has no checksum"}, 10, true},
		{"parts only", Verification{Unverified: UnverifiedPartsOnly, Detail: "each part"}, 10, true},
	} {
		err := Required(tt.v, tt.size)
		if (err != nil) != tt.fail || tt.fail && (!errors.Is(err, ErrUnverified) || Retriable(err)) {
			t.Errorf("%s: error %v, want failure %v (permanent, ErrUnverified)", tt.name, err, tt.fail)
		}
		if tt.fail && err != nil && tt.v.Detail != "" && !strings.Contains(err.Error(), tt.v.Detail) {
			t.Errorf("%s: %q does not say why (%q)", tt.name, err, tt.v.Detail)
		}
	}
}
