package s3store

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3pd/s3pd/pkg/checksum"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// What an upload calls verified: the destination's own checksum of the
// object it stored, from the answer to the PutObject or the
// CompleteMultipartUpload, else from a HEAD with checksum mode, equals the
// checksum of the bytes sent, and its size is theirs. A server that keeps
// no checksum has only its size checked; one that echoed each part's
// checksum but keeps none of the whole object checked the parts.

// sent is what an upload sent of one object, to check what landed.
type sent struct {
	key  string
	size int64
	// sum is the full-object checksum of the bytes sent, in alg.
	sum string
	// echoed says every part's answer carried its checksum, as S3's do
	// when it checked it on arrival.
	echoed bool
	// answered says a checksum in the answer to the request that made
	// the object is the server's own of what it stored (a header it
	// checked before storing, or one it combined from the parts): no HEAD
	// is needed.
	answered bool
	// headed says a HEAD's checksum is the server's own. Not for a
	// PutObject that sent its checksum as a header: a store that checks
	// nothing may keep that header and return it as it came (gofakes3
	// does), so it proves nothing; it can still show a mismatch.
	headed bool
}

// landed checks what the destination stored of s, given got, the
// full-object checksum the answer to the request that made the object
// carried ("" when none). It returns how the destination was checked,
// or an error that wraps transfer.ErrChecksum when what it stored is not
// what was sent; the wrong object is then deleted.
func (u *UploadSink) landed(ctx context.Context, s sent, got string) (transfer.Verification, error) {
	alg := u.opts.ChecksumAlgorithm
	if fullObject(alg, got) && s.answered {
		return u.compareLanded(ctx, s, got)
	}
	in := &s3.HeadObjectInput{Bucket: aws.String(u.bucket), Key: aws.String(s.key), ChecksumMode: types.ChecksumModeEnabled}
	u.opts.Req.applyHead(in)
	var out *s3.HeadObjectOutput
	err := again(ctx, func() (err error) { out, err = u.client.HeadObject(ctx, in, noRetry); return err })
	if err != nil {
		if fullObject(alg, got) {
			return u.compareLanded(ctx, s, got)
		}
		return transfer.Verification{Unverified: transfer.UnverifiedLookupFailed,
			Detail: fmt.Sprintf("head %s after the upload: %v", u.url(s.key), statusError(err))}, nil
	}
	if stored := aws.ToInt64(out.ContentLength); stored != s.size {
		return transfer.Verification{}, u.wrongLanded(ctx, s.key, fmt.Sprintf("the server stored %d bytes, %d were sent", stored, s.size))
	}
	head := sumOf(alg, out.ChecksumCRC64NVME, out.ChecksumCRC32C)
	switch {
	case fullObject(alg, got):
		return u.compareLanded(ctx, s, got)
	case fullObject(alg, head) && (s.headed || head != s.sum):
		return u.compareLanded(ctx, s, head)
	case s.echoed:
		return transfer.Verification{Unverified: transfer.UnverifiedPartsOnly,
			Detail: "S3 checked each part's checksum on arrival and keeps no checksum of the whole object; its size matched"}, nil
	case head != "" && !strings.Contains(head, "-") && !wellFormed(alg, head):
		return transfer.Verification{Unverified: transfer.UnverifiedNoChecksum,
			Detail: fmt.Sprintf("the server's %s %q is not %d bytes: only the size of what it stored was checked",
				strings.ToLower(alg), head, checksum.Algorithm(alg).Size())}, nil
	}
	return transfer.Verification{Unverified: transfer.UnverifiedNoChecksum,
		Detail: "the server's answers carried no checksum of what it stored: only its size was checked"}, nil
}

// compareLanded compares the server's full-object checksum got with
// the bytes sent.
func (u *UploadSink) compareLanded(ctx context.Context, s sent, got string) (transfer.Verification, error) {
	alg := u.opts.ChecksumAlgorithm
	if got != s.sum {
		return transfer.Verification{}, u.wrongLanded(ctx, s.key,
			fmt.Sprintf("the server's %s of what it stored is %s, the bytes sent have %s", strings.ToLower(alg), got, s.sum))
	}
	return transfer.Verification{Checksums: []string{strings.ToLower(alg)}}, nil
}

// wrongLanded deletes an object that landed other than it was sent, so
// that nothing wrong stays at its key, and returns the error that fails
// it.
func (u *UploadSink) wrongLanded(ctx context.Context, key, why string) error {
	in := &s3.DeleteObjectInput{Bucket: aws.String(u.bucket), Key: aws.String(key)}
	if u.opts.Req.ExpectedBucketOwner != "" {
		in.ExpectedBucketOwner = aws.String(u.opts.Req.ExpectedBucketOwner)
	}
	what := "deleted it"
	if _, err := u.client.DeleteObject(ctx, in); err != nil {
		what = fmt.Sprintf("could not delete it: %v", statusError(err))
	}
	return transfer.Permanent(fmt.Errorf("%s: %s (%s): %w", u.url(key), why, what, transfer.ErrChecksum))
}

// fullObject says v is a full-object checksum of alg's width: not a
// composite ("...-N"), not empty.
func fullObject(alg, v string) bool {
	return v != "" && !strings.Contains(v, "-") && wellFormed(alg, v)
}

// algorithm is alg as the checksum package names it.
func algorithm(alg string) checksum.Algorithm {
	if alg == CRC32C {
		return checksum.CRC32C
	}
	return checksum.CRC64NVME
}

// summingReader sums what the request reads of a body whose checksum
// goes as a trailer, so that what landed can be compared with it.
type summingReader struct {
	r   io.Reader
	run *checksum.Running
}

func (s summingReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.run.Update(p[:n])
	return n, err
}

// again runs fn until it succeeds, as the commit budget allows
// (transfer.Commit), while its error is one that got no answer (a
// connection that could not be made, over a card that lost its way: the
// SDK does not retry those) or a retriable one (500, 503). Each try goes
// over the transport's next lane: once every part is in, the object must
// not fail for want of its last requests. It returns fn's last error as
// fn returned it.
func again(ctx context.Context, fn func() error) error {
	var last error
	err := transfer.BudgetFor(transfer.Commit).Retry(ctx, func() error {
		if last = fn(); last != nil && dialFailed(last) {
			return retriable{last}
		}
		return statusError(last)
	})
	if err == nil {
		return nil
	}
	return last
}

// complete completes a multipart upload, tried again as again does. A
// later try answered NoSuchUpload means an earlier one completed it and
// its answer was lost: what landed is checked next (landed), as after
// any Complete.
func (u *UploadSink) complete(ctx context.Context, in *s3.CompleteMultipartUploadInput) (*s3.CompleteMultipartUploadOutput, error) {
	var out *s3.CompleteMultipartUploadOutput
	tries := 0
	err := again(ctx, func() (err error) {
		tries++
		out, err = u.client.CompleteMultipartUpload(ctx, in, noRetry)
		if err != nil && tries > 1 && noUploads(err) {
			out, err = &s3.CompleteMultipartUploadOutput{}, nil
		}
		return err
	})
	return out, err
}
