package transfer

import (
	"bytes"
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/s3pd/s3pd/pkg/checksum"
)

// Verify says what the engine checks of each object's bytes.
type Verify int

const (
	// VerifyAuto verifies every full-object CRC64NVME, CRC32C or CRC32
	// checksum the object has, from per-range CRCs combined as the bytes
	// stream past.
	VerifyAuto Verify = iota
	// VerifyFull also verifies an MD5 ETag where the ETag is one, an
	// ETag of parts and a checksum of part checksums ("...-N") by the
	// object's part layout (PartLayout), each by reading the file back.
	VerifyFull
	// VerifyOff verifies nothing.
	VerifyOff
	// VerifyRequire verifies what VerifyFull does and fails every object
	// that no checksum could verify (empty ones aside: their size is all
	// there is), with the reason.
	VerifyRequire
)

// checks is what v verifies: VerifyRequire checks what VerifyFull does.
func (v Verify) checks() Verify {
	if v == VerifyRequire {
		return VerifyFull
	}
	return v
}

// Required returns the error that fails an object of size bytes whose
// verification v verified nothing under VerifyRequire, nil when v
// verified it (or it is empty, or verification is off).
func Required(v Verification, size int64) error {
	if v.Off || v.Verified() || size == 0 {
		return nil
	}
	why := cmp.Or(v.Detail, v.Unverified, "no checksum was checked")
	return Permanent(fmt.Errorf("%w: %s (%s)", ErrUnverified, why, v.Unverified))
}

// ErrUnverified fails an object that --verify require could not verify.
var ErrUnverified = errors.New("not verified, as --verify require asks")

// Checksummer is implemented by sources that can fetch an object's
// full-object checksums (S3: one HeadObject with checksum mode), for
// objects fetched in ranges, whose responses carry none.
type Checksummer interface {
	Checksums(ctx context.Context, obj *Object) (map[string]string, error)
}

// ErrChecksum reports bytes that do not match the object's checksum.
var ErrChecksum = errors.New("checksum mismatch")

// Stream is implemented by files that take their bytes in order and
// cannot be read back (stdout). Such a file sums what it passes on, so
// an MD5 ETag is checked as the object streams, without a read back; a
// mismatch cannot be fetched again (the bytes are out), so the error
// says how many bytes went out wrong and where.
type Stream interface {
	// SumWritten makes the file write every byte it passes on, in
	// order, into h too. It is called before the first WriteAt.
	SumWritten(h hash.Hash)
	// StreamName is what the stream is called in messages ("stdout").
	StreamName() string
}

// verifier is the verification of one object: what its bytes must sum
// to, and the sums of its parts as they complete.
type verifier struct {
	alg   checksum.Algorithm // "" until known
	parts *checksum.Ordered  // the parts' CRCs of a ranged fetch, joined as they complete

	mu      sync.Mutex
	want    map[string]string // expected values by algorithm name
	wantErr error
	head    chan struct{}    // closed when a Checksummer call ended
	etag    string           // an MD5 ETag to verify (--verify full), or ""
	md5     hash.Hash        // MD5 of a whole-object fetch, in order
	whole   checksum.Running // the CRC of a whole-object fetch, once written
	// streamed is the MD5 of what a Stream passed on, in order, or nil
	streamed hash.Hash
	stream   string // the Stream's name
	// autoMD5: the MD5 is checked under VerifyAuto because the object
	// streams and has no CRC; a CRC that matches makes it unneeded
	autoMD5   bool
	encrypted bool // a response said SSE-KMS or SSE-C: no MD5 ETag
	// md5Offered: the ETag looks like an MD5, which --verify full checks
	md5Offered bool
	opaque     bool // the source's ETags are not MD5s (Options.OpaqueETags)
	// multi is the check of an ETag of parts under --verify full (nil:
	// none)
	multi *partsETag
	// digest is a full-object digest to check by reading the file back
	// (nil: none); offered is one the source offered that is not checked
	// (--verify auto), for the reason given
	digest  *Digest
	offered *Digest
	// digestSum hashes for digest what a Stream passes on, in order (nil:
	// the file is read back)
	digestSum hash.Hash
	// full: the checks of VerifyFull are made (a checksum of part
	// checksums among them)
	full bool
	// src is what the checks that read the object back ask of its
	// source: its part layout, and whether it must be verified
	src verifySource
}

