package s3emu

import (
	"encoding/hex"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/johannesboyne/gofakes3"
)

// errReadOnly answers writes to the synthetic bucket.
var errReadOnly = gofakes3.ErrorMessage(gofakes3.ErrNotImplemented, "the synthetic bucket is read-only")

// syntheticBackend is the synthetic dataset bucket as a gofakes3 backend,
// so gofakes3 can copy from it. Reads the emulator serves itself (GET,
// HEAD, listing) never reach it.
type syntheticBackend struct {
	bucket string
	st     *syntheticStore
}

func (b *syntheticBackend) ListBuckets() ([]gofakes3.BucketInfo, error) {
	return []gofakes3.BucketInfo{{Name: b.bucket, CreationDate: gofakes3.NewContentTime(syntheticTime)}}, nil
}

func (b *syntheticBackend) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	return nil, gofakes3.ErrNotImplemented
}

func (b *syntheticBackend) CreateBucket(name string) error {
	return gofakes3.ResourceError(gofakes3.ErrBucketAlreadyExists, name)
}

func (b *syntheticBackend) BucketExists(name string) (bool, error) { return name == b.bucket, nil }
func (b *syntheticBackend) DeleteBucket(name string) error         { return errReadOnly }
func (b *syntheticBackend) ForceDeleteBucket(name string) error    { return errReadOnly }

func (b *syntheticBackend) object(key string, rng *gofakes3.ObjectRangeRequest, body bool) (*gofakes3.Object, error) {
	m, err := b.st.stat(b.bucket, key)
	if err != nil {
		return nil, err
	}
	obj := &gofakes3.Object{
		Name:     key,
		Size:     m.Size,
		Metadata: map[string]string{"Last-Modified": m.LastModified.UTC().Format(http.TimeFormat)},
		Contents: io.NopCloser(strings.NewReader("")),
	}
	obj.Hash, _ = hex.DecodeString(strings.SplitN(strings.Trim(m.ETag, `"`), "-", 2)[0])
	if !body {
		return obj, nil
	}
	r, err := rng.Range(m.Size)
	if err != nil {
		return nil, err
	}
	off, n := int64(0), m.Size
	if r != nil {
		off, n = r.Start, r.Length
	}
	obj.Range = r
	obj.Contents, err = b.st.open(b.bucket, key, off, n)
	return obj, err
}

func (b *syntheticBackend) GetObject(bucket, key string, rng *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	return b.object(key, rng, true)
}

func (b *syntheticBackend) HeadObject(bucket, key string) (*gofakes3.Object, error) {
	return b.object(key, nil, false)
}

func (b *syntheticBackend) DeleteObject(bucket, key string) (gofakes3.ObjectDeleteResult, error) {
	return gofakes3.ObjectDeleteResult{}, errReadOnly
}

func (b *syntheticBackend) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, conditions *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	return gofakes3.PutObjectResult{}, errReadOnly
}

func (b *syntheticBackend) DeleteMulti(bucket string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	return gofakes3.MultiDeleteResult{}, errReadOnly
}

func (b *syntheticBackend) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	return gofakes3.CopyObjectResult{}, errReadOnly
}

// router is the gofakes3 backend of the synthetic mode: the dataset bucket
// is synthetic, every other bucket lives in memory.
type router struct {
	synth *syntheticBackend
	mem   gofakes3.Backend
}

func (r *router) pick(bucket string) gofakes3.Backend {
	if bucket == r.synth.bucket {
		return r.synth
	}
	return r.mem
}

func (r *router) ListBuckets() ([]gofakes3.BucketInfo, error) {
	bs, err := r.mem.ListBuckets()
	if err != nil {
		return nil, err
	}
	s, _ := r.synth.ListBuckets()
	bs = append(bs, s...)
	sort.Slice(bs, func(i, j int) bool { return bs[i].Name < bs[j].Name })
	return bs, nil
}

func (r *router) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	return r.pick(name).ListBucket(name, prefix, page)
}

func (r *router) CreateBucket(name string) error { return r.pick(name).CreateBucket(name) }

func (r *router) BucketExists(name string) (bool, error) { return r.pick(name).BucketExists(name) }

func (r *router) DeleteBucket(name string) error { return r.pick(name).DeleteBucket(name) }

func (r *router) ForceDeleteBucket(name string) error { return r.pick(name).ForceDeleteBucket(name) }

func (r *router) GetObject(bucket, key string, rng *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	return r.pick(bucket).GetObject(bucket, key, rng)
}

func (r *router) HeadObject(bucket, key string) (*gofakes3.Object, error) {
	return r.pick(bucket).HeadObject(bucket, key)
}

func (r *router) DeleteObject(bucket, key string) (gofakes3.ObjectDeleteResult, error) {
	return r.pick(bucket).DeleteObject(bucket, key)
}

func (r *router) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, c *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	return r.pick(bucket).PutObject(bucket, key, meta, input, size, c)
}

func (r *router) DeleteMulti(bucket string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	return r.pick(bucket).DeleteMulti(bucket, keys...)
}

func (r *router) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	if r.pick(srcBucket) == r.mem && r.pick(dstBucket) == r.mem {
		return r.mem.CopyObject(srcBucket, srcKey, dstBucket, dstKey, meta)
	}
	return gofakes3.CopyObject(r, srcBucket, srcKey, dstBucket, dstKey, meta)
}
