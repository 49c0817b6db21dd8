package s3store

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestStatusErrorBehaviours pins how S3's answers read to the engine,
// which knows only behaviours: retriable, throttle, skip, and its own
// sentinels for "not there" and "changed".
func TestStatusErrorBehaviours(t *testing.T) {
	tests := []struct {
		status             int
		code               string
		retriable, slow    bool
		skip               bool
		notFound, modified bool
	}{
		{503, "SlowDown", true, true, false, false, false},
		{503, "", true, true, false, false, false},
		{429, "", true, true, false, false, false},
		{500, "InternalError", true, false, false, false, false},
		{502, "", true, false, false, false, false},
		{400, "RequestTimeout", true, false, false, false, false},
		{403, "RequestTimeTooSkewed", true, false, false, false, false},
		{403, "AccessDenied", false, false, false, false, false},
		{400, "ExpiredToken", false, false, false, false, false},
		{403, "SignatureDoesNotMatch", false, false, false, false, false},
		{404, "NoSuchKey", false, false, false, true, false},
		{404, "NoSuchBucket", false, false, false, true, false},
		{404, "", false, false, false, true, false},
		{403, "InvalidObjectState", false, false, true, false, false},
		{412, "PreconditionFailed", false, false, false, false, true},
		{400, "InvalidArgument", false, false, false, false, false},
	}
	for _, tt := range tests {
		se := &StatusError{Status: tt.status, Code: tt.code}
		err := error(se)
		if got := transfer.Retriable(err); got != tt.retriable {
			t.Errorf("%v: Retriable %v, want %v", se, got, tt.retriable)
		}
		if got := se.Throttle(); got != tt.slow {
			t.Errorf("%v: Throttle %v, want %v", se, got, tt.slow)
		}
		if got := transfer.SkipReason(err) != ""; got != tt.skip {
			t.Errorf("%v: skipped %v, want %v", se, got, tt.skip)
		}
		if got := errors.Is(err, transfer.ErrNotFound); got != tt.notFound {
			t.Errorf("%v: is ErrNotFound %v, want %v", se, got, tt.notFound)
		}
		if got := errors.Is(err, transfer.ErrModified); got != tt.modified {
			t.Errorf("%v: is ErrModified %v, want %v", se, got, tt.modified)
		}
	}
}

// TestEngineReadsS3Answers runs the engine over real HTTP against the
// emulator answering with S3 error codes, and checks what the engine made
// of each: an archived object is skipped, a missing one fails without a
// retry, a SlowDown is retried and counted.
func TestEngineReadsS3Answers(t *testing.T) {
	faults := s3emu.NewFaults(
		s3emu.Rule{Key: "archived", Times: -1, Action: s3emu.Status{Code: 403, S3Code: "InvalidObjectState"}},
		s3emu.Rule{Key: "gone", Times: -1, Action: s3emu.Status{Code: 404, S3Code: "NoSuchKey"}},
		s3emu.Rule{Key: "busy", Times: 2, Action: s3emu.Status{Code: 503, S3Code: "SlowDown"}},
	)
	ts := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory, Buckets: []string{testBucket}, Faults: faults})
	client := testClient(ts.URL)
	for _, key := range []string{"archived", "gone", "busy"} {
		if _, err := client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String(key), Body: bytes.NewReader([]byte("data of " + key))}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	results := map[string]transfer.Result{}
	obs := &resultObserver{done: func(r transfer.Result) { mu.Lock(); results[r.Object.Key] = r; mu.Unlock() }}
	eng, err := transfer.New([]transfer.Lane{{Name: "emu", Source: NewSource(client, Target{Bucket: testBucket})}}, discardSink{},
		transfer.Options{Workers: 1, Observer: obs, Backoff: transfer.Backoff{Base: 1, Cap: 1, MaxAttempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := eng.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if r := results["archived"]; r.Err != nil || r.Skipped == "" {
		t.Errorf("archived: skipped %q, error %v; want a skip reason and no error", r.Skipped, r.Err)
	}
	if r := results["gone"]; !errors.Is(r.Err, transfer.ErrNotFound) {
		t.Errorf("gone: error %v, want ErrNotFound", r.Err)
	}
	if r := results["busy"]; r.Err != nil || r.Bytes != int64(len("data of busy")) {
		t.Errorf("busy: %d bytes, error %v; want it whole after the SlowDowns", r.Bytes, r.Err)
	}
	if sum.Objects != 1 || sum.Skipped != 1 || sum.Failed != 1 || sum.SlowDowns != 2 {
		t.Errorf("summary %+v, want 1 transferred, 1 skipped, 1 failed, 2 SlowDowns", sum)
	}
}

// resultObserver hands each object's result to done.
type resultObserver struct {
	transfer.NopObserver
	done func(transfer.Result)
}

func (o *resultObserver) ObjectDone(r transfer.Result) { o.done(r) }

// discardSink drops every byte.
type discardSink struct{}

func (discardSink) Create(context.Context, transfer.Object) (transfer.File, error) {
	return discardFile{}, nil
}

type discardFile struct{}

func (discardFile) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (discardFile) Commit() error                          { return nil }
func (discardFile) Abort() error                           { return nil }
