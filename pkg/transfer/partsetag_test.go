package transfer

import (
	"context"
	"crypto/md5"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/s3pd/s3pd/pkg/checksum"
)

// layoutSource is a memSource whose one object was uploaded in parts of
// sizes: its ETag is their ETag of parts, and PartSizes answers as S3's
// HEAD with partNumber does (inferred from the first part unless
// exact).
type layoutSource struct {
	*etagSource
	sizes []int64
	exact atomic.Int32
}

// etagSource is a memSource whose answers carry its objects' ETags.
type etagSource struct{ *memSource }

func (s etagSource) Open(ctx context.Context, o *Object, off, n int64) (*Body, error) {
	b, err := s.memSource.Open(ctx, o, off, n)
	if err == nil {
		b.ETag = o.ETag
	}
	return b, err
}

func (s *layoutSource) PartSizes(_ context.Context, o *Object, parts int, exact bool) ([]int64, error) {
	if parts != len(s.sizes) {
		return nil, ErrNoPartLayout
	}
	if exact {
		s.exact.Add(1)
		return s.sizes, nil
	}
	out := make([]int64, parts)
	for i := range out {
		out[i] = s.sizes[0]
	}
	out[parts-1] = s.sizes[parts-1]
	return out, nil
}

// etagOfParts is the ETag of parts of data cut in sizes.
func etagOfParts(data []byte, sizes []int64) string {
	var sums [][16]byte
	off := int64(0)
	for _, n := range sizes {
		sums = append(sums, md5.Sum(data[off:off+n]))
		off += n
	}
	return `"` + checksum.MultipartETag(sums) + `"`
}

// readSink is a memSink whose files read back (io.ReaderAt), as local
// files do.
type readSink struct{ *memSink }

type readFile struct{ *memFile }

func (s readSink) Create(ctx context.Context, o Object) (File, error) {
	f, err := s.memSink.Create(ctx, o)
	return readFile{f.(*memFile)}, err
}

func (f readFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copy(p, f.b[off:]), nil
}

// results records the objects' outcomes.
type results struct {
	NopObserver
	mu  sync.Mutex
	got []Result
}

func (r *results) ObjectDone(res Result) {
	r.mu.Lock()
	r.got = append(r.got, res)
	r.mu.Unlock()
}

// TestVerifyFullChecksETagOfParts: under --verify full an ETag of parts
// is checked against the bytes by the object's part layout: inferred
// from its first and last parts, asked part by part when that does not
// match, a mismatch when the bytes differ, unverified in words when the
// source cannot say; --verify auto leaves it.
func TestVerifyFullChecksETagOfParts(t *testing.T) {
	const size = 2500
	tests := []struct {
		name     string
		sizes    []int64 // the upload's parts
		corrupt  bool    // the ETag is of other bytes
		noLayout bool    // the source cannot say its parts
		verify   Verify
		want     string // "md5-parts", "mismatch" or an unverified detail
		exact    int32  // part-by-part lookups wanted
	}{
		{"one part size", []int64{1000, 1000, 500}, false, false, VerifyFull, "md5-parts", 0},
		{"inner parts differ", []int64{1000, 700, 800}, false, false, VerifyFull, "md5-parts", 1},
		{"bytes differ", []int64{1000, 1000, 500}, true, false, VerifyFull, "mismatch", 1},
		{"no layout", []int64{1000, 1000, 500}, false, true, VerifyFull, "does not say how the object was cut", 0},
		{"auto", []int64{1000, 1000, 500}, false, false, VerifyAuto, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := newMemSource(map[string]int64{"k": size})
			data := mem.data["k"]
			if tt.corrupt {
				data = append([]byte{}, data...)
				data[1500] ^= 1
			}
			mem.objs[0].ETag = etagOfParts(data, tt.sizes)
			var src Source = &layoutSource{etagSource: &etagSource{mem}, sizes: tt.sizes}
			if tt.noLayout {
				src = etagSource{mem}
			}
			obs := &results{}
			sink := readSink{newMemSink()}
			e, err := New([]Lane{{Name: "a", Source: src}}, sink, Options{PartSize: 1000, Verify: tt.verify, Observer: obs,
				Backoff: Backoff{Base: 1, Cap: 1, MaxAttempts: 1}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if len(obs.got) != 1 {
				t.Fatalf("%d results, want 1", len(obs.got))
			}
			res := obs.got[0]
			v := res.Verification
			switch {
			case tt.want == "mismatch":
				if !errors.Is(res.Err, ErrChecksum) {
					t.Errorf("error %v, want a checksum mismatch", res.Err)
				}
			case tt.want == "md5-parts":
				if res.Err != nil || strings.Join(v.Checksums, ",") != "md5-parts" {
					t.Errorf("verification %+v (error %v), want md5-parts", v, res.Err)
				}
			case tt.want == "":
				if res.Err != nil || len(v.Checksums) != 0 {
					t.Errorf("verification %+v (error %v), want no check", v, res.Err)
				}
			default:
				if res.Err != nil || v.Unverified != UnverifiedNoPartLayout || !strings.Contains(v.Detail, tt.want) {
					t.Errorf("verification %+v (error %v), want no-part-layout: %q", v, res.Err, tt.want)
				}
			}
			// A mismatch is fetched again, and looked up again, by the
			// engine's rule for checksum mismatches: at least once.
			if ls, ok := src.(*layoutSource); ok && ls.exact.Load() != tt.exact && !(tt.want == "mismatch" && ls.exact.Load() >= tt.exact) {
				t.Errorf("%d part-by-part lookups, want %d", ls.exact.Load(), tt.exact)
			}
		})
	}
}
