package cmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestAWSConfigChunksizeReachesEmulator runs `s3pd get` against the
// emulator on loopback and checks that multipart_chunksize, set with
// `aws configure set default.s3.multipart_chunksize`, is the size of the
// ranges the emulator receives.
func TestAWSConfigChunksizeReachesEmulator(t *testing.T) {
	const key = "obj/00000000"
	tests := []struct {
		name     string
		aws      []string
		wantPart int64
	}{
		{"no AWS config: default 8MiB", nil, 8 << 20},
		{"AWS config 5MB", []string{"default.s3.multipart_chunksize", "5MB"}, 5 << 20},
		{"AWS config 3MiB", []string{"default.s3.multipart_chunksize", "3MiB"}, 3 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSettingsEnv(t)
			e.awsSet(t, tt.aws...)
			// The AWS SDK reads the process's environment itself.
			for _, k := range []string{"HOME", "AWS_CONFIG_FILE"} {
				t.Setenv(k, e.vars[k])
			}
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(e.dir, "no-credentials"))
			for _, k := range os.Environ() {
				if name, _, _ := strings.Cut(k, "="); strings.HasPrefix(name, "S3PD_") || name == "AWS_PROFILE" {
					t.Setenv(name, "")
				}
			}
			emu := s3emu.NewTestServer(t, s3emu.Options{Dataset: "obj:1:12MiB", LogRequests: true})
			url := emu.URL

			f := e.factory()
			f.Getenv = os.Getenv
			root := NewCmdRoot(f)
			root.SetArgs([]string{"get", "--benchmark", "--quiet", "--endpoint-url", url, "--region", "us-east-1",
				"--no-sign-request", "s3://" + s3emu.DefaultBucket + "/" + key})
			if err := root.ExecuteContext(context.Background()); err != nil {
				t.Fatalf("get: %v\nstderr: %s", err, f.IO.ErrOut.(*bytes.Buffer))
			}

			var maxPart, total int64
			for _, r := range emu.Log() {
				if r.Method != "GET" || r.Key != key || r.Range == "" {
					continue
				}
				var a, b int64
				if _, err := fmt.Sscanf(r.Range, "bytes=%d-%d", &a, &b); err != nil {
					t.Fatalf("range %q: %v", r.Range, err)
				}
				maxPart = max(maxPart, b-a+1)
				total += b - a + 1
			}
			if maxPart != tt.wantPart {
				t.Errorf("largest range the emulator received: %d bytes, want %d", maxPart, tt.wantPart)
			}
			if total < 12<<20 {
				t.Errorf("ranges covered %d bytes, want at least %d", total, 12<<20)
			}
		})
	}
}
