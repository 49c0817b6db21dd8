package s3emu

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/minio/crc64nvme"
)

// discardBackend accepts uploads and keeps only each object's size, ETag
// and checksum, so upload benchmarks measure the client, not the server.
// Its ETags are not MD5s (computing one would cost the server more than the
// client): a single-part ETag is the hex of the body's CRC64NVME and size;
// a multipart one is the MD5 of the parts' ETags followed by "-N", as S3's.
type discardBackend struct {
	mu      sync.Mutex
	buckets map[string]map[string]*discardObject
	uploads map[gofakes3.UploadID]*discardUpload
	nextID  int64
	side    *backendStore
}

type discardObject struct {
	size    int64
	hash    []byte
	meta    map[string]string
	created time.Time
}

type discardUpload struct {
	bucket, key string
	meta        map[string]string
	parts       map[int]discardPart
}

type discardPart struct {
	size int64
	etag string
}

func newDiscardBackend(side *backendStore) *discardBackend {
	return &discardBackend{
		buckets: map[string]map[string]*discardObject{},
		uploads: map[gofakes3.UploadID]*discardUpload{},
		side:    side,
	}
}

// discardHash is the 16-byte stand-in for an MD5 of a body with CRC64NVME
// crc and size bytes.
func discardHash(crc uint64, size int64) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, crc)
	binary.BigEndian.PutUint64(b[8:], uint64(size))
	return b
}

// store records an object whose body has already been read.
func (d *discardBackend) store(bucket, key string, size int64, hash []byte, meta map[string]string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	objs, ok := d.buckets[bucket]
	if !ok {
		return gofakes3.BucketNotFound(bucket)
	}
	objs[key] = &discardObject{size: size, hash: hash, meta: meta, created: time.Now()}
	return nil
}

func (d *discardBackend) ListBuckets() ([]gofakes3.BucketInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []gofakes3.BucketInfo
	for name := range d.buckets {
		out = append(out, gofakes3.BucketInfo{Name: name, CreationDate: gofakes3.NewContentTime(syntheticTime)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (d *discardBackend) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	objs, ok := d.buckets[name]
	if !ok {
		return nil, gofakes3.BucketNotFound(name)
	}
	out := gofakes3.NewObjectList()
	for k, o := range objs {
		if prefix != nil && prefix.HasPrefix && !strings.HasPrefix(k, prefix.Prefix) {
			continue
		}
		out.Add(&gofakes3.Content{Key: k, Size: o.size, ETag: gofakes3.FormatETag(o.hash), LastModified: gofakes3.NewContentTime(o.created)})
	}
	return out, nil
}

func (d *discardBackend) CreateBucket(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.buckets[name]; ok {
		return gofakes3.ResourceError(gofakes3.ErrBucketAlreadyExists, name)
	}
	d.buckets[name] = map[string]*discardObject{}
	return nil
}

func (d *discardBackend) BucketExists(name string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.buckets[name]
	return ok, nil
}

func (d *discardBackend) DeleteBucket(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	objs, ok := d.buckets[name]
	if !ok {
		return gofakes3.BucketNotFound(name)
	}
	if len(objs) > 0 {
		return gofakes3.ResourceError(gofakes3.ErrBucketNotEmpty, name)
	}
	delete(d.buckets, name)
	return nil
}

func (d *discardBackend) ForceDeleteBucket(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.buckets, name)
	return nil
}

func (d *discardBackend) object(bucket, key string) (*discardObject, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	objs, ok := d.buckets[bucket]
	if !ok {
		return nil, gofakes3.BucketNotFound(bucket)
	}
	o, ok := objs[key]
	if !ok {
		return nil, gofakes3.KeyNotFound(key)
	}
	return o, nil
}

func (d *discardBackend) HeadObject(bucket, key string) (*gofakes3.Object, error) {
	o, err := d.object(bucket, key)
	if err != nil {
		return nil, err
	}
	meta := map[string]string{"Last-Modified": o.created.UTC().Format(http.TimeFormat)}
	for k, v := range o.meta {
		meta[k] = v
	}
	return &gofakes3.Object{Name: key, Size: o.size, Hash: o.hash, Metadata: meta, Contents: io.NopCloser(strings.NewReader(""))}, nil
}

func (d *discardBackend) GetObject(bucket, key string, _ *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	if _, err := d.object(bucket, key); err != nil {
		return nil, err
	}
	return nil, gofakes3.ErrorMessage(gofakes3.ErrNotImplemented, "the discard backend keeps no object content")
}

func (d *discardBackend) DeleteObject(bucket, key string) (gofakes3.ObjectDeleteResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	objs, ok := d.buckets[bucket]
	if !ok {
		return gofakes3.ObjectDeleteResult{}, gofakes3.BucketNotFound(bucket)
	}
	delete(objs, key)
	return gofakes3.ObjectDeleteResult{}, nil
}

func (d *discardBackend) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, _ *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	h := crc64nvme.New()
	n, err := io.Copy(h, input)
	if err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	return gofakes3.PutObjectResult{}, d.store(bucket, key, n, discardHash(h.Sum64(), n), meta)
}

func (d *discardBackend) DeleteMulti(bucket string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	var res gofakes3.MultiDeleteResult
	for _, k := range keys {
		if _, err := d.DeleteObject(bucket, k); err != nil {
			return res, err
		}
		res.Deleted = append(res.Deleted, gofakes3.ObjectID{Key: k})
	}
	return res, nil
}

func (d *discardBackend) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	o, err := d.object(srcBucket, srcKey)
	if err != nil {
		return gofakes3.CopyObjectResult{}, err
	}
	if err := d.store(dstBucket, dstKey, o.size, o.hash, meta); err != nil {
		return gofakes3.CopyObjectResult{}, err
	}
	return gofakes3.CopyObjectResult{ETag: gofakes3.FormatETag(o.hash), LastModified: gofakes3.NewContentTime(time.Now())}, nil
}

