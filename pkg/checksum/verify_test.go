package checksum

import (
	"errors"
	"testing"
)

func TestCompare(t *testing.T) {
	hello := crcOf(CRC64NVME, []byte("hello world"))
	tests := []struct {
		name          string
		alg           Algorithm
		sent          string
		got           uint64
		want          Verdict
		wantComposite bool
	}{
		{"match", CRC64NVME, "jSnVw/bqjr4=", hello, Match, false},
		{"mismatch", CRC64NVME, "jSnVw/bqjr4=", hello ^ 1, Mismatch, false},
		{"crc32c match", CRC32C, "yZRlqg==", 0xc99465aa, Match, false},
		{"composite never mismatches", CRC32C, "yZRlqg==-3", 0x1234, Unverified, true},
		{"composite equal value", CRC32C, "yZRlqg==-3", 0xc99465aa, Unverified, true},
		{"unreadable", CRC32, "not base64", 0, Unverified, false},
		{"wrong length", CRC64NVME, "yZRlqg==", 0, Unverified, false},
		{"unsupported", "SHA256", "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=", 0, Unverified, false},
	}
	for _, tt := range tests {
		got, err := Compare(tt.alg, tt.sent, tt.got)
		if got != tt.want {
			t.Errorf("%s: got %v (%v), want %v", tt.name, got, err, tt.want)
		}
		if (err == nil) != (tt.want == Match) {
			t.Errorf("%s: got error %v for verdict %v", tt.name, err, got)
		}
		if errors.Is(err, ErrComposite) != tt.wantComposite {
			t.Errorf("%s: errors.Is(err, ErrComposite) = %v, want %v", tt.name, errors.Is(err, ErrComposite), tt.wantComposite)
		}
	}
	if s := Mismatch.String() + Match.String() + Unverified.String(); s != "mismatchmatchunverified" {
		t.Errorf("Verdict.String: got %q", s)
	}
}
