package httpstore

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Source opens ranges of a store's files over one client: a
// transfer.Source.
type Source struct {
	store  *Store
	client *http.Client
}

// List implements transfer.Lister.
func (s *Source) List(ctx context.Context, emit func(transfer.Object) error) error {
	return s.store.List(ctx, emit)
}

// Open implements transfer.Source: bytes [off, off+n) of obj (n < 0: to
// the end), pinned to the version probed. A 200 to a ranged GET (a
// server that ignores Range) is the whole file, whose leading bytes the
// engine skips; a 200 or 206 of another version, or a 412, is
// transfer.ErrModified.
func (s *Source) Open(ctx context.Context, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	raw, ok := s.store.urls[obj.Key]
	if !ok {
		return nil, transfer.Permanent(fmt.Errorf("get %s: not one of the store's URLs", obj.Key))
	}
	if n < 0 {
		n = obj.Size - off
	}
	ranged := off > 0 || n < obj.Size
	what := "get " + obj.Key // the engine names the range
	req, err := s.store.request(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if ranged {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	}
	pin(req.Header, obj, ranged)
	var connect time.Duration
	req = timeConnect(req, &connect)
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, redactErr(err))
	}
	b, err := answer(resp, obj, off, n)
	if err != nil {
		drain(resp.Body)
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	b.Connect = connect
	return b, nil
}

// request is a GET of raw that asks for the bytes as stored.
func (s *Store) request(ctx context.Context, raw string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, transfer.Permanent(redactErr(err))
	}
	// Not gzip: a compressed body has other bytes and another length
	// than the file's (Go's transport would ask for it on a GET without
	// Range, and undo it).
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("User-Agent", s.opts.UserAgent)
	return req, nil
}

// strong reports whether etag is a strong validator (not W/"...").
func strong(etag string) bool { return etag != "" && !strings.HasPrefix(etag, "W/") }

// lastModified is the Last-Modified value obj is pinned by, when it has
// no strong ETag ("" for none): kept in its VersionID, so the sink's
// journal pins it across runs as it pins an ETag.
func lastModified(obj *transfer.Object) string {
	lm, _ := strings.CutPrefix(obj.VersionID, lmPrefix)
	return lm
}

// lmPrefix marks a VersionID that holds a Last-Modified validator.
const lmPrefix = "last-modified: "

// pin makes the request conditional on the version probed: If-Match on
// a strong ETag (else If-Unmodified-Since on Last-Modified), which a
// server answers 412 once the file changed, and for a range If-Range
// too, which a server that ignores If-Match answers with the whole new
// file (which answer then tells by its validator).
func pin(h http.Header, obj *transfer.Object, ranged bool) {
	var v string
	switch lm := lastModified(obj); {
	case strong(obj.ETag):
		v = obj.ETag
		h.Set("If-Match", v)
	case lm != "":
		v = lm
		h.Set("If-Unmodified-Since", v)
	}
	if ranged && v != "" {
		h.Set("If-Range", v)
	}
}

// answer checks a response to a GET of bytes [off, off+n) of obj and
// returns its body.
func answer(resp *http.Response, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	if err := statusErr(resp); err != nil {
		return nil, err
	}
	if err := sameVersion(obj, resp.Header); err != nil {
		return nil, err
	}
	b := &transfer.Body{ReadCloser: resp.Body, Size: obj.Size, ETag: obj.ETag}
	if et := resp.Header.Get("ETag"); et != "" {
		b.ETag = et
	}
	if lm, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		b.ModTime = lm
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		cr, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err != nil {
			return nil, &transfer.BadResponseError{Msg: err.Error()}
		}
		if cr.size >= 0 && cr.size != obj.Size {
			return nil, transfer.Permanent(fmt.Errorf("size %d, probed %d: %w", cr.size, obj.Size, transfer.ErrModified))
		}
		if cr.off != off || cr.n != n {
			return nil, &transfer.BadResponseError{Msg: fmt.Sprintf("Content-Range %q, asked for bytes %d-%d", resp.Header.Get("Content-Range"), off, off+n-1)}
		}
		if resp.ContentLength >= 0 && resp.ContentLength != cr.n {
			return nil, &transfer.BadResponseError{Msg: fmt.Sprintf("Content-Length %d, Content-Range %q", resp.ContentLength, resp.Header.Get("Content-Range"))}
		}
		b.Off, b.Len = cr.off, cr.n
	default: // 200: the whole file
		if resp.ContentLength >= 0 && resp.ContentLength != obj.Size {
			return nil, transfer.Permanent(fmt.Errorf("length %d, probed %d: %w", resp.ContentLength, obj.Size, transfer.ErrModified))
		}
		b.Off, b.Len = 0, obj.Size
	}
	return b, nil
}

// sameVersion fails a response of another version than obj's.
func sameVersion(obj *transfer.Object, h http.Header) error {
	if et := h.Get("ETag"); obj.ETag != "" && et != "" && et != obj.ETag {
		return transfer.Permanent(fmt.Errorf("etag %s, probed %s: %w", et, obj.ETag, transfer.ErrModified))
	}
	if lm, got := lastModified(obj), h.Get("Last-Modified"); lm != "" && got != "" && got != lm {
		return transfer.Permanent(fmt.Errorf("last-modified %s, probed %s: %w", got, lm, transfer.ErrModified))
	}
	return nil
}

// contentRange is a parsed Content-Range: bytes [off, off+n) of size
// (-1: "*", not said).
type contentRange struct{ off, n, size int64 }

// parseContentRange parses "bytes FIRST-LAST/SIZE" (SIZE may be "*").
func parseContentRange(v string) (contentRange, error) {
	bad := fmt.Errorf("Content-Range %q is not bytes FIRST-LAST/SIZE", v)
	spec, ok := strings.CutPrefix(v, "bytes ")
	if !ok {
		return contentRange{}, bad
	}
	rng, total, ok := strings.Cut(spec, "/")
	if !ok {
		return contentRange{}, bad
	}
	a, b, ok := strings.Cut(rng, "-")
	if !ok {
		return contentRange{}, bad
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || first < 0 || last < first {
		return contentRange{}, bad
	}
	cr := contentRange{off: first, n: last - first + 1, size: -1}
	if total != "*" {
		size, err := strconv.ParseInt(total, 10, 64)
		if err != nil || size <= last {
			return contentRange{}, bad
		}
		cr.size = size
	}
	return cr, nil
}

// drain closes a body that is not used, reading a little of it first so
// that a short error body leaves its connection reusable.
func drain(body io.ReadCloser) {
	io.CopyN(io.Discard, body, 4<<10)
	body.Close()
}
