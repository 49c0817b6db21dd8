package e2e

import (
	"path/filepath"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// Bodies framed as some S3-compatible servers and proxies frame them are
// accepted when their length is known otherwise, and a server that
// answers 416 to a range past the end (instead of clamping it) gives the
// object, never an empty file.
func TestOddlyFramedResponses(t *testing.T) {
	objects := map[string]int{"o/big/00000000": 3 << 20, "o/big/00000001": 3 << 20, "o/small/00000000": 1000, "o/small/00000001": 1000}
	for _, action := range []s3emu.Action{s3emu.Chunked{}, s3emu.CloseBody{}, s3emu.NoClamp{}} {
		t.Run(action.String(), func(t *testing.T) {
			s := emuStore(t, s3emu.Options{Dataset: "o/big:2:3MiB,o/small:2:1000", Faults: s3emu.NewFaults(
				s3emu.Rule{Key: "*", Times: -1, Action: action})})
			dest := t.TempDir()
			r := run(t, nil, s.cmd("get", "--partsize", "1MiB", "--verify", "full", s.url("o/"), dest)...)
			if r.code != 0 {
				t.Fatalf("prefix: exit %d\n%s", r.code, r.stderr)
			}
			for key, size := range objects {
				checkSynthetic(t, filepath.Join(dest, key[len("o/"):]), key, size)
			}
			// A single object smaller than the first range asked for.
			one := filepath.Join(t.TempDir(), "one")
			r = run(t, nil, s.cmd("get", s.url("o/small/00000001"), one)...)
			if r.code != 0 {
				t.Fatalf("single object: exit %d\n%s", r.code, r.stderr)
			}
			checkSynthetic(t, one, "o/small/00000001", 1000)
			if st := s.emu.Stats(); st.GetRequests > 20 {
				t.Errorf("%d GETs for 8 ranges and 3 small objects: retried", st.GetRequests)
			}
		})
	}
}
