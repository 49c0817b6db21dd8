package config

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/s3pd/s3pd/internal/testenv"
)

// awscliSizes is a Python program that converts each argument with the
// AWS CLI's own code, as a size and as max_bandwidth; null means rejected.
const awscliSizes = `
import json, sys
from awscli.customizations.s3.utils import human_readable_to_bytes
from awscli.customizations.s3.transferconfig import RuntimeConfig
out = {}
for v in sys.argv[1:]:
    r = {"size": None, "rate": None}
    try:
        r["size"] = human_readable_to_bytes(v)
    except Exception:
        pass
    try:
        r["rate"] = RuntimeConfig().build_config(max_bandwidth=v)["max_bandwidth"]
    except Exception:
        pass
    out[v] = r
print(json.dumps(out))
`

// TestSizesMatchAWSCLI converts sizes and byte rates with the AWS CLI's
// own code and with ParseSize and ParseRate. Where s3pd differs on purpose,
// the case says so.
func TestSizesMatchAWSCLI(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Unavailable(t, "python3 is not installed")
	}
	if err := exec.Command(py, "-c", "import awscli.customizations.s3.utils").Run(); err != nil {
		testenv.Unavailable(t, "the AWS CLI's Python package is not installed (.ci/run installs awscli)")
	}
	inputs := []string{"1", "1024", "16MB", "16MiB", "16mb", "16mib", "16Mb", "8KB", "2GB", "1TB", "1TiB",
		"16XB", "16M", "MB", "1.5MB", "16 MB", "10MB/s", "800KB/s", "1GiB/s", "10Mb/s", "50GB", "fastB/s"}
	// Deliberate differences: s3pd reads "10Mb/s" (bits, as the AWS CLI v2
	// does for target_bandwidth) and plain integers as bytes per second;
	// the AWS CLI v1 rejects both for max_bandwidth.
	rateOnlyS3pd := map[string]bool{"10Mb/s": true, "1": true, "1024": true}
	// And a rate's "/s" is optional: each size without it reads as the
	// AWS CLI reads it with "/s" ("16MB" as "16MB/s"), and with a
	// lower-case b as bits (which the AWS CLI v1 rejects either way).
	noPerSecond := map[string]bool{"16MB": true, "16MiB": true, "8KB": true, "2GB": true, "1TB": true,
		"1TiB": true, "50GB": true, "16 MB": true}
	bitsNoPerSecond := map[string]bool{"16mb": true, "16mib": true, "16Mb": true}
	var query []string
	for _, in := range inputs {
		query = append(query, in)
		if noPerSecond[in] {
			query = append(query, in+"/s")
		}
	}
	args := append([]string{"-c", awscliSizes}, query...)
	out, err := exec.Command(py, args...).Output()
	if err != nil {
		t.Fatalf("aws cli python: %v", err)
	}
	var want map[string]struct{ Size, Rate *int64 }
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	for _, in := range inputs {
		w := want[in]
		got, err := ParseSize(in)
		switch {
		case w.Size == nil && err == nil:
			t.Errorf("ParseSize(%q) = %d, the AWS CLI rejects it", in, got)
		case w.Size != nil && (err != nil || got != *w.Size):
			t.Errorf("ParseSize(%q) = %d, %v; the AWS CLI reads %d", in, got, err, *w.Size)
		}
		got, err = ParseRate(in)
		switch {
		case rateOnlyS3pd[in] || bitsNoPerSecond[in]:
			if err != nil {
				t.Errorf("ParseRate(%q): %v, want bits per second", in, err)
			}
		case noPerSecond[in]:
			ws := want[in+"/s"].Rate
			if ws == nil || err != nil || got != *ws {
				t.Errorf("ParseRate(%q) = %d, %v; the AWS CLI reads %q as %v", in, got, err, in+"/s", ws)
			}
		case w.Rate == nil && err == nil:
			t.Errorf("ParseRate(%q) = %d, the AWS CLI rejects it", in, got)
		case w.Rate != nil && (err != nil || got != *w.Rate):
			t.Errorf("ParseRate(%q) = %d, %v; the AWS CLI reads %d", in, got, err, *w.Rate)
		}
	}
}