// pickAlgorithm chooses what to compute from the values on offer.
func pickAlgorithm(values map[string]string) checksum.Algorithm {
	for _, a := range []checksum.Algorithm{checksum.CRC64NVME, checksum.CRC32C, checksum.CRC32} {
		if _, ok := values[string(a)]; ok {
			return a
		}
	}
	return ""
}

// newVerifier prepares the verification of o, fetched in ranges or with one
// whole-object GET, into f.
func (e *Engine) newVerifier(ctx context.Context, o *Object, ranged bool, f File) *verifier {
	if e.opts.Verify == VerifyOff {
		return nil
	}
	c := &verifier{want: o.Checksums, md5Offered: checksum.IsMD5ETag(o.ETag) && !e.opts.OpaqueETags, opaque: e.opts.OpaqueETags,
		full: e.opts.Verify.checks() == VerifyFull, src: e.verifySource(ctx, o)}
	if d := o.Digest; d != nil && d.Offered && e.opts.Verify.checks() != VerifyFull {
		c.offered = d
	} else {
		c.digest = d
	}
	alg, ok := checksum.ParseAlgorithm(o.ChecksumAlgorithm)
	if !ok && len(o.Checksums) > 0 {
		alg, ok = pickAlgorithm(o.Checksums), true
	}
	crcKnown := ok && alg.Supported()
	c.planMD5(e.opts.Verify.checks(), o.ETag, f, ranged, ranged && crcKnown)
	c.planDigest(f)
	e.planPartsETag(c, o)
	if !ranged || !crcKnown {
		return c // a whole-object fetch learns its algorithm from the response
	}
	c.alg = alg
	c.parts = checksum.NewOrdered(alg, o.Size)
	if _, known := o.Checksums[string(alg)]; !known {
		if cs, ok := e.lanes[0].Source.(Checksummer); ok {
			c.lookUp(ctx, cs, *o, 2*e.opts.StallTimeout)
		}
	}
	return c
}

// planMD5 decides whether and how the MD5 ETag etag is checked: summed
// in order by a Stream as it passes the bytes on, by a whole-object
// fetch as they arrive, or by reading the file back at the end.
// crcRanged says a ranged fetch has a CRC to check.
func (c *verifier) planMD5(verify Verify, etag string, f File, ranged, crcRanged bool) {
	stream, _ := f.(Stream)
	if _, readable := f.(io.ReaderAt); readable {
		stream = nil
	}
	if c.md5Offered {
		// Under auto, a stream with no CRC to check (a whole-object
		// fetch learns of one only from its response) sums its MD5 as it
		// goes: it could not be read back later.
		c.autoMD5 = verify == VerifyAuto && stream != nil && !crcRanged
		if verify == VerifyFull || c.autoMD5 {
			c.etag = strings.Trim(etag, `"`)
		}
	}
	switch {
	case c.etag != "" && stream != nil:
		c.streamed, c.stream = md5.New(), stream.StreamName()
		stream.SumWritten(c.streamed)
	case c.etag != "" && !ranged:
		c.md5 = md5.New()
	}
}

// planDigest has a Stream, which cannot be read back, hash what it
// passes on for the object's digest, unless it already sums an MD5 ETag.
func (c *verifier) planDigest(f File) {
	stream, ok := f.(Stream)
	if _, readable := f.(io.ReaderAt); c.digest == nil || !ok || readable || c.streamed != nil {
		return
	}
	c.digestSum = c.digest.New()
	c.stream = stream.StreamName()
	stream.SumWritten(c.digestSum)
}

// lookUp asks cs for the object's full-object checksums, which ranged
// responses do not carry, beside the transfer; objectComplete waits for
// the answer.
func (c *verifier) lookUp(ctx context.Context, cs Checksummer, obj Object, timeout time.Duration) {
	c.head = make(chan struct{})
	go func() {
		defer close(c.head)
		hctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		want, err := cs.Checksums(hctx, &obj)
		c.mu.Lock()
		c.want, c.wantErr = want, err
		c.mu.Unlock()
	}()
}

