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
	// FanOut, above 1, lists up to that many sub-prefixes of Prefix at
	// once (see fanout.go); 0 or 1 lists in one stream.
	FanOut int
	// fanBudget overrides how many objects fan-out fetches ahead (tests).
	fanBudget int
	// Verify asks whole-object GETs (and Resolve) for the object's
	// full-object checksums, for the engine to verify.
	Verify bool
	// StallTimeout bounds the wait for response headers and the silences
	// within a listing page (0: no bound but the transport's).
	StallTimeout time.Duration
	// OnRetry, when set, is called before a listing page is asked again,
	// with the attempt that failed (1-based) and why.
	OnRetry func(attempt int, err error)

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
//
// A listing is checked like any response, because --delete acts on what
// it leaves out: a page that says it is truncated but gives no token to
// continue from, and a token seen before (a listing that would loop), end
// the listing with an error rather than as complete. A key listed twice
// in a row is emitted once; an entry with a field that cannot be read
// fails that object only.
func (s *Source) List(ctx context.Context, emit func(transfer.Object) error) error {
	if s.resolved != nil {
		o := *s.resolved
		s.resolved = nil
		return emit(o)
	}
	if s.Key != "" {
		return emit(transfer.Object{Key: s.Key, Name: s.Name, Size: -1, VersionID: s.Version})
	}
	if s.FanOut > 1 {
		return s.fanOut(ctx, emit)
	}
	l := &listing{get: s.get, req: s.Req, prefix: s.Prefix, pageSize: s.PageSize, stall: s.StallTimeout, onRetry: s.OnRetry}
	return l.pages(ctx, s.URL(), func(p *listPage) error {
		for _, c := range p.contents {
			if o, ok := s.object(c); ok {
				if err := emit(o); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// object is what a listed entry is to the engine; false for the
// prefix's own directory marker. An entry whose fields could not be read
// carries its error, for the engine to fail that object alone.
func (s *Source) object(c listEntry) (transfer.Object, bool) {
	name := strings.TrimPrefix(c.key, s.Prefix)
	if name == "" {
		return transfer.Object{}, false
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
	if c.err != nil {
		o.Size, o.Err = -1, transfer.Permanent(c.err)
	}
	return o, true
}

// Open implements transfer.Source with one GetObject: ranged when n >= 0,
// else for the whole object. It sends If-Match with the pinned ETag.
func (s *Source) Open(ctx context.Context, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	b, err := s.open(ctx, obj, off, n)
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusRequestedRangeNotSatisfiable && off == 0 && n > 0 {
		// S3 answers a ranged GET of an empty object with 416, and some
		// S3-compatible servers answer so for any range that runs past
		// the end instead of clamping it. The whole object, asked for
		// without a Range, says which: its length is in the answer.
		b, err = s.open(ctx, obj, 0, -1)
	}
	if err != nil {
		return nil, fmt.Errorf("get s3://%s/%s: %w", s.Bucket, obj.Key, err)
	}
	return b, nil
}

// open sends one GetObject and reads its framing into a Body.
func (s *Source) open(ctx context.Context, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	ctx, w := startWatch(ctx, s.StallTimeout)
	resp, err := s.get.get(ctx, obj, off, n, s.Req, n < 0 && s.Verify)
	if err != nil {
		return nil, w.failed(err)
	}
	resp.Body = w.body(resp.Body, false)
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
	if err := frame(b, resp, obj); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return b, nil
}

// frame sets the bytes a response carries from its Content-Range and
// Content-Length. A body without a length (chunked, or delimited by the
// connection's close as HTTP/1.0 sends it) is taken when the length is
// known otherwise: from Content-Range, or for a whole object from the
// listed size; its reader then fails if the body runs short or long.
// Without either, nothing says how long the object is: that is permanent,
// not worth ten more attempts.
func frame(b *transfer.Body, resp *http.Response, obj *transfer.Object) error {
	length := resp.ContentLength
	if cr := header(resp.Header, "Content-Range"); cr != "" && resp.StatusCode == http.StatusPartialContent {
		start, end, total, err := parseContentRange(cr)
		if err != nil {
			return &transfer.BadResponseError{Msg: err.Error()}
		}
		b.Off, b.Len, b.Size = start, end-start+1, total
		if length < 0 {
			b.ReadCloser = &exactBody{ReadCloser: b.ReadCloser, left: b.Len}
			return nil
		}
		if length != b.Len {
			return &transfer.BadResponseError{Msg: fmt.Sprintf("content-length %d disagrees with content-range %q", length, cr)}
		}
		return nil
	}
	if length < 0 {
		if obj.Size < 0 {
			return transfer.Permanent(errors.New("bad response: a whole-object answer with no content-length: the object's size is unknown"))
		}
		b.Off, b.Len = 0, obj.Size
		b.ReadCloser = &exactBody{ReadCloser: b.ReadCloser, left: b.Len}
		return nil
	}
	b.Off, b.Len, b.Size = 0, length, length
	return nil
}

// exactBody reads a body whose length no header declared: it ends with
// io.ErrUnexpectedEOF if the body stops before left bytes, and with an
// error if it holds more.
type exactBody struct {
	io.ReadCloser
	left int64
}

func (e *exactBody) Read(p []byte) (int, error) {
	if e.left == 0 {
		var one [1]byte
		if k, _ := io.ReadFull(e.ReadCloser, one[:]); k > 0 {
			return 0, &transfer.BadResponseError{Msg: "the body is longer than the object"}
		}
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.ReadCloser.Read(p)
	e.left -= int64(n)
	if errors.Is(err, io.EOF) && e.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	if errors.Is(err, io.EOF) {
		err = nil // checked at the next read
	}
	return n, err
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
		hctx, w := startWatch(ctx, s.StallTimeout)
		resp, err = s.get.head(hctx, obj, s.Req, true)
		return w.failed(err)
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
	// The probe is retried like any range: a server that drops it or
	// never answers (the stall timeout) must not end the run at once.
	var b *transfer.Body
	err := transfer.DefaultBackoff.Retry(ctx, func() (err error) {
		b, err = s.Open(ctx, obj, 0, firstPart)
		return err
	})
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
