package transfer_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// vouchSource is a source that lent some bytes from elsewhere
// (transfer.Vouching) and says how its objects were cut into parts
// (transfer.PartLayout).
type vouchSource struct {
	*transfertest.Source
	parts     map[string][]int64 // by key
	needs     bool               // NeedsVerified's answer
	refetches int                // how many times Unverified asks for a refetch
	asked     atomic.Int64       // Unverified calls
}

func (v *vouchSource) NeedsVerified(*transfer.Object) bool { return v.needs }

func (v *vouchSource) Unverified(*transfer.Object) bool {
	return int(v.asked.Add(1)) <= v.refetches
}

func (v *vouchSource) PartSizes(_ context.Context, o *transfer.Object, n int, _ bool) ([]int64, error) {
	sizes, ok := v.parts[o.Key]
	if !ok || len(sizes) != n {
		return nil, transfer.ErrNoPartLayout
	}
	return sizes, nil
}

// compositeCRC32C is S3's checksum of part checksums, computed here
// with hash/crc32 rather than pkg/checksum.
func compositeCRC32C(data []byte, sizes []int64) string {
	table := crc32.MakeTable(crc32.Castagnoli)
	var sums []byte
	for _, s := range sizes {
		sums = binary.BigEndian.AppendUint32(sums, crc32.Checksum(data[:s], table))
		data = data[s:]
	}
	outer := binary.BigEndian.AppendUint32(nil, crc32.Checksum(sums, table))
	return base64.StdEncoding.EncodeToString(outer) + "-" + strconv.Itoa(len(sizes))
}

// TestCompositeChecksumIsCheckedUnderFull: a checksum of part checksums
// is checked by the part layout under --verify full (a byte changed in
// the data fails it), and left unverified, composite, under auto.
func TestCompositeChecksumIsCheckedUnderFull(t *testing.T) {
	data := transfertest.Data("k", 3*part+100)
	sizes := []int64{part + 7, part + 7, int64(len(data)) - 2*(part+7)}
	for _, tt := range []struct {
		name   string
		verify transfer.Verify
		wrong  bool
		want   string // the check that matched, or the reason none did
	}{
		{"full", transfer.VerifyFull, false, "crc32c-parts"},
		{"full, wrong bytes", transfer.VerifyFull, true, ""},
		{"auto", transfer.VerifyAuto, false, transfer.UnverifiedComposite},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := &vouchSource{Source: transfertest.NewSource(), parts: map[string][]int64{"k": sizes}}
			o := src.Add("k", data)
			o.ETag = `"v1"` // neither an MD5 nor an ETag of parts
			o.ChecksumAlgorithm, o.Checksums = "CRC32C", map[string]string{"CRC32C": compositeCRC32C(data, sizes)}
			held := data
			if tt.wrong {
				held = slices.Clone(data)
				held[part+part/2] ^= 1
			}
			src.Put(o, held)
			_, rec := run(t, src, transfertest.NewSink(), transfer.Options{Verify: tt.verify})
			r := result(t, rec, "k")
			switch {
			case tt.wrong:
				if !errors.Is(r.Err, transfer.ErrChecksum) || !strings.Contains(r.Err.Error(), "CRC32C checksum of parts") {
					t.Fatalf("error %v, want ErrChecksum of the checksum of parts", r.Err)
				}
			case r.Err != nil:
				t.Fatalf("error %v", r.Err)
			case !slices.Contains(r.Verification.Checksums, tt.want) && r.Verification.Unverified != tt.want:
				t.Fatalf("verification %q, want %s", r.Verification, tt.want)
			}
		})
	}
}

// TestVouchingSourceHasObjectsCheckedFully: under --verify auto, an
// object whose source needs it verified is checked as --verify full
// checks it (its MD5 ETag, read back); one that nothing can check is
// fetched again while the source asks, then taken as it is.
func TestVouchingSourceHasObjectsCheckedFully(t *testing.T) {
	t.Run("md5 etag", func(t *testing.T) {
		src := &vouchSource{Source: transfertest.NewSource(), needs: true}
		o := src.Add("k", transfertest.Data("k", 3*part+1))
		o.Checksums, o.ChecksumAlgorithm = nil, ""
		src.Put(o, src.Data("k"))
		_, rec := run(t, src, transfertest.NewSink(), transfer.Options{})
		if v := result(t, rec, "k").Verification; !slices.Equal(v.Checksums, []string{"md5"}) || v.Unverified != "" {
			t.Fatalf("verification %+v, want md5 and nothing missed", v)
		}
		if src.asked.Load() != 0 {
			t.Errorf("Unverified asked %d times of a verified object", src.asked.Load())
		}
	})
	t.Run("nothing to check", func(t *testing.T) {
		src := &vouchSource{Source: transfertest.NewSource(), needs: true, refetches: 1}
		o := src.Add("k", transfertest.Data("k", 3*part+1))
		o.Checksums, o.ChecksumAlgorithm, o.ETag = nil, "", `"opaque"`
		src.Put(o, src.Data("k"))
		sink := transfertest.NewSink()
		sum, rec := run(t, src, sink, transfer.Options{})
		r := result(t, rec, "k")
		if r.Err != nil || r.Verification.Verified() || sum.Retries != 1 || src.asked.Load() != 2 {
			t.Fatalf("error %v, verification %q, %d retries, asked %d; want taken unverified after one refetch, asked twice", r.Err, r.Verification, sum.Retries, src.asked.Load())
		}
		wantCommitted(t, sink, src.Source, "k")
	})
	t.Run("not needed", func(t *testing.T) {
		src := &vouchSource{Source: transfertest.NewSource(), refetches: 1}
		o := src.Add("k", transfertest.Data("k", 3*part+1))
		o.Checksums, o.ChecksumAlgorithm = nil, ""
		src.Put(o, src.Data("k"))
		_, rec := run(t, src, transfertest.NewSink(), transfer.Options{})
		if v := result(t, rec, "k").Verification; v.Unverified != transfer.UnverifiedMD5Only || src.asked.Load() != 0 {
			t.Fatalf("verification %+v, asked %d; want md5-only as --verify auto leaves it, never asked", v, src.asked.Load())
		}
	})
}