// The moments of an object's verification, each one entry point: the
// object opens (newVerifier), a range starts (startPart), a response
// arrives (answered), bytes stream past (partSum.update, the hot path), a
// part is written (partWritten) or interrupted (partInterrupted), a part
// an earlier run journaled is read back (resumedPart), and the object is
// complete (objectComplete). The rest are this file's helpers.

// startPart readies ps for one range of the object: its CRC when the
// algorithm is known, the whole-object MD5 when one is summed in order.
// With nothing verified (c nil) ps computes nothing.
func (c *verifier) startPart(ps *partSum) {
	*ps = partSum{}
	if c == nil {
		return
	}
	ps.md5 = c.md5
	if c.alg != "" {
		ps.run, ps.on = checksum.Start(c.alg), true
	}
}

// answered records what a response offers (a whole-object response names
// its checksums and the CRC to compute; any says the object is
// encrypted), and starts ps over when the attempt sends the part again
// from its start (over: a part writer's).
func (c *verifier) answered(ps *partSum, b *Body, over bool) {
	if c == nil {
		return
	}
	c.fromResponse(b)
	ps.begin(c)
	if over {
		ps.restart()
	}
}

// partWritten records the sums of a range whose bytes all arrived: a
// part's CRC, joined to the object's and returned as its journal token,
// or the CRC of a whole-object fetch.
func (c *verifier) partWritten(off int64, ps *partSum) string {
	if c == nil || !ps.on {
		return ""
	}
	if c.parts == nil {
		c.mu.Lock()
		c.whole = ps.run
		c.mu.Unlock()
		return ""
	}
	c.parts.Set(off, ps.run)
	return sumToken(c.alg, ps.run)
}

// partInterrupted returns the journal token of the first n bytes of a
// part that was interrupted, when ps summed exactly them: its running
// CRC, saved so that a later run can read those bytes back, check them
// and go on from there. With nothing to verify the token is "". It
// reports false when ps did not follow the bytes written (no CRC
// computed for the part).
func (c *verifier) partInterrupted(ps *partSum, n int64) (string, bool) {
	if c == nil || c.parts == nil {
		return "", true
	}
	if !ps.on || ps.run.Len() != n {
		return "", false
	}
	return sumToken(c.alg, ps.run), true
}

// resumedPart proves the first have bytes of the part at off, journaled
// by an earlier run with sum, against what is now in f, and continues
// ps from them: it reports false when they must be fetched again. A
// part taken whole is then partWritten like one fetched now.
func (c *verifier) resumedPart(ps *partSum, f File, off, have int64, sum string) bool {
	r, ok := c.readBack(f, off, have, sum)
	if ok && ps.on {
		ps.run = r
	}
	return ok
}

// objectComplete compares what was computed with what the object
// declares, and returns how the object was verified, or an error on a
// mismatch.
func (c *verifier) objectComplete(f File, size int64) (Verification, error) {
	var v Verification
	if c == nil {
		v.Off = true
		return v, nil
	}
	if size == 0 {
		v.unverified(UnverifiedEmpty, "an empty object has nothing to check")
		return v, nil
	}
	if c.head != nil {
		<-c.head
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.checks(f, size)
	if err == nil && !v.Verified() && c.src.vouch != nil && c.src.vouch.NeedsVerified(&c.src.obj) {
		return c.vouched(v, f, size)
	}
	return v, err
}

// checks makes the checks the object was planned with, into a
// Verification. Under c.mu.
func (c *verifier) checks(f File, size int64) (Verification, error) {
	var v Verification
	if err := c.checkCRC(&v, f, size); err != nil {
		return v, err
	}
	if c.digest != nil {
		if err := c.checkDigest(&v, f, size); err != nil {
			return v, err
		}
	}
	if c.etag != "" && !(c.autoMD5 && v.Verified()) {
		if err := c.verifyMD5(&v, f, size); err != nil {
			return v, err
		}
	}
	if c.multi != nil {
		reason, detail, err := c.checkPartsETag(f, size)
		switch {
		case err != nil:
			return v, err
		case reason == "":
			v.Checksums = append(v.Checksums, "md5-parts")
		case !v.Verified():
			// A check that cannot be made takes nothing from one made.
			v.unverified(reason, detail)
		}
	}
	if c.alg == "" && c.etag == "" && c.multi == nil && c.digest == nil {
		switch {
		case c.offered != nil:
			v.unverified(UnverifiedDigestOnly, "the object's only checksum is the "+c.offered.Name+" its source sent: --verify full checks it")
		case c.md5Offered:
			v.unverified(UnverifiedMD5Only, "the object's only checksum is its MD5 ETag: --verify full checks it")
		case c.opaque:
			v.unverified(UnverifiedNoChecksum, "the object has no checksum, and its ETag is not an MD5 on this store")
		default:
			v.unverified(UnverifiedNoChecksum, "the object has no checksum")
		}
	}
	return v, nil
}

// fromResponse records what a response offers. Under c.mu.
func (c *verifier) fromResponse(b *Body) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b.Encrypted {
		c.encrypted = true
	}
	if c.parts == nil && c.alg == "" && len(b.Checksums) > 0 {
		c.want = b.Checksums
		c.alg = pickAlgorithm(b.Checksums)
	}
}

