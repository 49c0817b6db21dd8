package transfer_test

import (
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// TestOpaqueETagsAreNotMD5s checks that with Options.OpaqueETags an
// ETag of the MD5 form is neither checked (--verify full) nor offered as
// an MD5: the object without a checksum is unverified and says why.
func TestOpaqueETagsAreNotMD5s(t *testing.T) {
	for _, verify := range []transfer.Verify{transfer.VerifyAuto, transfer.VerifyFull} {
		src := transfertest.NewSource()
		o := src.Add("k", transfertest.Data("k", 3*part+1))
		o.Checksums, o.ChecksumAlgorithm = nil, ""
		o.ETag = `"00000000000000000000000000000000"` // an MD5's form, not the bytes' MD5
		src.Put(o, src.Data("k"))
		_, rec := run(t, src, transfertest.NewSink(), transfer.Options{Verify: verify, OpaqueETags: true})
		r := result(t, rec, "k")
		if r.Err != nil || r.Verification.Unverified != transfer.UnverifiedNoChecksum || !strings.Contains(r.Verification.Detail, "ETag is not an MD5") {
			t.Errorf("verify %v: verification %+v, error %v; want unverified no-checksum, saying the ETag is not an MD5", verify, r.Verification, r.Err)
		}
	}
}
