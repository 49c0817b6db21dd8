package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// putInParts uploads data to key in parts of sizes, without checksums,
// as older clients did: the object's only check is its ETag of parts.
func putInParts(t *testing.T, s *store, key string, data []byte, sizes []int) {
	t.Helper()
	ctx := context.Background()
	up, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("create upload of %s: %v", key, err)
	}
	var parts []types.CompletedPart
	off := 0
	for i, n := range sizes {
		out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(s.bucket), Key: aws.String(key), UploadId: up.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(data[off : off+n])})
		if err != nil {
			t.Fatalf("upload part %d of %s: %v", i+1, key, err)
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(int32(i + 1))})
		off += n
	}
	if _, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(s.bucket), Key: aws.String(key),
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatalf("complete upload of %s: %v", key, err)
	}
}

// objectLine is the part of a --json object line these tests read.
type objectLine struct {
	Type             string   `json:"type"`
	Key              string   `json:"key"`
	Verification     string   `json:"verification"`
	Checksums        []string `json:"checksums"`
	UnverifiedDetail string   `json:"unverified_detail"`
}

// verifyLines are the --json object lines of stdout, by key.
func verifyLines(t *testing.T, stdout string) map[string]objectLine {
	t.Helper()
	out := map[string]objectLine{}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var o objectLine
		if err := json.Unmarshal([]byte(l), &o); err == nil && o.Type == "object" {
			out[o.Key] = o
		}
	}
	return out
}

// TestVerifyFullChecksETagOfParts: `get --verify full` checks an object
// uploaded in parts without checksums by its ETag of parts, with the
// part layout moto gives (a HEAD with partNumber), parts of one size or
// not; the emulator gives no layout, and the summary says so in words.
func TestVerifyFullChecksETagOfParts(t *testing.T) {
	m := motoStore(t)
	const mib = 1 << 20
	data := randomBytes(7, 12*mib)
	putInParts(t, m, "p/even", data, []int{5 * mib, 5 * mib, 2 * mib})
	putInParts(t, m, "p/uneven", data, []int{5 * mib, 6 * mib, 1 * mib})
	dest := t.TempDir()
	r := run(t, nil, m.cmd("get", "--json", "--verify", "full", m.url("p/"), dest)...)
	if r.code != 0 {
		t.Fatalf("get --verify full from moto: exit %d\n%s", r.code, r.stderr)
	}
	lines := verifyLines(t, r.stdout)
	for _, k := range []string{"p/even", "p/uneven"} {
		if l := lines[k]; l.Verification != "verified" || !strings.Contains(strings.Join(l.Checksums, ","), "md5-parts") {
			t.Errorf("%s: %+v, want verified by md5-parts", k, l)
		}
	}
	sameTree(t, dest, map[string][]byte{"even": data, "uneven": data})
	r = run(t, nil, m.cmd("get", "--verify", "full", "--overwrite", m.url("p/"), dest)...)
	if r.code != 0 || !strings.Contains(r.stdout, "verified: 2 objects (24.0 MiB) by md5-parts 2") {
		t.Errorf("summary: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	e := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory, NoChecksums: true})
	putInParts(t, e, "p/even", data, []int{5 * mib, 5 * mib, 2 * mib})
	r = run(t, nil, e.cmd("get", "--verify", "full", e.url("p/"), filepath.Join(t.TempDir(), "d"))...)
	if r.code != 0 || !strings.Contains(r.stdout, "verified: 1 object (12.0 MiB) by md5-parts 1") {
		t.Errorf("emulator (it serves partNumber): exit %d, want 0 and the ETag of parts checked\n%s%s", r.code, r.stdout, r.stderr)
	}
}
