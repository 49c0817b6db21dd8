package fleet_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3pd/s3pd/pkg/fleet"
	"github.com/s3pd/s3pd/pkg/s3emu"
)

// putInParts uploads six objects under prefix, each in two to four
// parts (the last one shorter), with part checksums of alg ("": none).
func putInParts(alg types.ChecksumAlgorithm) func(t *testing.T, c *s3.Client) {
	return func(t *testing.T, c *s3.Client) {
		t.Helper()
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range 6 {
			key := fmt.Sprintf("%smp/%02d", prefix, i)
			up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(s3emu.DefaultBucket), Key: aws.String(key), ChecksumAlgorithm: alg})
			if err != nil {
				t.Fatal(err)
			}
			var done []types.CompletedPart
			parts := 2 + i%3
			for p := range parts {
				size := 200 << 10
				if p == parts-1 {
					size = 50<<10 + i<<10
				}
				data := make([]byte, size)
				for j := range data {
					data[j] = byte(rng.Uint32())
				}
				out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(s3emu.DefaultBucket), Key: aws.String(key), UploadId: up.UploadId,
					PartNumber: aws.Int32(int32(p + 1)), Body: bytes.NewReader(data), ChecksumAlgorithm: alg})
				if err != nil {
					t.Fatal(err)
				}
				done = append(done, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(int32(p + 1)), ChecksumCRC32C: out.ChecksumCRC32C})
			}
			_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(s3emu.DefaultBucket), Key: aws.String(key),
				UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkKinds are the checksums S3 keeps that a peer's bytes are checked
// against, where no full-object CRC is kept: a world of each, and the
// check the engine reports.
var checkKinds = []struct {
	name string
	opts s3emu.Options
	wo   worldOptions
	want string // in Verification.Checksums
}{
	{"md5 etag", s3emu.Options{NoChecksums: true}, worldOptions{}, "md5"},
	{"etag of parts", s3emu.Options{NoChecksums: true}, worldOptions{fill: putInParts("")}, "md5-parts"},
	{"checksum of part checksums", s3emu.Options{}, worldOptions{fill: putInParts(types.ChecksumAlgorithmCrc32c)}, "crc32c-parts"},
}

// TestPeerBytesAreCheckedByWhatS3Keeps: for each kind of checksum S3
// keeps besides a full-object CRC, a peer's bytes are taken and checked
// against it under the default --verify auto, by both the node that
// serves them and the one that takes them.
func TestPeerBytesAreCheckedByWhatS3Keeps(t *testing.T) {
	for _, kind := range checkKinds {
		t.Run(kind.name, func(t *testing.T) {
			w := newWorldOf(t, 2, kind.opts, kind.wo)
			nodes := newNodes(t, 2, noFront)
			a, b := nodes[0], nodes[1]
			b.run(t, w, addrs(nodes), fleet.SourceOptions{}, ownShare(w, 1))
			if b.err != nil || b.sum.Failed != 0 {
				t.Fatalf("node 1's own share: %+v, %v", b.sum, b.err)
			}
			a.run(t, w, addrs(nodes), fleet.SourceOptions{}, nil)
			a.wantRan(t, w)
			w.wantLanded(t, a.dir)
			r := a.src.Report()
			if len(r.Bypassed) != 0 || r.FromPeers[b.addr] != w.shareBytes(1) {
				t.Errorf("bypassed %+v, %d bytes from node 1; want none bypassed, its share's %d bytes", r.Bypassed, r.FromPeers[b.addr], w.shareBytes(1))
			}
			for _, o := range w.objs {
				nd := a
				if w.shares.Owner(o.Key) == 1 {
					nd = b // what node 0 took was served verified
				}
				if got, _ := a.rec.Result(o.Key); !slices.Contains(got.Verification.Checksums, kind.want) {
					t.Errorf("node 0: %s verified %q, want %s", o.Key, got.Verification, kind.want)
				}
				if got, _ := nd.rec.Result(o.Key); !slices.Contains(got.Verification.Checksums, kind.want) {
					t.Errorf("node %d: %s verified %q, want %s", nd.k, o.Key, got.Verification, kind.want)
				}
			}
		})
	}
}

