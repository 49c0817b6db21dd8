package job

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestStreamAccountsForItsObject: a copy of standard input has one
// object, which is listed and ends in one verdict, transferred or
// failed, as the engine's runs account for theirs (a summary of
// "1 transferred; 0 listed", before).
func TestStreamAccountsForItsObject(t *testing.T) {
	ts := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory})
	dest := s3store.Dest(s3store.DestOptions{Client: s3store.ClientOptions{Region: "us-east-1", EndpointURL: ts.URL, NoSignRequest: true},
		Upload: s3store.UploadOptions{ChecksumAlgorithm: s3store.CRC64NVME}})
	dst, err := dest.Open(context.Background(), "s3://"+s3emu.DefaultBucket+"/", store.DestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	streamer, ok := dst.Sink.(store.Streamer)
	if !ok {
		t.Fatalf("the S3 destination's sink %T takes no stream", dst.Sink)
	}
	for _, tt := range []struct {
		name       string
		in         io.Reader
		wantFailed int64
	}{
		{name: "transferred", in: bytes.NewReader(bytes.Repeat([]byte("x"), 300<<10))},
		{name: "failed", in: io.MultiReader(bytes.NewReader([]byte("x")), errReader{}), wantFailed: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &stream{sink: streamer, key: "stdin/" + tt.name, in: tt.in, opts: store.StreamOptions{PartSize: 5 << 20, Parts: 2}}
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