// checkCRC compares the object's CRC, from its parts or its whole-object
// fetch, with the value it declares, into v; under VerifyFull a checksum
// of part checksums is checked by reading f back. Under c.mu.
func (c *verifier) checkCRC(v *Verification, f File, size int64) error {
	if c.alg == "" {
		return nil
	}
	var got uint64
	var err error
	switch {
	case c.parts != nil:
		got, err = c.parts.Sum()
	case c.whole.Algorithm() == c.alg:
		got = c.whole.Sum()
	default:
		err = errors.New("not computed")
	}
	sent, ok := c.want[string(c.alg)]
	switch {
	case err != nil:
		v.unverified(UnverifiedUnsupported, err.Error())
	case !ok && c.wantErr != nil:
		v.unverified(UnverifiedLookupFailed, "checksum lookup failed: "+c.wantErr.Error())
	case !ok:
		v.unverified(UnverifiedNoChecksum, "no checksum returned")
	default:
		verdict, cerr := checksum.Compare(c.alg, sent, got)
		switch {
		case verdict == checksum.Match:
			v.Checksums = append(v.Checksums, strings.ToLower(string(c.alg)))
		case verdict == checksum.Mismatch:
			return Permanent(fmt.Errorf("%w: %v", ErrChecksum, cerr))
		case errors.Is(cerr, checksum.ErrComposite) && c.full:
			return c.checkComposite(v, f, size, sent)
		case errors.Is(cerr, checksum.ErrComposite):
			v.unverified(UnverifiedComposite, cerr.Error())
		default:
			v.unverified(UnverifiedUnsupported, cerr.Error())
		}
	}
	return nil
}

// verifyMD5 checks the MD5 ETag: from the hash computed in order for a
// whole-object fetch, else by reading the written file back in order.
func (c *verifier) verifyMD5(v *Verification, f File, size int64) error {
	if c.encrypted {
		v.unverified(UnverifiedEncrypted, "the etag of an SSE-KMS or SSE-C object is not its md5")
		return nil
	}
	var got string
	switch r, ok := f.(io.ReaderAt); {
	case c.streamed != nil:
		if got = hex.EncodeToString(c.streamed.Sum(nil)); got != c.etag {
			return Permanent(fmt.Errorf("%w: md5 etag %s, data has %s: the %d bytes written to %s are wrong", ErrChecksum, c.etag, got, size, c.stream))
		}
	case c.md5 != nil:
		got = hex.EncodeToString(c.md5.Sum(nil))
	case ok:
		var err error
		if got, err = md5Of(r, size); err != nil {
			return fmt.Errorf("read back for md5: %w", err)
		}
	default:
		v.unverified(UnverifiedUnreadable, "the destination cannot be read back in order for md5")
		return nil
	}
	if got != c.etag {
		return Permanent(fmt.Errorf("%w: md5 etag %s, data has %s", ErrChecksum, c.etag, got))
	}
	v.Checksums = append(v.Checksums, "md5")
	return nil
}

