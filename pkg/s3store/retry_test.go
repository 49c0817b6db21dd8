package s3store

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// quick is budget b with its attempts and waits of a millisecond, for
// the kinds whose real waits add up to seconds.
func quick(b transfer.Backoff) transfer.Backoff {
	b.Base, b.Cap = time.Millisecond, time.Millisecond
	return b
}

// TestRetryBudgets sends each kind of request over real HTTP to the
// emulator, failing it with a 500 one time fewer than its budget's
// attempts (it must succeed) and as many times (it must fail): each
// kind is retried exactly as the table says. Kinds whose waits add up
// to seconds keep their attempts and wait a millisecond (quick); the
// others run on the table's own budget, waits and all.
func TestRetryBudgets(t *testing.T) {
	const key = "k"
	data := randomBytes(3<<19, 5) // a stream of two 1 MiB parts
	put := func(t *testing.T, c *s3.Client) {
		if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String(key), Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
	}
	stream := func(data []byte) func(*testing.T, *s3.Client, string) error {
		return func(_ *testing.T, c *s3.Client, _ string) error {
			_, err := NewUploadSink(c, testBucket, UploadOptions{}).Stream(context.Background(), key, bytes.NewReader(data), 1<<20, 1, func(int64) {})
			return err
		}
	}
	rows := []struct {
		kind   transfer.Kind
		method string                           // of the fault rule
		setup  func(t *testing.T, c *s3.Client) // before the faults (nil: none)
		send   func(t *testing.T, c *s3.Client, endpoint string) error
	}{
		{transfer.RangeRead, "GET", put, func(t *testing.T, c *s3.Client, _ string) error {
			eng, err := transfer.New([]transfer.Lane{{Name: "emu", Source: NewSource(c, Target{Bucket: testBucket})}}, discardSink{},
				transfer.Options{Workers: 1, Backoff: quick(transfer.BudgetFor(transfer.RangeRead))})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := eng.Run(context.Background())
			if err == nil && sum.Failed > 0 {
				err = fmt.Errorf("%d objects failed", sum.Failed)
			}
			return err
		}},
		{transfer.ListPage, "LIST", nil, func(t *testing.T, c *s3.Client, _ string) error {
			src := NewSource(c, Target{Bucket: testBucket})
			l := &listing{get: src.get, backoff: quick(transfer.BudgetFor(transfer.ListPage))}
			_, err := l.next(context.Background(), "")
			return err
		}},
		{transfer.Lookup, "HEAD", put, func(t *testing.T, c *s3.Client, _ string) error {
			_, err := NewSource(c, Target{Bucket: testBucket}).Stat(context.Background(), key)
			return err
		}},
		{transfer.StreamPart, "PUT", nil, stream(data)},
		{transfer.StreamPart, "PUT", nil, stream(data[:1000])}, // one PutObject
		{transfer.Commit, "COMPLETE", nil, stream(data)},
		{transfer.StoreCall, "HEAD", put, func(t *testing.T, c *s3.Client, endpoint string) error {
			sdk := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
				Credentials: aws.AnonymousCredentials{}, HTTPClient: awshttp.NewBuildableClient(),
				Retryer: sdkRetryer(quick(transfer.BudgetFor(transfer.StoreCall)), nil)})
			_, err := sdk.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String(key)})
			return err
		}},
	}
	tested := map[transfer.Kind]bool{}
	for _, tt := range rows {
		tested[tt.kind] = true
	}
	for _, b := range transfer.Budgets() {
		if !tested[b.Kind] {
			t.Errorf("no row for kind %s: every kind is tested", b.Kind)
		}
	}
	for _, tt := range rows {
		attempts := transfer.BudgetFor(tt.kind).MaxAttempts
		for _, fails := range []int{attempts - 1, attempts} {
			t.Run(fmt.Sprintf("%s/%d failures", tt.kind, fails), func(t *testing.T) {
				faults := s3emu.NewFaults()
				ts := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory, Buckets: []string{testBucket}, Faults: faults})
				c := testClient(ts.URL)
				if tt.setup != nil {
					tt.setup(t, c)
				}
				faults.Add(s3emu.Rule{Key: "*", Method: tt.method, Times: fails, Action: s3emu.Status{Code: 500}})
				err := tt.send(t, c, ts.URL)
				if ok := fails < attempts; (err == nil) != ok {
					t.Fatalf("%d attempts failed, budget %d: error %v, want success %v", fails, attempts, err, ok)
				}
				if got := ts.Server.Stats().FaultsInjected; got != int64(fails) {
					t.Errorf("%d faults injected, want %d: every attempt of the budget was made, and no more", got, fails)
				}
			})
		}
	}
}
