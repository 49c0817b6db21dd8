package s3store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

func TestStreamPartSize(t *testing.T) {
	tests := []struct {
		part, expected, want int64
	}{
		{8 << 20, 0, 8 << 20},                  // unknown: the part size
		{8 << 20, 80 << 30, 9 << 20},           // 80 GiB in 8 MiB parts is 10,240: 8.2 MiB, rounded to 9
		{8 << 20, 8 << 20 * MaxParts, 8 << 20}, // exactly 10,000 parts
		{1 << 10, 100 << 20, 1 << 20},          // at least whole MiB
	}
	for _, tt := range tests {
		got := StreamPartSize(tt.part, tt.expected)
		if got != tt.want {
			t.Errorf("StreamPartSize(%d, %d) = %d, want %d", tt.part, tt.expected, got, tt.want)
		}
		if tt.expected > 0 && (tt.expected+got-1)/got > MaxParts {
			t.Errorf("StreamPartSize(%d, %d) = %d needs over %d parts", tt.part, tt.expected, got, MaxParts)
		}
	}
}

// aheadReader records how far reading ever ran ahead of the bytes sent.
type aheadReader struct {
	r          io.Reader
	read, sent atomic.Int64
	maxAhead   atomic.Int64
}

func (a *aheadReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	ahead := a.read.Add(int64(n)) - a.sent.Load()
	for m := a.maxAhead.Load(); ahead > m && !a.maxAhead.CompareAndSwap(m, ahead); m = a.maxAhead.Load() {
	}
	return n, err
}

// TestStreamIsBoundedAndChecked: a stream's memory is conc+1 parts at
// most, whatever its length; the object is exactly the stream, with the
// full-object checksum checked.
func TestStreamIsBoundedAndChecked(t *testing.T) {
	_, c := emulator(t)
	data := randomBytes(24<<20, 5)
	const part, conc = 1 << 20, 2
	a := &aheadReader{r: bytes.NewReader(data)}
	u := NewUploadSink(c, testBucket, UploadOptions{})
	res, err := u.Stream(context.Background(), "s", a, part, conc, func(n int64) { a.sent.Add(n) })
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(getObject(t, c, testBucket, "s"), data) {
		t.Fatal("the object differs from the stream")
	}
	if res.Parts != 24 || res.Bytes != int64(len(data)) || !res.Landed.Verified() || res.Checksum == "" {
		t.Errorf("result %+v, want 24 parts, %d bytes, verified", res, len(data))
	}
	if got := a.maxAhead.Load(); got > (conc+1)*part {
		t.Errorf("reading ran %d bytes ahead of sending, over %d (conc+1 parts)", got, (conc+1)*part)
	}
}

// failingReader fails after n bytes.
type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("broken pipe")
	}
	k := min(len(p), f.n)
	f.n -= k
	return k, nil
}

// TestStreamAbortsOnError: a stream that fails part way leaves no
// multipart upload and no object.
func TestStreamAbortsOnError(t *testing.T) {
	_, c := emulator(t)
	u := NewUploadSink(c, testBucket, UploadOptions{})
	_, err := u.Stream(context.Background(), "broken", &failingReader{3 << 20}, 1<<20, 2, func(int64) {})
	if err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("error %v, want the read's", err)
	}
	ups, err := u.pendingUploads(context.Background(), "broken")
	if err != nil && !noUploads(err) {
		t.Fatal(err)
	}
	if len(ups) != 0 {
		t.Errorf("%d multipart uploads left", len(ups))
	}
}

// TestStreamPartFailures: a part the server fails once is sent again
// from memory; one it refuses ends the stream at once, even while the
// read of the next part blocks, and aborts the upload.
func TestStreamPartFailures(t *testing.T) {
	for _, tt := range []struct {
		name   string
		action s3emu.Action
		times  int
		ok     bool
	}{
		{"a 500 is sent again", s3emu.Status{Code: 500}, 1, true},
		{"a 403 ends the stream", s3emu.Status{Code: 403}, -1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory, Buckets: []string{testBucket},
				Faults: s3emu.NewFaults(s3emu.Rule{Key: "f", Method: "PUT", Attempt: 2, Times: tt.times, Action: tt.action})})
			c := testClient(ts.URL)
			u := NewUploadSink(c, testBucket, UploadOptions{})
			data := randomBytes(3<<20, 7)
			var r io.Reader = bytes.NewReader(data)
			if !tt.ok {
				pr, pw := io.Pipe() // three parts, then a read that never returns
				go pw.Write(data)
				t.Cleanup(func() { pw.Close() })
				r = pr
			}
			done := make(chan error, 1)
			go func() {
				_, err := u.Stream(context.Background(), "f", r, 1<<20, 2, func(int64) {})
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the stream did not end")
			}
			if (err == nil) != tt.ok {
				t.Fatalf("error %v, want success %v", err, tt.ok)
			}
			if tt.ok && !bytes.Equal(getObject(t, c, testBucket, "f"), data) {
				t.Error("the object differs from the stream")
			}
			ups, lerr := u.pendingUploads(context.Background(), "f")
			if lerr != nil && !noUploads(lerr) {
				t.Fatal(lerr)
			}
			if len(ups) != 0 {
				t.Errorf("%d multipart uploads left", len(ups))
			}
		})
	}
}