func (d *discardBackend) CreateMultipartUpload(bucket, key string, meta map[string]string) (gofakes3.UploadID, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.buckets[bucket]; !ok {
		return "", gofakes3.BucketNotFound(bucket)
	}
	d.nextID++
	id := gofakes3.UploadID(strconv.FormatInt(d.nextID, 10))
	d.uploads[id] = &discardUpload{bucket: bucket, key: key, meta: meta, parts: map[int]discardPart{}}
	return id, nil
}

func (d *discardBackend) upload(bucket, key string, id gofakes3.UploadID) (*discardUpload, error) {
	u, ok := d.uploads[id]
	if !ok || u.bucket != bucket || u.key != key {
		return nil, gofakes3.ErrNoSuchUpload
	}
	return u, nil
}

func (d *discardBackend) UploadPart(bucket, key string, id gofakes3.UploadID, partNumber int, contentLength int64, input io.Reader) (string, error) {
	h := crc64nvme.New()
	n, err := io.Copy(h, input)
	if err != nil {
		return "", err
	}
	if n != contentLength {
		return "", gofakes3.ErrIncompleteBody
	}
	etag := gofakes3.FormatETag(discardHash(h.Sum64(), n))
	d.mu.Lock()
	defer d.mu.Unlock()
	u, err := d.upload(bucket, key, id)
	if err != nil {
		return "", err
	}
	u.parts[partNumber] = discardPart{size: n, etag: etag}
	return etag, nil
}

func (d *discardBackend) ListMultipartUploads(bucket string, _ *gofakes3.UploadListMarker, prefix gofakes3.Prefix, limit int64) (*gofakes3.ListMultipartUploadsResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	res := &gofakes3.ListMultipartUploadsResult{Bucket: bucket, MaxUploads: limit}
	for id, u := range d.uploads {
		if u.bucket == bucket && strings.HasPrefix(u.key, prefix.Prefix) {
			res.Uploads = append(res.Uploads, gofakes3.ListMultipartUploadItem{Key: u.key, UploadID: id})
		}
	}
	return res, nil
}

func (d *discardBackend) ListParts(bucket, key string, id gofakes3.UploadID, marker int, limit int64) (*gofakes3.ListMultipartUploadPartsResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	u, err := d.upload(bucket, key, id)
	if err != nil {
		return nil, err
	}
	res := &gofakes3.ListMultipartUploadPartsResult{Bucket: bucket, Key: key, UploadID: id, MaxParts: limit}
	nums := make([]int, 0, len(u.parts))
	for n := range u.parts {
		if n > marker {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	for _, n := range nums {
		res.Parts = append(res.Parts, gofakes3.ListMultipartUploadPartItem{PartNumber: n, ETag: u.parts[n].etag, Size: u.parts[n].size})
	}
	return res, nil
}

func (d *discardBackend) AbortMultipartUpload(bucket, key string, id gofakes3.UploadID) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.upload(bucket, key, id); err != nil {
		return err
	}
	delete(d.uploads, id)
	return nil
}

func (d *discardBackend) CompleteMultipartUpload(bucket, key string, id gofakes3.UploadID, in *gofakes3.CompleteMultipartUploadRequest) (gofakes3.VersionID, string, error) {
	d.mu.Lock()
	u, err := d.upload(bucket, key, id)
	if err != nil {
		d.mu.Unlock()
		return "", "", err
	}
	h := md5.New()
	var size int64
	prev := 0
	for _, p := range in.Parts {
		part, ok := u.parts[p.PartNumber]
		if !ok || strings.Trim(p.ETag, `"`) != strings.Trim(part.etag, `"`) {
			d.mu.Unlock()
			return "", "", gofakes3.ErrorMessagef(gofakes3.ErrInvalidPart, "part %d was not uploaded with ETag %s", p.PartNumber, p.ETag)
		}
		if p.PartNumber <= prev {
			d.mu.Unlock()
			return "", "", gofakes3.ErrInvalidPartOrder
		}
		prev = p.PartNumber
		b, _ := hex.DecodeString(strings.Trim(part.etag, `"`))
		h.Write(b)
		size += part.size
	}
	delete(d.uploads, id)
	d.mu.Unlock()
	sum := h.Sum(nil)
	etag := fmt.Sprintf(`"%s-%d"`, hex.EncodeToString(sum), len(in.Parts))
	if err := d.store(bucket, key, size, sum, u.meta); err != nil {
		return "", "", err
	}
	// The multipart ETag is not a hex string gofakes3 can carry: remember it.
	d.side.remember(bucket, key, &sideEntry{hashHex: hex.EncodeToString(sum), etag: etag})
	return "", etag, nil
}
