package httpstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/httpstore"
	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// The engine's plan in these tests: 64 KiB parts of a file of about
// 1 MiB (17 parts, the last one short), a probe of one part.
const (
	partSize = 64 << 10
	fileSize = 16*partSize + 12345
)

// quick retries: a test that must fail fails in milliseconds.
var quick = transfer.Backoff{Base: time.Millisecond, Cap: 5 * time.Millisecond, MaxAttempts: 3}

// fetch runs the engine over items into dir with the real local sink,
// and returns the recorder of the run and its error.
func fetch(t *testing.T, ctx context.Context, dir string, items []httpstore.Item, observe transfer.Observer) (*transfertest.Recorder, transfer.Summary, error) {
	t.Helper()
	return fetchVerify(t, ctx, dir, items, observe, transfer.VerifyAuto)
}

// fetchVerify is fetch under verify.
func fetchVerify(t *testing.T, ctx context.Context, dir string, items []httpstore.Item, observe transfer.Observer, verify transfer.Verify) (*transfertest.Recorder, transfer.Summary, error) {
	t.Helper()
	return fetchInto(t, ctx, dir, local.Options{}, items, observe, verify)
}

// fetchInto is fetchVerify into a sink with lopts.
func fetchInto(t *testing.T, ctx context.Context, dir string, lopts local.Options, items []httpstore.Item, observe transfer.Observer, verify transfer.Verify) (*transfertest.Recorder, transfer.Summary, error) {
	t.Helper()
	store, err := httpstore.Open(ctx, httpstore.Options{Items: items, FirstRange: partSize, Backoff: quick})
	if err != nil {
		return nil, transfer.Summary{}, err
	}
	defer store.Close()
	lopts.ResumeMin = partSize
	sink, err := local.NewSink(dir, lopts)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	rec := transfertest.NewRecorder()
	obs := transfer.Observer(rec)
	if observe != nil {
		obs = transfer.Observers{rec, observe}
	}
	e, err := transfer.New(store.Lanes(), sink, transfer.Options{
		PartSize: partSize, MaxRequests: 8, Backoff: quick, Observer: obs, OpaqueETags: true, Verify: verify,
	})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(ctx)
	return rec, sum, err
}

// result is the outcome of the run's only object, the one at url.
func result(t *testing.T, rec *transfertest.Recorder, url string) transfer.Result {
	t.Helper()
	r, ok := rec.Result(httpstore.Redact(url))
	if !ok {
		t.Fatalf("no result for %s", url)
	}
	return r
}

