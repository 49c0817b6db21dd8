package job

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestStreamAccountsForItsObject: a copy of standard input has one
// object, which is listed and ends in one verdict, transferred or
// failed, as the engine's runs account for theirs (a summary of
// "1 transferred; 0 listed", before).
func TestStreamAccountsForItsObject(t *testing.T) {
	ts := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory})
	client := emuClient(ts)
	for _, tt := range []struct {
		name       string
		in         io.Reader
		wantFailed int64
	}{
		{name: "transferred", in: bytes.NewReader(bytes.Repeat([]byte("x"), 300<<10))},
		{name: "failed", in: io.MultiReader(bytes.NewReader([]byte("x")), errReader{}), wantFailed: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &stream{sink: s3store.NewUploadSink(client, s3emu.DefaultBucket, s3store.UploadOptions{ChecksumAlgorithm: s3store.CRC64NVME}),
				key: "stdin/" + tt.name, alg: s3store.CRC64NVME, in: tt.in, partSize: 5 << 20, parts: 2}
			sum, err := s.transfer(context.Background(), transfer.NopObserver{}, false)
			if (err != nil) != (tt.wantFailed > 0) {
				t.Fatalf("transfer: %v, want failed %d", err, tt.wantFailed)
			}
			if sum.Listed != 1 || sum.Failed != tt.wantFailed || sum.Objects != 1-tt.wantFailed {
				t.Errorf("summary: listed %d, transferred %d, failed %d; want 1 listed, %d failed", sum.Listed, sum.Objects, sum.Failed, tt.wantFailed)
			}
			if aerr := sum.Account("the stream"); aerr != nil {
				t.Error(aerr)
			}
		})
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("standard input broke") }
