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

// Target describes what a Source reads and how it asks: it is given to
// NewSource and never changes after, so every lane of a run reads the same
// thing and a source can be listed twice with the same result.
type Target struct {
	Bucket string
	// Prefix: list keys under it; names are relative to it.
	Prefix string
	// Object, when set, is the single object to read (as Probe resolved
	// it): List emits it alone, with its known size.
	Object *transfer.Object
	// Version is the single object's version, when set (Probe, Stat).
	Version string
	Req     Request
	// Verify asks whole-object GETs (and Probe, Stat) for the object's
	// full-object checksums, for the engine to verify.
	Verify bool
	// StallTimeout bounds the wait for response headers and the silences
	// within a listing page (0: no bound but the transport's).
	StallTimeout time.Duration
	// PageSize is ListObjectsV2's max-keys (0: the server's default).
	PageSize int32
	// FanOut, above 1, lists up to that many sub-prefixes of Prefix at
	// once (see fanout.go); 0 or 1 lists in one stream.
	FanOut int
	// OnRetry, when set, is called before a listing page is asked again,
	// with the attempt that failed (1-based) and why.
	OnRetry func(attempt int, err error)
}

// Source reads the objects of a Target: a prefix listing, or the single
// object the target names.
type Source struct {
	client *s3.Client
	get    *getter
	t      Target
	// fanBudget overrides how many objects fan-out fetches ahead (tests).
	fanBudget int
}

// NewSource returns a source over client that reads t.
func NewSource(client *s3.Client, t Target) *Source {
	return &Source{client: client, get: newGetter(client, t.Bucket), t: t}
}

// With returns a source that reads t over s's client, sharing what s
// learned of where the bucket is (a region redirect is followed once for
// both), so a probe and the run after it ask the same place.
func (s *Source) With(t Target) *Source {
	get := s.get
	if t.Bucket != s.t.Bucket {
		get = newGetter(s.client, t.Bucket)
	}
	return &Source{client: s.client, get: get, t: t}
}

// Target is what s reads.
func (s *Source) Target() Target { return s.t }

// URL names what s reads, for messages.
func (s *Source) URL() string {
	if s.t.Object != nil {
		return "s3://" + s.t.Bucket + "/" + s.t.Object.Key
	}
	return "s3://" + s.t.Bucket + "/" + s.t.Prefix
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
	if s.t.Object != nil {
		return emit(*s.t.Object)
	}
	if s.t.FanOut > 1 && !IsDirectoryBucket(s.t.Bucket) {
		// A directory bucket's listing is not in key order, which the
		// fan-out's merge of sub-prefix streams depends on.
		return s.fanOut(ctx, emit)
	}
	return s.flat(ctx, emit)
}

// flat lists the prefix in one stream, page after page.
func (s *Source) flat(ctx context.Context, emit func(transfer.Object) error) error {
	l := &listing{get: s.get, req: s.t.Req, prefix: s.t.Prefix, pageSize: s.t.PageSize, stall: s.t.StallTimeout, onRetry: s.t.OnRetry}
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
	name := strings.TrimPrefix(c.key, s.t.Prefix)
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
		return nil, fmt.Errorf("get s3://%s/%s: %w", s.t.Bucket, obj.Key, err)
	}
	return b, nil
}

// open sends one GetObject and reads its framing into a Body.
func (s *Source) open(ctx context.Context, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	ctx, w := startWatch(ctx, s.t.StallTimeout)
	ctx, conn := withConnWait(ctx)
	resp, err := s.get.get(ctx, obj, off, n, s.t.Req, n < 0 && s.t.Verify)
	if err != nil {
		return nil, w.failed(err)
	}
	resp.Body = w.body(resp.Body, false)
	h := resp.Header
	b := &transfer.Body{ReadCloser: resp.Body, ETag: header(h, "Etag"), Size: -1,
		Checksums: headerChecksums(h), Connect: conn.wait, Encrypted: encrypted(h)}
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
			return transfer.Permanent(&transfer.BadResponseError{Msg: "a whole-object answer with no content-length: the object's size is unknown"})
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
	sums, _, err := s.ChecksumsEncrypted(ctx, obj)
	return sums, err
}

