package transfer

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/s3pd/s3pd/pkg/checksum"
)

// Vouching is implemented by sources that send some objects' bytes from
// elsewhere than the object's store (another machine that holds a copy),
// which only the store's checksums vouch for, or that pass objects on
// once they are verified. The engine asks it of an object whose bytes
// are all in and that the checks Options.Verify asks for did not verify,
// never per range; with VerifyOff it asks nothing.
type Vouching interface {
	// NeedsVerified reports whether obj needs a checksum that matched
	// its bytes: the engine then also makes the checks VerifyFull makes,
	// each by reading the file back (an MD5 ETag, an ETag of parts, a
	// checksum of part checksums, by the source's PartLayout).
	NeedsVerified(obj *Object) bool
	// Unverified is told of an object that those checks could not
	// verify either; true fails it with ErrChecksum, so it is fetched
	// again from its start, as after a mismatch (Observer.Retry first).
	Unverified(obj *Object) bool
}

// verifySource is what an object's checks that read it back ask of the
// engine's source, taken once as the object opens.
type verifySource struct {
	ctx     context.Context
	obj     Object
	timeout time.Duration // of a layout lookup that infers the inner parts
	layout  PartLayout    // nil: the source cannot say
	vouch   Vouching      // nil: Options.Verify alone decides
}

// verifySource takes the source's capabilities for o's checks.
func (e *Engine) verifySource(ctx context.Context, o *Object) verifySource {
	src := e.lanes[0].Source
	vs := verifySource{ctx: ctx, obj: *o, timeout: 2 * e.opts.StallTimeout}
	vs.layout, _ = src.(PartLayout)
	vs.vouch, _ = src.(Vouching)
	return vs
}

// partSizes asks the source how the object was cut into parts parts.
func (s verifySource) partSizes(parts int, exact bool) ([]int64, error) {
	if s.layout == nil {
		return nil, ErrNoPartLayout
	}
	if exact { // a request per part: as long as the object takes
		return s.layout.PartSizes(s.ctx, &s.obj, parts, true)
	}
	lctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	return s.layout.PartSizes(lctx, &s.obj, parts, false)
}

// vouched makes, for an object its source needs verified and that v
// did not verify, the checks VerifyFull adds, and when none matched
// asks the source whether the object is fetched again. Under c.mu.
func (c *verifier) vouched(v Verification, f File, size int64) (Verification, error) {
	w := v
	if !c.full {
		w = Verification{}
		if err := c.fullChecks(&w, f, size); err != nil {
			return w, err
		}
		if w.Verified() {
			return w, nil
		}
		if w.Unverified == "" || w.Unverified == UnverifiedNoChecksum {
			w.Unverified, w.Detail = v.Unverified, v.Detail
		}
	}
	if c.src.vouch.Unverified(&c.src.obj) {
		return w, Permanent(fmt.Errorf("%w: no checksum verified bytes that came from elsewhere than the object's store (%s: %s)", ErrChecksum, w.Unverified, w.Detail))
	}
	return w, nil
}

// fullChecks makes the checks VerifyFull makes that VerifyAuto does
// not, by reading f back: a checksum of part checksums, else an MD5
// ETag, else an ETag of parts; the first that matched is enough (each
// reads the whole file). Under c.mu.
func (c *verifier) fullChecks(v *Verification, f File, size int64) error {
	if sent := c.want[string(c.alg)]; c.alg != "" && isComposite(sent) {
		if err := c.checkComposite(v, f, size, sent); err != nil || v.Verified() {
			return err
		}
	}
	if c.md5Offered && c.etag == "" {
		c.etag = strings.Trim(c.src.obj.ETag, `"`)
		if err := c.verifyMD5(v, f, size); err != nil || v.Verified() {
			return err
		}
	}
	if _, n, ok := checksum.ParseMultipartETag(c.src.obj.ETag); ok && c.multi == nil && !c.opaque {
		c.multi = &partsETag{etag: strings.Trim(strings.TrimPrefix(c.src.obj.ETag, "W/"), `"`), parts: n, done: make(chan struct{})}
		if c.src.layout != nil {
			c.multi.layout = func(exact bool) ([]int64, error) { return c.src.partSizes(n, exact) }
		}
		c.multi.sizes, c.multi.err = c.src.partSizes(n, false)
		close(c.multi.done)
		reason, detail, err := c.checkPartsETag(f, size)
		switch {
		case err != nil:
			return err
		case reason == "":
			v.Checksums = append(v.Checksums, "md5-parts")
		default:
			v.unverified(reason, detail)
		}
	}
	if !v.Verified() {
		v.unverified(UnverifiedNoChecksum, "the object has no checksum that could be checked")
	}
	return nil
}

