package s3store

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Request holds what every request may need to carry for a real bucket.
type Request struct {
	RequestPayer        string // "requester"
	ExpectedBucketOwner string
	SSECKey             string // raw customer key (32 bytes) for SSE-C
}

// Source reads objects from one bucket. Its zero Key means a prefix
// listing; a Key means that single object.
type Source struct {
	client  *s3.Client
	get     *getter
	Bucket  string
	Prefix  string // list keys under it; names are relative to it
	Key     string // a single object, when set
	Name    string // the single object's destination name
	Version string // the single object's version, when set
	Req     Request
	// PageSize is ListObjectsV2's max-keys (0: the server's default).
	PageSize int32
	// Verify asks whole-object GETs (and Resolve) for the object's
	// full-object checksums, for the engine to verify.
	Verify bool

	resolved *transfer.Object // the single object, as Resolve found it
}

// NewSource returns a source over client.
func NewSource(client *s3.Client, bucket string) *Source {
	return &Source{client: client, get: newGetter(client, bucket), Bucket: bucket}
}

// URL names what s reads, for messages.
func (s *Source) URL() string {
	if s.Key != "" {
		return "s3://" + s.Bucket + "/" + s.Key
	}
	return "s3://" + s.Bucket + "/" + s.Prefix
}

// List implements transfer.Source: it streams ListObjectsV2 pages, so
// the first object is emitted before the second page is requested.
func (s *Source) List(ctx context.Context, emit func(transfer.Object) error) error {
	if s.resolved != nil {
		o := *s.resolved
		s.resolved = nil
		return emit(o)
	}
	if s.Key != "" {
		return emit(transfer.Object{Key: s.Key, Name: s.Name, Size: -1, VersionID: s.Version})
	}
	l := &listing{get: s.get, req: s.Req, prefix: s.Prefix, pageSize: s.PageSize}
	token := ""
	for {
		page, err := l.next(ctx, token)
		if err != nil {
			return fmt.Errorf("list %s: %w", s.URL(), err)
		}
		for _, c := range page.contents {
			name := strings.TrimPrefix(c.key, s.Prefix)
			if name == "" {
				continue // the prefix's own directory marker
			}
			o := transfer.Object{
				Key:               c.key,
				Name:              name,
				Size:              c.size,
				ETag:              c.etag,
				StorageClass:      c.storageClass,
				ModTime:           c.modTime,
				ChecksumAlgorithm: c.checksumAlgorithm,
			}
			if err := emit(o); err != nil {
				return err
			}
		}
		if !page.truncated || page.next == "" {
			return nil
		}
		token = page.next
	}
}

// Open implements transfer.Source with one GetObject: ranged when n >= 0,
// else for the whole object. It sends If-Match with the pinned ETag.
func (s *Source) Open(ctx context.Context, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	resp, err := s.get.get(ctx, obj, off, n, s.Req, n < 0 && s.Verify)
	if err != nil {
		var se *transfer.StatusError
		if errors.As(err, &se) && se.Status == 416 && off == 0 {
			// S3 answers a ranged GET of an empty object with 416.
			return &transfer.Body{ReadCloser: io.NopCloser(strings.NewReader("")), Size: 0}, nil
		}
		return nil, fmt.Errorf("get s3://%s/%s: %w", s.Bucket, obj.Key, err)
	}
	h := resp.Header
	b := &transfer.Body{ReadCloser: resp.Body, ETag: header(h, "Etag"), Size: -1,
		Checksums: headerChecksums(h),
		Encrypted: strings.HasPrefix(header(h, "X-Amz-Server-Side-Encryption"), "aws:kms") ||
			header(h, "X-Amz-Server-Side-Encryption-Customer-Algorithm") != ""}
	if lm := header(h, "Last-Modified"); lm != "" {
		if t, err := http.ParseTime(lm); err == nil {
			b.ModTime = t
		}
	}
	length := resp.ContentLength
	if cr := header(h, "Content-Range"); cr != "" && resp.StatusCode == http.StatusPartialContent {
		start, end, total, perr := parseContentRange(cr)
		if perr != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("get s3://%s/%s: %w", s.Bucket, obj.Key, &transfer.BadResponseError{Msg: perr.Error()})
		}
		b.Off, b.Len, b.Size = start, end-start+1, total
		if length != b.Len {
			resp.Body.Close()
			return nil, fmt.Errorf("get s3://%s/%s: %w", s.Bucket, obj.Key,
				&transfer.BadResponseError{Msg: fmt.Sprintf("content-length %d disagrees with content-range %q", length, cr)})
		}
	} else {
		if length < 0 {
			resp.Body.Close()
			return nil, fmt.Errorf("get s3://%s/%s: %w", s.Bucket, obj.Key, &transfer.BadResponseError{Msg: "no content-length"})
		}
		b.Off, b.Len, b.Size = 0, length, length
	}
	return b, nil
}