// landed fails the test unless dir/name holds want.
func landed(t *testing.T, dir, name string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("read what landed: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes landed, not the %d bytes served (first difference at %d)", name, len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// absent fails the test if anything is at dir/name.
func absent(t *testing.T, dir, name string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s is at the final name after a failed run (stat: %v)", name, err)
	}
}

// TestRangedPartsLandTheFile: a server that takes Range is fetched in
// parallel parts, each pinned to the ETag probed (If-Match and
// If-Range), and the file lands byte for byte.
func TestRangedPartsLandTheFile(t *testing.T) {
	data := fileData(fileSize)
	srv := newFileServer(t, data, nil)
	dir := t.TempDir()
	rec, sum, err := fetch(t, context.Background(), dir, []httpstore.Item{{URL: srv.url("model.bin")}}, nil)
	if err != nil || sum.Failed != 0 {
		t.Fatalf("run: %v, %d failed", err, sum.Failed)
	}
	if r := result(t, rec, srv.url("model.bin")); r.Err != nil {
		t.Fatal(r.Err)
	}
	landed(t, dir, "model.bin", data)
	reqs := srv.requests()
	if len(reqs) < 10 {
		t.Fatalf("%d requests for %d parts: not fetched in parts", len(reqs), fileSize/partSize+1)
	}
	for i, r := range reqs[1:] { // the probe pins nothing yet
		if r.Range == "" || r.IfMatch != `"v1"` || r.IfRange != `"v1"` {
			t.Errorf("request %d: Range %q If-Match %q If-Range %q, want a range pinned to \"v1\"", i+1, r.Range, r.IfMatch, r.IfRange)
		}
	}
}

// TestServerWithoutRangesIsOneStream: a server that answers every GET
// with 200 and the whole file is read as one stream: the probe's answer
// is the whole transfer, and the file lands right.
func TestServerWithoutRangesIsOneStream(t *testing.T) {
	data := fileData(fileSize)
	srv := newFileServer(t, data, func(s *fileServer) { s.noRanges = true })
	dir := t.TempDir()
	rec, sum, err := fetch(t, context.Background(), dir, []httpstore.Item{{URL: srv.url("plain.txt")}}, nil)
	if err != nil || sum.Failed != 0 {
		t.Fatalf("run: %v, %d failed", err, sum.Failed)
	}
	if r := result(t, rec, srv.url("plain.txt")); r.Err != nil || !r.Object.NoRanges {
		t.Fatalf("result: %v, NoRanges %v", r.Err, r.Object.NoRanges)
	}
	landed(t, dir, "plain.txt", data)
	if n := len(srv.requests()); n != 1 {
		t.Fatalf("%d requests, want 1: the probe's whole-file answer is the stream", n)
	}
}

// TestManyURLsMixedServers: one run over several URLs, from a server
// that takes Range and one that does not, each under its own name; a
// server without Range gets one request beside its probe.
func TestManyURLsMixedServers(t *testing.T) {
	a, b := fileData(fileSize), bytes.Repeat([]byte("xyz"), 50_000)
	ranged := newFileServer(t, a, nil)
	plain := newFileServer(t, b, func(s *fileServer) { s.noRanges = true })
	dir := t.TempDir()
	items := []httpstore.Item{{URL: ranged.url("a.bin")}, {URL: plain.url("b.bin"), Name: "sub/b-renamed.bin"}, {URL: ranged.url("a.bin?x=1"), Name: "a-again.bin"}}
	_, sum, err := fetch(t, context.Background(), dir, items, nil)
	if err != nil || sum.Objects != 3 {
		t.Fatalf("run: %v, %d of 3 objects", err, sum.Objects)
	}
	landed(t, dir, "a.bin", a)
	landed(t, dir, "a-again.bin", a)
	landed(t, dir, "sub/b-renamed.bin", b)
	if n := len(plain.requests()); n != 2 {
		t.Fatalf("the server without Range got %d requests, want the probe and one GET", n)
	}
	probes := 0
	for _, r := range ranged.requests() {
		if r.Range == "bytes=0-0" {
			probes++
		}
	}
	if probes != 2 {
		t.Fatalf("%d one-byte probes to the ranged server, want 2 (one per URL)", probes)
	}
}

// TestFileChangedMidRunFails: the file changes on the server after the
// first range: the run fails with ErrModified, by a 412 to the pinned
// request or by the other version's validator, and leaves nothing at
// the final name. Each pin is tried: a strong ETag, Last-Modified when
// there is no ETag, and a server that ignores every condition.
func TestFileChangedMidRunFails(t *testing.T) {
	for _, tt := range []struct {
		name      string
		configure func(*fileServer)
	}{
		{"etag", func(s *fileServer) {}},
		{"last-modified", func(s *fileServer) { s.etag = "" }},
		{"weak etag and last-modified", func(s *fileServer) { s.etag = `W/"v1"` }},
		{"conditions ignored", func(s *fileServer) {
			s.hook = func(w http.ResponseWriter, r *http.Request, data []byte) bool {
				r.Header.Del("If-Match")
				r.Header.Del("If-Range")
				r.Header.Del("If-Unmodified-Since")
				return false
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFileServer(t, fileData(fileSize), func(s *fileServer) {
				tt.configure(s)
				s.changeAfter = 2 // the probe, then one range
			})
			dir := t.TempDir()
			url := srv.url("f.bin?X-Amz-Signature=SECRET")
			rec, sum, err := fetch(t, context.Background(), dir, []httpstore.Item{{URL: url, Name: "f.bin"}}, nil)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			r := result(t, rec, url)
			if sum.Failed != 1 || !errors.Is(r.Err, transfer.ErrModified) {
				t.Fatalf("%d failed, error %v: want the object failed with ErrModified", sum.Failed, r.Err)
			}
			if msg := r.Err.Error(); strings.Contains(msg, "SECRET") || !strings.Contains(msg, "X-Amz-Signature=REDACTED") {
				t.Fatalf("error %q: want the URL named, its signature redacted", msg)
			}
			absent(t, dir, "f.bin")
		})
	}
}

// TestPinnedByLastModified: with no ETag, every range carries the
// probed Last-Modified as If-Unmodified-Since and If-Range.
func TestPinnedByLastModified(t *testing.T) {
	data := fileData(fileSize)
	srv := newFileServer(t, data, func(s *fileServer) { s.etag = "" })
	dir := t.TempDir()
	if _, sum, err := fetch(t, context.Background(), dir, []httpstore.Item{{URL: srv.url("f.bin")}}, nil); err != nil || sum.Objects != 1 {
		t.Fatalf("run: %v, %d objects", err, sum.Objects)
	}
	landed(t, dir, "f.bin", data)
	want := srv.modTime.Format(http.TimeFormat)
	for i, r := range srv.requests()[1:] {
		if r.IfUnmodifiedSince != want || r.IfRange != want || r.IfMatch != "" {
			t.Errorf("request %d: If-Unmodified-Since %q If-Range %q If-Match %q, want the first two %q", i+1, r.IfUnmodifiedSince, r.IfRange, r.IfMatch, want)
		}
	}
}

// partCanceller cancels the run once every part before half is done.
type partCanceller struct {
	transfer.NopObserver
	half   int64
	cancel context.CancelFunc
	mu     sync.Mutex
	done   int64
}

func (p *partCanceller) PartDone(_ transfer.Object, off, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if off < p.half {
		p.done += n
		if p.done == p.half {
			p.cancel()
		}
	}
}

// TestResumeFetchesOnlyMissingParts: a run interrupted once the first
// half of the parts were written (the server holds the others back) is
// resumed by a second run, which asks for no byte before the half but
// the probe's, and lands the file right. The second run's URL is signed
// anew (another signature): the object is the same one, as its redacted
// URL, size and ETag say.
func TestResumeFetchesOnlyMissingParts(t *testing.T) {
	data := fileData(fileSize)
	const half = 8 * partSize
	var hold sync.Mutex // held: ranges from half on wait for their request's end
	hold.Lock()
	holding := true
	srv := newFileServer(t, data, func(s *fileServer) {
		s.hook = func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
			hold.Lock()
			h := holding
			hold.Unlock()
			if h && (request{Range: r.Header.Get("Range")}).rangeStart() >= half {
				<-r.Context().Done()
				return true
			}
			return false
		}
	})
	hold.Unlock()
	url := srv.url("big.bin?X-Amz-Expires=60&X-Amz-Signature=first")
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec, _, err := fetch(t, ctx, dir, []httpstore.Item{{URL: url}}, &partCanceller{half: half, cancel: cancel})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v, want it interrupted", err)
	}
	if r := result(t, rec, url); !r.Kept {
		t.Fatalf("first run kept nothing for resume: %v", r.Err)
	}
	absent(t, dir, "big.bin")

	hold.Lock()
	holding = false
	hold.Unlock()
	before := len(srv.requests())
	url = srv.url("big.bin?X-Amz-Expires=60&X-Amz-Signature=second")
	rec, sum, err := fetch(t, context.Background(), dir, []httpstore.Item{{URL: url}}, nil)
	if err != nil || sum.Objects != 1 {
		t.Fatalf("second run: %v, %d objects", err, sum.Objects)
	}
	landed(t, dir, "big.bin", data)
	r := result(t, rec, url)
	if r.Resumed < half {
		t.Errorf("resumed %d bytes, want at least the %d written before", r.Resumed, half)
	}
	for i, q := range srv.requests()[before+1:] { // after the second probe
		if q.rangeStart() < half {
			t.Errorf("second run's request %d asks for %q, which the first run wrote", i+1, q.Range)
		}
	}
}