// TestPeerFlippingBytesIsCaughtByEachKind: a peer that flips one byte
// of every body is caught by each kind of checksum S3 keeps: the object
// is fetched again from S3, the peer is named and dropped, and every
// final name holds S3's bytes.
func TestPeerFlippingBytesIsCaughtByEachKind(t *testing.T) {
	for _, kind := range checkKinds {
		t.Run(kind.name, func(t *testing.T) {
			w := newWorldOf(t, 2, kind.opts, kind.wo)
			nodes := newNodes(t, 2, func(k int, s *fleet.Server) http.Handler {
				if k == 1 {
					return flipper{s}
				}
				return nil
			})
			a, b := nodes[0], nodes[1]
			b.run(t, w, addrs(nodes), fleet.SourceOptions{}, ownShare(w, 1))
			if b.err != nil || b.sum.Failed != 0 {
				t.Fatalf("node 1's own share: %+v, %v", b.sum, b.err)
			}
			a.run(t, w, addrs(nodes), fleet.SourceOptions{}, nil)
			a.wantRan(t, w)
			w.wantLanded(t, a.dir)
			r := a.src.Report()
			if len(r.Bypassed) != 1 || r.Bypassed[0].Node != 1 || !strings.Contains(r.Bypassed[0].Reason, "checksum") {
				t.Fatalf("bypassed %+v, want node 1, for a checksum", r.Bypassed)
			}
			t.Logf("bypassed: %s", r.Bypassed[0].Reason)
			if a.sum.Retries == 0 || r.FromSource < w.total {
				t.Errorf("%d retries, %d bytes from S3; want a refetch, and the whole dataset from S3", a.sum.Retries, r.FromSource)
			}
		})
	}
}

// encrypting is S3 as it answers for objects kept with SSE-KMS: their
// ETag is no MD5 of their bytes.
func encrypting(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amz-Server-Side-Encryption", "aws:kms")
		h.ServeHTTP(w, r)
	})
}

// TestEncryptedObjectsWithoutChecksum: an object S3 keeps with SSE-KMS
// and no checksum has nothing to check a peer's bytes by: it comes from
// S3 only, though the peer holds it; with TrustPeers it comes from the
// peer, and the report counts it.
func TestEncryptedObjectsWithoutChecksum(t *testing.T) {
	w := newWorldOf(t, 2, s3emu.Options{NoChecksums: true}, worldOptions{front: encrypting})
	nodes := newNodes(t, 2, noFront)
	a, b := nodes[0], nodes[1]
	b.run(t, w, addrs(nodes), fleet.SourceOptions{}, nil) // unverified: marks nothing
	if b.err != nil || b.sum.Failed != 0 {
		t.Fatalf("node 1: %+v, %v", b.sum, b.err)
	}
	w.wantLanded(t, b.dir)
	var held int64
	for _, o := range w.objs { // the peer offers them all anyway
		if err := b.server.Ready(o.Key, b.dir+"/"+o.Name, o.ETag, o.Size); err != nil {
			t.Fatal(err)
		}
		if w.shares.Owner(o.Key) == 1 {
			held++
		}
	}

	a.run(t, w, addrs(nodes), fleet.SourceOptions{}, nil)
	if a.err != nil || a.sum.Failed != 0 {
		t.Fatalf("node 0: %+v, %v", a.sum, a.err)
	}
	w.wantLanded(t, a.dir)
	r := a.src.Report()
	// The checksum lookup's HEAD tells S3 keeps each encrypted: no
	// byte more is asked of S3 to know.
	if len(r.FromPeers) != 0 || len(b.server.Served()) != 0 || r.FromSource != w.total || r.TrustedObjects != 0 {
		t.Errorf("from peers %v (served %v), from S3 %d, trusted %d; want nothing from peers, %d from S3, none trusted",
			r.FromPeers, b.server.Served(), r.FromSource, r.TrustedObjects, w.total)
	}

	trusting := &node{k: 0, dir: t.TempDir(), server: a.server}
	trusting.run(t, w, addrs(nodes), fleet.SourceOptions{TrustPeers: true}, nil)
	if trusting.err != nil || trusting.sum.Failed != 0 {
		t.Fatalf("node 0 trusting its peers: %+v, %v", trusting.sum, trusting.err)
	}
	w.wantLanded(t, trusting.dir)
	r = trusting.src.Report()
	if len(r.Bypassed) != 0 || r.FromPeers[b.addr] != w.shareBytes(1) || r.TrustedObjects != held {
		t.Errorf("bypassed %+v, %d bytes from node 1, trusted %d; want none bypassed, its share's %d bytes, %d objects trusted",
			r.Bypassed, r.FromPeers[b.addr], r.TrustedObjects, w.shareBytes(1), held)
	}
}