// header reads a response header by its canonical name without
// canonicalising it again (net/http stored it canonical).
func header(h http.Header, canonical string) string {
	if v := h[canonical]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// checksums gathers the full-object checksums a response carried.
func checksums(crc64nvme, crc32c, crc32 *string) map[string]string {
	var m map[string]string
	add := func(alg string, v *string) {
		if v != nil && *v != "" {
			if m == nil {
				m = map[string]string{}
			}
			m[alg] = *v
		}
	}
	add("CRC64NVME", crc64nvme)
	add("CRC32C", crc32c)
	add("CRC32", crc32)
	return m
}

// Checksums implements transfer.Checksummer: one HeadObject with checksum
// mode, for an object fetched in ranges (ranged GETs carry no checksum).
func (s *Source) Checksums(ctx context.Context, obj *transfer.Object) (map[string]string, error) {
	var resp *http.Response
	err := headBackoff.Retry(ctx, func() (err error) {
		resp, err = s.get.head(ctx, obj, s.Req, true)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("head s3://%s/%s: %w", s.Bucket, obj.Key, err)
	}
	return headerChecksums(resp.Header), nil
}

// A checksum HEAD is tried three times: losing it leaves an object
// unverified, and it is one small request per object.
var headBackoff = transfer.Backoff{Base: 100 * time.Millisecond, Cap: time.Second, MaxAttempts: 3}

// noRetry turns off the SDK's retries for one call: the engine retries
// and resumes ranges itself, with a budget per range.
func noRetry(o *s3.Options) { o.Retryer = aws.NopRetryer{} }

// parseContentRange parses "bytes START-END/TOTAL".
func parseContentRange(s string) (start, end, total int64, err error) {
	bad := fmt.Errorf("malformed content-range %q", s)
	rest, ok := strings.CutPrefix(s, "bytes ")
	if !ok {
		return 0, 0, 0, bad
	}
	rng, tot, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, 0, 0, bad
	}
	a, b, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, 0, bad
	}
	if start, err = strconv.ParseInt(a, 10, 64); err != nil {
		return 0, 0, 0, bad
	}
	if end, err = strconv.ParseInt(b, 10, 64); err != nil || end < start {
		return 0, 0, 0, bad
	}
	if total, err = strconv.ParseInt(tot, 10, 64); err != nil || total <= end {
		return 0, 0, 0, bad
	}
	return start, end, total, nil
}

// ssec returns the SSE-C algorithm, key and key MD5 headers' values.
func (r Request) ssec() (*string, *string, *string) {
	sum := md5.Sum([]byte(r.SSECKey))
	return aws.String("AES256"), aws.String(base64.StdEncoding.EncodeToString([]byte(r.SSECKey))),
		aws.String(base64.StdEncoding.EncodeToString(sum[:]))
}

// Resolve decides what s3://bucket/key names: the object key if it
// exists (then s names that object and reports true), else the prefix
// key/. It probes with the first range of the object (no HeadObject), and
// hands that body to the engine so it is not fetched twice. name is the
// single object's destination name.
func (s *Source) Resolve(ctx context.Context, key, name string, firstPart int64) (bool, error) {
	obj := &transfer.Object{Key: key, Name: name, Size: -1, VersionID: s.Version}
	type sums struct {
		m   map[string]string
		err error
	}
	var head chan sums
	if s.Verify {
		// The object's checksums, asked alongside the first range.
		head = make(chan sums, 1)
		go func() {
			m, err := s.Checksums(ctx, &transfer.Object{Key: key, VersionID: s.Version})
			head <- sums{m, err}
		}()
	}
	b, err := s.Open(ctx, obj, 0, firstPart)
	if errors.Is(err, transfer.ErrNotFound) && s.Version == "" {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if head != nil {
		if h := <-head; h.err == nil {
			obj.Checksums = h.m
			if len(h.m) > 0 {
				for _, alg := range []string{"CRC64NVME", "CRC32C", "CRC32"} {
					if _, ok := h.m[alg]; ok {
						obj.ChecksumAlgorithm = alg
						break
					}
				}
			}
		}
	}
	obj.Size, obj.ETag, obj.ModTime, obj.First = b.Size, b.ETag, b.ModTime, b
	s.Key, s.Name, s.resolved = key, name, obj
	return true, nil
}

// Stat looks key up with one HeadObject (retried as a checksum HEAD is):
// its size, ETag, modification time and, when s verifies, its
// full-object checksums. It serves manifests, whose entries may lack a
// size or have gone stale.
func (s *Source) Stat(ctx context.Context, key string) (transfer.Object, error) {
	o := transfer.Object{Key: key}
	var resp *http.Response
	err := headBackoff.Retry(ctx, func() (err error) {
		resp, err = s.get.head(ctx, &o, s.Req, s.Verify)
		return err
	})
	if err != nil {
		return o, fmt.Errorf("head s3://%s/%s: %w", s.Bucket, key, err)
	}
	h := resp.Header
	o.Size, o.ETag = resp.ContentLength, header(h, "Etag")
	if lm := header(h, "Last-Modified"); lm != "" {
		if t, err := http.ParseTime(lm); err == nil {
			o.ModTime = t
		}
	}
	if o.Checksums = headerChecksums(h); len(o.Checksums) > 0 {
		for _, alg := range []string{"CRC64NVME", "CRC32C", "CRC32"} {
			if _, ok := o.Checksums[alg]; ok {
				o.ChecksumAlgorithm = alg
				break
			}
		}
	}
	return o, nil
}
