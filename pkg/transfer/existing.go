package transfer

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/s3pd/s3pd/pkg/checksum"
)

// Existing is implemented by sinks that can hand back the file already at
// an object's final name, so that Options.VerifyExisting can check it
// against the object's checksum instead of trusting its size and mtime.
type Existing interface {
	// OpenExisting opens what is at obj's final name for reading, in
	// order; it fails when there is no regular file there.
	OpenExisting(obj Object) (io.ReadCloser, error)
}

// verifyExisting decides about an object the sink's Check skipped (skip is its
// error). With VerifyExisting, a file at the final name is read and
// compared with the object's checksum: it stays skipped when it matches
// (or when nothing can be compared), and verifyExisting returns nil, so the
// object is fetched again and replaces it, when it differs.
func (e *Engine) verifyExisting(ctx context.Context, o *Object, skip error) error {
	why := SkipReason(skip)
	ex, ok := e.sink.(Existing)
	if !e.opts.VerifyExisting || !ok || why == "" || o.Size < 0 {
		return skip
	}
	r, err := ex.OpenExisting(*o)
	if err != nil {
		return skip // nothing to read: a directory marker, say
	}
	defer r.Close()
	alg, want, how := e.existingWant(ctx, o)
	if how != "" {
		return &SkipError{Reason: why + "; not verified: " + how}
	}
	var sum hash.Hash
	var crc checksum.Running
	var w io.Writer
	if alg == "md5" {
		sum = md5.New()
		w = sum
	} else {
		crc = checksum.Start(checksum.Algorithm(alg))
		w = &crc
	}
	n, err := io.Copy(w, r)
	if err != nil {
		return Permanent(fmt.Errorf("read the existing file to verify it: %w", err))
	}
	match := n == o.Size
	if match && alg == "md5" {
		match = hex.EncodeToString(sum.Sum(nil)) == want
	} else if match {
		verdict, _ := checksum.Compare(checksum.Algorithm(alg), want, crc.Sum())
		match = verdict == checksum.Match
	}
	if !match {
		return nil // damaged: fetch it again
	}
	return &SkipError{Reason: why + "; verified " + strings.ToLower(alg), Intact: true}
}

// existingWant returns the checksum to compare an existing file with:
// the object's full-object CRC (from the listing or a lookup), else the
// MD5 of an ETag that is one; or, in how, why there is none.
func (e *Engine) existingWant(ctx context.Context, o *Object) (alg, want, how string) {
	values := o.Checksums
	if pickAlgorithm(values) == "" {
		if cs, ok := e.lanes[0].Source.(Checksummer); ok {
			hctx, cancel := context.WithTimeout(ctx, 2*e.opts.StallTimeout)
			got, err := cs.Checksums(hctx, o)
			cancel()
			if err != nil && ctx.Err() == nil {
				return "", "", "checksum lookup failed: " + err.Error()
			}
			values = got
		}
	}
	if a := pickAlgorithm(values); a != "" {
		return string(a), values[string(a)], ""
	}
	if checksum.IsMD5ETag(o.ETag) && !e.opts.OpaqueETags {
		return "md5", strings.Trim(o.ETag, `"`), ""
	}
	return "", "", "the object has no checksum"
}
