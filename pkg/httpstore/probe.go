package httpstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// probe learns obj's size, validator, modification time and any digest
// the server vouches for with a GET of its first bytes (FirstRange of
// them when the body is kept), and whether the server takes Range: a 200
// to the ranged GET says it does not, and obj is then fetched whole
// (NoRanges), as it is when the server sends no validator (no ETag, no
// Last-Modified). With keep it returns the open body (the first range,
// or the whole file), else it closes it.
func (s *Store) probe(ctx context.Context, obj *transfer.Object, keep bool) (*transfer.Body, error) {
	raw := s.urls[obj.Key]
	// A probe whose body is not kept asks for one byte, which it reads
	// to the end, so that its connection serves the next request.
	first := int64(1)
	if keep {
		first = s.opts.FirstRange
	}
	what := fmt.Sprintf("get %s bytes=0-%d", obj.Key, first-1)
	var b *transfer.Body
	err := s.opts.Backoff.Retry(ctx, func() (err error) {
		b, err = s.probeOnce(ctx, raw, obj, first)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	// A first range of an object read as one stream would be another
	// response beside the stream: it is not kept.
	if b != nil && (!keep || obj.NoRanges && b.Len < obj.Size) {
		drain(b.ReadCloser)
		b = nil
	}
	return b, nil
}

// probeOnce sends one probe and reads its answer into obj.
func (s *Store) probeOnce(ctx context.Context, raw string, obj *transfer.Object, first int64) (*transfer.Body, error) {
	req, err := s.request(ctx, raw)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=0-%d", first-1))
	client, linked := linkedETag(s.opts.Client)
	resp, err := client.Do(req)
	if err != nil {
		return nil, redactErr(err)
	}
	if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && resp.Header.Get("Content-Range") == "bytes */0" {
		resp.Body.Close()
		setVersion(obj, resp.Header)
		obj.Size = 0 // an empty file has no byte 0
		return nil, nil
	}
	b, err := probed(resp, obj, first)
	if err != nil {
		drain(resp.Body)
		return nil, err
	}
	if obj.Digest == nil { // one given by hand wins
		obj.Digest = offered(resp.Header, *linked)
	}
	return b, nil
}

// linkedETag returns c with a redirect policy that also keeps the
// X-Linked-Etag of the redirects followed (a model hub's SHA-256 of the
// file it redirects to a CDN for), and where it keeps it.
func linkedETag(c *http.Client) (*http.Client, *string) {
	linked := new(string)
	copied := *c
	policy := c.CheckRedirect
	copied.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.Response != nil {
			if v := req.Response.Header.Get("X-Linked-Etag"); v != "" {
				*linked = v
			}
		}
		if policy != nil {
			return policy(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &copied, linked
}

// probed reads into obj the response to a probe of its first bytes and
// returns its body.
func probed(resp *http.Response, obj *transfer.Object, first int64) (*transfer.Body, error) {
	if err := statusErr(resp); err != nil {
		if errors.Is(err, transfer.ErrModified) {
			// Not a version change (the probe pins none): a 416 to
			// bytes=0-N of a file that is not empty.
			return nil, transfer.Permanent(fmt.Errorf("%s, Content-Range %q", resp.Status, resp.Header.Get("Content-Range")))
		}
		return nil, err
	}
	setVersion(obj, resp.Header)
	b := &transfer.Body{ReadCloser: resp.Body, ETag: obj.ETag, ModTime: obj.ModTime}
	if resp.StatusCode == http.StatusPartialContent {
		cr, err := parseContentRange(resp.Header.Get("Content-Range"))
		switch {
		case err != nil:
			return nil, &transfer.BadResponseError{Msg: err.Error()}
		case cr.size < 0:
			return nil, transfer.Permanent(fmt.Errorf("the server does not say the file's size (Content-Range %q)", resp.Header.Get("Content-Range")))
		case cr.off != 0 || cr.n > first || cr.n < min(first, cr.size):
			return nil, &transfer.BadResponseError{Msg: fmt.Sprintf("Content-Range %q, asked for bytes 0-%d", resp.Header.Get("Content-Range"), first-1)}
		case resp.ContentLength >= 0 && resp.ContentLength != cr.n:
			return nil, &transfer.BadResponseError{Msg: fmt.Sprintf("Content-Length %d, Content-Range %q", resp.ContentLength, resp.Header.Get("Content-Range"))}
		}
		// Without a validator nothing pins a range to the version of the
		// others: the file is read as one stream, one response, rather
		// than risk parts of two versions.
		obj.Size, obj.NoRanges = cr.size, obj.ETag == "" && obj.VersionID == ""
		b.Off, b.Len, b.Size = 0, cr.n, cr.size
		return b, nil
	}
	// 200 to a ranged GET: the server ignores Range and sends it all.
	if resp.ContentLength < 0 {
		return nil, transfer.Permanent(errors.New("the server does not say the file's size (no Content-Length) and ignores Range"))
	}
	obj.Size, obj.NoRanges = resp.ContentLength, true
	b.Off, b.Len, b.Size = 0, obj.Size, obj.Size
	return b, nil
}

// setVersion records the validator of a response in obj: its ETag (the
// engine compares every response's with it), and Last-Modified as the
// pin when there is no strong ETag (in VersionID: the sink's journal
// pins a version by ETag or VersionID).
func setVersion(obj *transfer.Object, h http.Header) {
	obj.ETag, obj.VersionID = h.Get("ETag"), ""
	lm := h.Get("Last-Modified")
	if t, err := http.ParseTime(lm); err == nil {
		obj.ModTime = t
	}
	if !strong(obj.ETag) && strings.TrimSpace(lm) != "" {
		obj.VersionID = lmPrefix + lm
	}
}
