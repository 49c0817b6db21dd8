package job

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// dropping is a broken mapping of a listing: it loses the keys that
// start with "/", as a listing decoded one way and mapped another would.
type dropping struct{ inner transfer.Lister }

func (d dropping) List(ctx context.Context, emit func(transfer.Object) error) error {
	return d.inner.List(ctx, func(o transfer.Object) error {
		if strings.HasPrefix(o.Key, "/") {
			return nil
		}
		return emit(o)
	})
}

// TestTransferAccountsForEveryListedKey: a run whose listing loses a
// key between what the job lists and the engine fails with
// ErrUnaccounted, naming the difference, with or without the space check
// and the include/exclude filter; the same run without the loss accounts
// for every key (the unsafe one failed, named).
func TestTransferAccountsForEveryListedKey(t *testing.T) {
	ts := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory})
	client := emuClient(ts)
	for _, k := range []string{"/abs-x", "ok/plain", "ok/skip.tmp"} {
		if _, err := client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(s3emu.DefaultBucket), Key: aws.String(k), Body: bytes.NewReader([]byte(k))}); err != nil {
			t.Fatal(err)
		}
	}
	lanes := emuRegistry(client)
	noTmp := func(o transfer.Object) bool { return !strings.HasSuffix(o.Name, ".tmp") }
	for _, tt := range []struct {
		name       string
		space      bool
		filter     func(transfer.Object) bool
		broken     bool
		wantFailed int64
		excluded   int64
	}{
		{name: "broken", broken: true},
		{name: "broken, space check", space: true, broken: true},
		{name: "broken, space check, filter", space: true, filter: noTmp, broken: true},
		{name: "broken, filter", filter: noTmp, broken: true},
		{name: "whole", wantFailed: 1},
		{name: "whole, space check, filter", space: true, filter: noTmp, wantFailed: 1, excluded: 1},
		{name: "whole, filter", filter: noTmp, wantFailed: 1, excluded: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			get := &GetSpec{Source: emuURL(""), Stores: lanes, Read: store.Options{Prefix: true, FirstRange: 256 << 10, FanOut: 16}, URL: "s3://bench/", Dest: t.TempDir(), Stdout: io.Discard, OrderWindow: 1 << 20}
			run, err := Open(context.Background(), Spec{Get: get, Engine: transfer.Options{PartSize: 256 << 10}, SpaceCheck: tt.space})
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			h := Hooks{Filter: tt.filter}
			if tt.broken {
				h.Lister = func(l transfer.Lister) transfer.Lister { return dropping{l} }
			}
			sum, err := run.Transfer(context.Background(), h)
			if tt.broken {
				if !errors.Is(err, transfer.ErrUnaccounted) || !strings.Contains(err.Error(), "1 listed object without a verdict") {
					t.Fatalf("transfer: %+v, %v; want ErrUnaccounted naming 1 object", sum, err)
				}
				return
			}
			if err != nil || sum.Failed != tt.wantFailed || sum.Excluded != tt.excluded || sum.Listed != 3 {
				t.Fatalf("transfer: %+v, %v; want 3 listed, %d excluded, %d failed", sum, err, tt.excluded, tt.wantFailed)
			}
		})
	}
}
