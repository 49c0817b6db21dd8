package config

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/s3pd/s3pd/internal/testenv"
)

// botocoreDump is a Python program that prints, for each config file named
// on its command line, the profiles botocore (the AWS CLI's library) reads
// from it, or {"error": ...}.
const botocoreDump = `
import json, sys
import botocore.configloader as c
out = {}
for path in sys.argv[1:]:
    try:
        out[path] = c.load_config(path)["profiles"]
    except Exception as e:
        out[path] = {"error": str(e)}
print(json.dumps(out))
`

// TestParseAWSConfigMatchesBotocore parses tricky files with botocore
// itself and with ParseAWSConfig and compares the profiles they find.
func TestParseAWSConfigMatchesBotocore(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Unavailable(t, "python3 is not installed")
	}
	if err := exec.Command(py, "-c", "import botocore.configloader").Run(); err != nil {
		testenv.Unavailable(t, "botocore (the AWS CLI's library) is not installed (.ci/run installs awscli)")
	}
	texts := map[string]string{
		"aws configure layout": "[default]\ns3 =\n    multipart_chunksize = 16MB\n    target_bandwidth = 50GB/s\nregion = us-west-2\n[profile dev]\ns3 =\n    max_concurrent_requests = 20\n",
		"colon and case":       "[default]\nRegion: us-east-1\nS3 =\n  Multipart_Chunksize = 8MB\n",
		"comments and blanks":  "# top\n[default]\n; c\ns3 =\n\n  multipart_chunksize = 16MB\n  # inside\n\n  max_queue_size = 9\n\nregion = x\n",
		"DEFAULT section":      "[DEFAULT]\nregion = r\n[default]\ns3 =\n  max_bandwidth = 1MB/s\n[profile a]\nregion = own\n",
		"quoted profile":       "[profile \"my prof\"]\ns3 =\n  workers = 3\n[profilex]\nregion = y\n[sso-session s]\nregion = z\n",
		"profile default wins": "[default]\nregion = a\n[profile default]\nregion = b\n",
		"inline then block":    "[default]\ns3 = x\n  multipart_chunksize = 1\n",
		"nested without =":     "[default]\ns3 =\n  multipart_chunksize\n",
		"duplicate key":        "[default]\nregion = a\nregion = b\n",
		"duplicate section":    "[default]\n[default]\n",
		"no section":           "region = a\n",
		"tabs and crlf":        "[default]\r\ns3 =\r\n\tmultipart_chunksize = 2MB\r\n",
		"value with equals":    "[default]\ns3 =\n  endpoint_url = http://h:1/?a=b\n",
	}
	dir := t.TempDir()
	paths := map[string]string{}
	args := []string{"-c", botocoreDump}
	for name, text := range texts {
		path := filepath.Join(dir, fmt.Sprintf("config%d", len(paths)))
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths[name] = path
		args = append(args, path)
	}
	out, err := exec.Command(py, args...).Output()
	if err != nil {
		t.Fatalf("botocore: %v", err)
	}
	var boto map[string]map[string]any
	if err := json.Unmarshal(out, &boto); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	for name, path := range paths {
		t.Run(name, func(t *testing.T) {
			want := boto[path]
			c, err := ReadAWSConfig(path, false)
			if _, botoErr := want["error"]; botoErr || err != nil {
				if !botoErr || err == nil {
					t.Errorf("botocore error %v, ours %v: want both or neither", want["error"], err)
				}
				return
			}
			got := map[string]any{}
			for p, flat := range c.profiles {
				m := map[string]any{}
				for k, v := range flat {
					m[k] = v
				}
				for k, sub := range c.nested[p] {
					n := map[string]any{}
					for sk, sv := range sub {
						n[sk] = sv
					}
					m[k] = n
				}
				got[p] = m
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want botocore's %v", got, want)
			}
		})
	}
}
