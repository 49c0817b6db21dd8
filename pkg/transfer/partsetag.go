package transfer

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/s3pd/s3pd/pkg/checksum"
)

// PartLayout is implemented by sources that can say how an object was
// uploaded in parts (S3: a HEAD with partNumber), so that --verify full
// checks an ETag of parts ("HEX-N", the MD5 of the parts' MD5s) against
// the bytes. PartSizes returns the sizes of the object's parts, in
// order; parts is the count its ETag names. Unless exact, a source may
// infer the inner parts from the first and the last (uploads use one
// part size); exact asks each part.
type PartLayout interface {
	PartSizes(ctx context.Context, obj *Object, parts int, exact bool) ([]int64, error)
}

// ErrNoPartLayout is wrapped by a PartLayout's error when the server
// does not say how the object was cut (it ignores partNumber).
var ErrNoPartLayout = errors.New("the server does not give the object's part layout")

// partsETag is the check of an ETag of parts: the layout, looked up
// beside the transfer, and how to look it up again exactly.
type partsETag struct {
	etag  string // as the object gives it, without quotes
	parts int
	// layout asks the source for the part sizes (nil: the source
	// cannot say)
	layout func(exact bool) ([]int64, error)
	done   chan struct{} // closed when the first lookup ended
	sizes  []int64
	err    error
}

// planPartsETag readies the check of o's ETag of parts under --verify
// full, and starts looking up its layout.
func (e *Engine) planPartsETag(c *verifier, o *Object) {
	_, n, ok := checksum.ParseMultipartETag(o.ETag)
	if e.opts.Verify.checks() != VerifyFull || e.opts.OpaqueETags || !ok {
		return
	}
	p := &partsETag{etag: strings.Trim(strings.TrimPrefix(o.ETag, "W/"), `"`), parts: n, done: make(chan struct{})}
	if c.src.layout == nil {
		p.err = ErrNoPartLayout
		close(p.done)
		c.multi = p
		return
	}
	p.layout = func(exact bool) ([]int64, error) { return c.src.partSizes(n, exact) }
	go func() {
		defer close(p.done)
		p.sizes, p.err = p.layout(false)
	}()
	c.multi = p
}

// checkPartsETag checks the ETag of parts against f read back, part by
// part. A layout inferred from the first and last parts that does not
// match is asked again part by part before the bytes are called wrong.
// It returns the reason and the words of a check it could not make
// ("" when the ETag matched), or an error on a mismatch.
func (c *verifier) checkPartsETag(f File, size int64) (reason, detail string, err error) {
	p := c.multi
	<-p.done
	if c.encrypted {
		return UnverifiedEncrypted, "the etag of an SSE-KMS or SSE-C object is not an md5 of its parts", nil
	}
	r, ok := f.(io.ReaderAt)
	if !ok {
		return UnverifiedUnreadable, "an etag of parts is checked by reading the bytes back, which this destination cannot", nil
	}
	if p.err != nil {
		return layoutError(p.parts, p.err)
	}
	got, err := partsMD5(r, p.sizes, size)
	if (err != nil || got != p.etag) && p.layout != nil {
		// The inner parts may differ from the first: ask each.
		var sizes []int64
		if sizes, err = p.layout(true); err == nil {
			got, err = partsMD5(r, sizes, size)
		}
	}
	switch {
	case err != nil:
		return layoutError(p.parts, err)
	case got != p.etag:
		return "", "", Permanent(fmt.Errorf("%w: etag of parts %s, data has %s", ErrChecksum, p.etag, got))
	}
	return "", "", nil
}

// layoutError says why an ETag of parts could not be checked: the
// reason, and the words.
func layoutError(parts int, err error) (string, string, error) {
	of := "its etag is of " + plural(parts, "part")
	if errors.Is(err, ErrNoPartLayout) {
		return UnverifiedNoPartLayout, of + " and the server does not say how the object was cut (HEAD with partNumber)", nil
	}
	return UnverifiedLookupFailed, of + " and its part layout could not be read: " + err.Error(), nil
}

// partsMD5 reads r's parts of sizes in order and returns the ETag of
// parts they make.
func partsMD5(r io.ReaderAt, sizes []int64, size int64) (string, error) {
	var total int64
	for _, s := range sizes {
		if s <= 0 {
			return "", fmt.Errorf("a part of %d bytes", s)
		}
		total += s
	}
	if total != size {
		return "", fmt.Errorf("the parts add up to %d bytes, not the object's %d", total, size)
	}
	sums := make([][16]byte, len(sizes))
	h := md5.New()
	var off int64
	for i, s := range sizes {
		h.Reset()
		if _, err := io.Copy(h, io.NewSectionReader(r, off, s)); err != nil {
			return "", fmt.Errorf("read back for md5: %w", err)
		}
		copy(sums[i][:], h.Sum(nil))
		off += s
	}
	return checksum.MultipartETag(sums), nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