// ChecksumsEncrypted is Checksums, and whether the same HEAD says S3
// keeps the object with SSE-KMS or SSE-C (its ETag is then no MD5 of
// its bytes), so that a caller that needs both sends one request.
func (s *Source) ChecksumsEncrypted(ctx context.Context, obj *transfer.Object) (map[string]string, bool, error) {
	var resp *http.Response
	err := transfer.BudgetFor(transfer.Lookup).Retry(ctx, func() (err error) {
		hctx, w := startWatch(ctx, s.t.StallTimeout)
		resp, err = s.get.head(hctx, obj, s.t.Req, true)
		return w.failed(err)
	})
	if err != nil {
		return nil, false, fmt.Errorf("head s3://%s/%s: %w", s.t.Bucket, obj.Key, err)
	}
	return headerChecksums(resp.Header), encrypted(resp.Header), nil
}

// encrypted says the headers of an object's GET or HEAD tell S3 keeps
// it with SSE-KMS (or DSSE-KMS) or SSE-C.
func encrypted(h http.Header) bool {
	return strings.HasPrefix(header(h, "X-Amz-Server-Side-Encryption"), "aws:kms") ||
		header(h, "X-Amz-Server-Side-Encryption-Customer-Algorithm") != ""
}

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

// Probe resolves key as a single object: its size, ETag and
// modification time from the first range, bytes [0, n), which it opens
// and returns open, so the engine need not fetch that range again (see
// transfer.Prefetch); and, when the target verifies, its full-object
// checksums from a HeadObject sent alongside. name is the object's
// destination name. An error that wraps transfer.ErrNotFound says key is
// no object (without a version, it may be a prefix).
func (s *Source) Probe(ctx context.Context, key, name string, n int64) (transfer.Object, *transfer.Body, error) {
	obj := transfer.Object{Key: key, Name: name, Size: -1, VersionID: s.t.Version}
	type sums struct {
		m   map[string]string
		err error
	}
	var head chan sums
	if s.t.Verify {
		head = make(chan sums, 1)
		go func() {
			m, err := s.Checksums(ctx, &transfer.Object{Key: key, VersionID: s.t.Version})
			head <- sums{m, err}
		}()
	}
	// The probe is retried as any range: a server that drops it or
	// never answers (the stall timeout) must not end the run at once.
	var b *transfer.Body
	err := transfer.BudgetFor(transfer.RangeRead).Retry(ctx, func() (err error) {
		b, err = s.Open(ctx, &obj, 0, n)
		return err
	})
	if head != nil {
		// Waited for even on failure: no goroutine outlives the probe.
		if h := <-head; h.err == nil && err == nil {
			obj.Checksums, obj.ChecksumAlgorithm = h.m, firstAlgorithm(h.m)
		}
	}
	if err != nil {
		return obj, nil, err
	}
	obj.Size, obj.ETag, obj.ModTime = b.Size, b.ETag, b.ModTime
	return obj, b, nil
}

// firstAlgorithm is the strongest full-object checksum of m ("" if none).
func firstAlgorithm(m map[string]string) string {
	for _, alg := range []string{"CRC64NVME", "CRC32C", "CRC32"} {
		if _, ok := m[alg]; ok {
			return alg
		}
	}
	return ""
}

// Stat looks key up with one HeadObject (retried as a lookup):
// its size, ETag, modification time and, when s verifies, its
// full-object checksums. It serves manifests, whose entries may lack a
// size or have gone stale.
func (s *Source) Stat(ctx context.Context, key string) (transfer.Object, error) {
	o := transfer.Object{Key: key}
	var resp *http.Response
	err := transfer.BudgetFor(transfer.Lookup).Retry(ctx, func() (err error) {
		resp, err = s.get.head(ctx, &o, s.t.Req, s.t.Verify)
		return err
	})
	if err != nil {
		return o, fmt.Errorf("head s3://%s/%s: %w", s.t.Bucket, key, err)
	}
	h := resp.Header
	o.Size, o.ETag = resp.ContentLength, header(h, "Etag")
	if lm := header(h, "Last-Modified"); lm != "" {
		if t, err := http.ParseTime(lm); err == nil {
			o.ModTime = t
		}
	}
	o.Checksums = headerChecksums(h)
	o.ChecksumAlgorithm = firstAlgorithm(o.Checksums)
	return o, nil
}
