package transfer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// TestDigestOfStream: a stream, which cannot be read back, hashes what
// it passes on for the object's digest: the object is verified by it,
// or fails naming the bytes that went out wrong.
func TestDigestOfStream(t *testing.T) {
	for _, wrong := range []bool{false, true} {
		src := transfertest.NewSource()
		data := bytes.Repeat([]byte("0123456789"), 1050)
		obj := src.Add("k", data)
		sum := sha256.Sum256(data)
		if wrong {
			sum[0] ^= 1
		}
		// Nothing else to check: no CRC, an ETag that is no MD5.
		obj.Checksums, obj.ChecksumAlgorithm, obj.ETag = nil, "", `"v1"`
		obj.Digest = &transfer.Digest{Name: "sha256", New: sha256.New, Sum: sum[:]}
		src.Put(obj, data)
		sink := transfertest.NewSink()
		sink.Stream = true
		rec := transfertest.NewRecorder()
		e, err := transfer.New([]transfer.Lane{{Name: "a", Source: src}}, sink, transfer.Options{PartSize: 1000, Observer: rec})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		r, _ := rec.Result("k")
		if wrong {
			if !errors.Is(r.Err, transfer.ErrChecksum) || !strings.Contains(r.Err.Error(), "written to the stream are wrong") {
				t.Fatalf("wrong digest: error %v, want a checksum mismatch naming the stream", r.Err)
			}
			continue
		}
		if r.Err != nil || r.Verification.String() != "sha256" {
			t.Fatalf("error %v, verification %q: want verified by sha256", r.Err, r.Verification)
		}
	}
}