// isComposite reports whether a checksum value is one of part checksums
// ("...-N").
func isComposite(v string) bool {
	_, n, ok := compositeParts(v)
	return ok && n > 0
}

// compositeParts splits a checksum of part checksums into its value and
// its part count.
func compositeParts(v string) (string, int, bool) {
	i := strings.LastIndexByte(v, '-')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(v[i+1:])
	return v[:i], n, err == nil
}

// checkComposite checks sent, a checksum of part checksums ("...-N"),
// against f read back: the CRC of each part, cut as the source says the
// object was uploaded, and the CRC of those CRCs. A layout inferred from
// the first and last parts that does not match is asked again part by
// part before the bytes are called wrong. Under c.mu.
func (c *verifier) checkComposite(v *Verification, f File, size int64, sent string) error {
	_, n, _ := compositeParts(sent)
	want, _, err := checksum.Decode(c.alg, sent)
	if err != nil {
		v.unverified(UnverifiedUnsupported, err.Error())
		return nil
	}
	r, ok := f.(io.ReaderAt)
	if !ok {
		v.unverified(UnverifiedUnreadable, "a checksum of part checksums is checked by reading the bytes back, which this destination cannot")
		return nil
	}
	sizes, err := c.src.partSizes(n, false)
	var got uint64
	if err == nil {
		got, err = compositeOf(r, c.alg, sizes, size)
	}
	if (err != nil || got != want) && c.src.layout != nil {
		if sizes, err = c.src.partSizes(n, true); err == nil {
			got, err = compositeOf(r, c.alg, sizes, size)
		}
	}
	switch {
	case err != nil:
		reason, detail, _ := layoutError(n, err)
		if reason == UnverifiedNoPartLayout {
			reason = UnverifiedComposite
		}
		v.unverified(reason, "its checksum is one of part checksums: "+detail)
	case got != want:
		return Permanent(fmt.Errorf("%w: %s checksum of parts %s, data has %s-%d", ErrChecksum, c.alg, sent, checksum.Encode(c.alg, got), n))
	default:
		v.Checksums = append(v.Checksums, strings.ToLower(string(c.alg))+"-parts")
	}
	return nil
}

// compositeOf reads r's parts of sizes in order and returns the CRC of
// their CRCs, as S3 computes a checksum of part checksums.
func compositeOf(r io.ReaderAt, alg checksum.Algorithm, sizes []int64, size int64) (uint64, error) {
	var total int64
	for _, s := range sizes {
		if s <= 0 {
			return 0, fmt.Errorf("a part of %d bytes", s)
		}
		total += s
	}
	if total != size {
		return 0, fmt.Errorf("the parts add up to %d bytes, not the object's %d", total, size)
	}
	outer := checksum.Start(alg)
	var raw [8]byte
	var off int64
	for _, s := range sizes {
		part := checksum.Start(alg)
		if _, err := io.Copy(&part, io.NewSectionReader(r, off, s)); err != nil {
			return 0, fmt.Errorf("read back for %s: %w", strings.ToLower(string(alg)), err)
		}
		binary.BigEndian.PutUint64(raw[:], part.Sum())
		outer.Update(raw[8-alg.Size():])
		off += s
	}
	return outer.Sum(), nil
}