// TestLyingContentRange: a server whose 206 carries other bytes than
// asked (a Content-Range that says so), or another total size, fails
// the object; nothing lands.
func TestLyingContentRange(t *testing.T) {
	for _, tt := range []struct {
		name, contentRange string
		want               string
	}{
		{"other bytes", fmt.Sprintf("bytes 0-%d/%d", partSize-1, fileSize), "Content-Range"},
		{"other size", fmt.Sprintf("bytes %%d-%%d/%d", fileSize+1), "size"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := fileData(fileSize)
			srv := newFileServer(t, data, func(s *fileServer) {
				s.hook = func(w http.ResponseWriter, r *http.Request, data []byte) bool {
					start := (request{Range: r.Header.Get("Range")}).rangeStart()
					if start <= 0 { // the probe and the first part are told the truth
						return false
					}
					cr := tt.contentRange
					if strings.Contains(cr, "%d") {
						cr = fmt.Sprintf(cr, start, start+partSize-1)
					}
					w.Header().Set("ETag", `"v1"`)
					w.Header().Set("Content-Range", cr)
					w.Header().Set("Content-Length", fmt.Sprint(partSize))
					w.WriteHeader(http.StatusPartialContent)
					w.Write(data[:partSize])
					return true
				}
			})
			dir := t.TempDir()
			rec, sum, err := fetch(t, context.Background(), dir, []httpstore.Item{{URL: srv.url("f.bin")}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := result(t, rec, srv.url("f.bin"))
			if sum.Failed != 1 || r.Err == nil || !strings.Contains(r.Err.Error(), tt.want) {
				t.Fatalf("%d failed, error %v: want a failure that names %q", sum.Failed, r.Err, tt.want)
			}
			absent(t, dir, "f.bin")
		})
	}
}

// TestNoValidatorIsOneStream: a server that takes Range but sends no
// ETag and no Last-Modified gives nothing to pin a range to the
// version of the others, so the file is read as one response (beside
// the probe), not in parts.
func TestNoValidatorIsOneStream(t *testing.T) {
	data := fileData(fileSize)
	srv := newFileServer(t, data, func(s *fileServer) { s.etag, s.modTime = "", time.Time{} })
	dir := t.TempDir()
	rec, sum, err := fetch(t, context.Background(), dir, []httpstore.Item{{URL: srv.url("f.bin")}}, nil)
	if err != nil || sum.Objects != 1 {
		t.Fatalf("run: %v, %d objects", err, sum.Objects)
	}
	landed(t, dir, "f.bin", data)
	reqs := srv.requests()
	if len(reqs) != 2 || reqs[1].Range != "" || !result(t, rec, srv.url("f.bin")).Object.NoRanges {
		t.Fatalf("requests %+v: want the probe and one GET of the whole file", reqs)
	}
}

// countingTransport counts the requests sent through it.
type countingTransport struct {
	http.RoundTripper
	n atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.RoundTripper.RoundTrip(r)
}

// TestLanesShareTheRanges: with two lanes (a client per card), the
// ranges go over both, and the file lands right.
func TestLanesShareTheRanges(t *testing.T) {
	data := fileData(fileSize)
	srv := newFileServer(t, data, nil)
	var ts [2]*countingTransport
	var lanes []httpstore.Lane
	for i := range ts {
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		ts[i] = &countingTransport{RoundTripper: tr}
		lanes = append(lanes, httpstore.Lane{Name: fmt.Sprint("nic", i), Client: &http.Client{Transport: ts[i]}})
	}
	probe := &countingTransport{RoundTripper: &http.Transport{}}
	store, err := httpstore.Open(context.Background(), httpstore.Options{
		Items: []httpstore.Item{{URL: srv.url("f.bin")}}, Client: &http.Client{Transport: probe}, Lanes: lanes, FirstRange: partSize, Backoff: quick,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	dir := t.TempDir()
	sink, err := local.NewSink(dir, local.Options{ResumeMin: partSize})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	e, err := transfer.New(store.Lanes(), sink, transfer.Options{PartSize: partSize, MaxRequests: 8, Backoff: quick})
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := e.Run(context.Background()); err != nil || sum.Objects != 1 {
		t.Fatalf("run: %v, %d objects", err, sum.Objects)
	}
	landed(t, dir, "f.bin", data)
	if probe.n.Load() != 1 || ts[0].n.Load() == 0 || ts[1].n.Load() == 0 {
		t.Fatalf("requests: probe %d, lanes %d and %d: want the probe on Client and ranges on both lanes", probe.n.Load(), ts[0].n.Load(), ts[1].n.Load())
	}
}