// checkDigest compares the object's digest with the hash of the size
// bytes of f, read back in order (or summed as a Stream passed them on),
// into v: a mismatch fails the object before its commit.
func (c *verifier) checkDigest(v *Verification, f File, size int64) error {
	d, h := c.digest, c.digestSum
	if h == nil {
		r, ok := f.(io.ReaderAt)
		if !ok {
			v.unverified(UnverifiedUnreadable, "the destination cannot be read back in order for "+d.Name)
			return nil
		}
		h = d.New()
		if _, err := io.Copy(h, io.NewSectionReader(r, 0, size)); err != nil {
			return fmt.Errorf("read back for %s: %w", d.Name, err)
		}
	}
	if got := h.Sum(nil); !bytes.Equal(got, d.Sum) {
		from := "given"
		if d.Offered {
			from = "sent by the source"
		}
		err := fmt.Errorf("%w: %s %x %s, data has %x", ErrChecksum, d.Name, d.Sum, from, got)
		if c.digestSum != nil {
			err = fmt.Errorf("%w: the %d bytes written to %s are wrong", err, size, c.stream)
		}
		return Permanent(err)
	}
	v.Checksums = append(v.Checksums, d.Name)
	return nil
}

// md5Of reads size bytes of r in order and returns their MD5.
func md5Of(r io.ReaderAt, size int64) (string, error) {
	h := md5.New()
	if _, err := io.Copy(h, io.NewSectionReader(r, 0, size)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// partSum is what one range computes as its bytes stream past: its CRC
// and, for a whole-object fetch under --verify full, the MD5. The zero
// partSum computes nothing.
type partSum struct {
	run checksum.Running
	on  bool
	md5 hash.Hash
}

// begin starts the CRC once a whole-object response said which one.
func (ps *partSum) begin(c *verifier) {
	if ps.on {
		return
	}
	c.mu.Lock()
	alg := c.alg
	c.mu.Unlock()
	if alg != "" {
		ps.run, ps.on = checksum.Start(alg), true
	}
}

// update is called on the hot path with each buffer of data, in order.
func (ps *partSum) update(p []byte) {
	if ps.on {
		ps.run.Update(p)
	}
	if ps.md5 != nil {
		ps.md5.Write(p)
	}
}

// restart forgets what an earlier attempt summed, for an attempt that
// starts the part over.
func (ps *partSum) restart() {
	if ps.on {
		ps.run = checksum.Start(ps.run.Algorithm())
	}
	if ps.md5 != nil {
		ps.md5.Reset()
	}
}

func sumToken(alg checksum.Algorithm, r checksum.Running) string {
	return fmt.Sprintf("%s=%x", alg, r.Sum())
}

// readBack recomputes the CRC of bytes [off, off+n) from what f reads
// back (f must be an io.ReaderAt) and returns it only if it equals sum,
// the CRC an earlier run computed as the bytes arrived. So a partial file
// changed between runs is caught, and "verified" always covers the bytes
// that reach the final name. It reports false when the bytes must be
// fetched again. With nothing to verify (no checksum, or --verify off)
// the journal is taken as it is.
func (c *verifier) readBack(f File, off, n int64, sum string) (checksum.Running, bool) {
	if c == nil || c.parts == nil {
		return checksum.Running{}, true
	}
	alg, hexSum, ok := strings.Cut(sum, "=")
	if !ok || alg != string(c.alg) {
		return checksum.Running{}, false
	}
	var v uint64
	if _, err := fmt.Sscanf(hexSum, "%x", &v); err != nil {
		return checksum.Running{}, false
	}
	r, ok := f.(io.ReaderAt)
	if !ok {
		return checksum.Running{}, false
	}
	got := checksum.Start(c.alg)
	if _, err := io.Copy(&got, io.NewSectionReader(r, off, n)); err != nil || got.Sum() != v || got.Len() != n {
		return checksum.Running{}, false
	}
	return got, true
}

// summing returns b, or for a part writer, which reads the body itself,
// b with a reader that sums what it reads into ps (not a Dataless body,
// which carries no data).
func (ps *partSum) summing(b *Body) *Body {
	_, ref := b.ReadCloser.(Dataless)
	if ref || !ps.on && ps.md5 == nil {
		return b
	}
	tee := *b
	tee.ReadCloser = summingBody{b.ReadCloser, ps}
	return &tee
}

// summingBody sums what a PartWriter reads from a body.
type summingBody struct {
	io.ReadCloser
	ps *partSum
}

func (s summingBody) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	s.ps.update(p[:n])
	return n, err
}
