package fleet_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/fleet"
	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// newServer starts a server on 127.0.0.1 that holds a request for what
// it lacks for wait.
func newServer(t *testing.T, wait time.Duration) (*fleet.Server, string) {
	t.Helper()
	s, err := fleet.NewServer(fleet.ServerOptions{Token: token, Wait: wait})
	if err != nil {
		t.Fatal(err)
	}
	addr, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, addr
}

// partial is a file being written, as the engine writes one: sized
// first, parts landing in it one by one.
type partial struct {
	path string
	data []byte
}

func newPartial(t *testing.T, size int) *partial {
	t.Helper()
	p := &partial{path: filepath.Join(t.TempDir(), "obj.partial"), data: make([]byte, size)}
	for i := range p.data {
		p.data[i] = byte(i*31 + i/7)
	}
	if err := os.WriteFile(p.path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// land writes bytes [off, off+n) of the object into the file.
func (p *partial) land(t *testing.T, off, n int) {
	t.Helper()
	f, err := os.OpenFile(p.path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(p.data[off:off+n], int64(off)); err != nil {
		t.Fatal(err)
	}
}

// asking is a request sent in the background; one that fails is
// answered status 0, its error as the body.
func asking(addr, key string, headers ...string) <-chan served {
	out := make(chan served, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+fleet.ObjectPath+"?key="+key, nil)
		req.Header.Set(fleet.TokenHeader, token)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- served{body: []byte(err.Error())} // status 0
			return
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		out <- served{resp.StatusCode, resp.Header, b.Bytes()}
	}()
	return out
}

func rangeOf(off, n int) string { return fmt.Sprintf("bytes=%d-%d", off, off+n-1) }

// TestServerServesRangesAsWritten: a range of an object still being
// written is served as soon as every byte of it was marked Written, from
// the partial file, pinned by the ETag; a request for a range not written
// yet waits at the server and is served when its part is written (not
// answered 404); the token is required all the same; ranges that touch
// merge (the whole object once every part is written); the commit's
// rename does not disturb the file served.
func TestServerServesRangesAsWritten(t *testing.T) {
	const part, size, etag = 1000, 2500, `"v1"`
	p := newPartial(t, size)
	s, addr := newServer(t, 10*time.Second) // nothing here waits that long but for a bug
	if err := s.Written("k", p.path, etag, size, size-10, 20); err == nil {
		t.Error("Written past the object's end: no error")
	}
	p.land(t, 0, part)
	if err := s.Written("k", p.path, etag, size, 0, part); err != nil {
		t.Fatal(err)
	}
	got := ask(t, http.MethodGet, addr, "k", token, "Range", rangeOf(10, 100), "If-Match", etag)
	if got.status != http.StatusPartialContent || !bytes.Equal(got.body, p.data[10:110]) || got.header.Get("ETag") != etag {
		t.Fatalf("a written range: %d, %d bytes, etag %q; want 206 with its bytes, etag %s", got.status, len(got.body), got.header.Get("ETag"), etag)
	}
	ask(t, http.MethodGet, addr, "k", token, "Range", rangeOf(0, 100), fleet.NodeHeader, "7")
	if n := s.Served()["7"]; n != 100 {
		t.Errorf("served node 7 %d bytes of an object in progress, want 100", n)
	}
	for _, tt := range []struct {
		name    string
		tok     string
		headers []string
		status  int
	}{
		{"no token", "", []string{"Range", rangeOf(0, 10)}, http.StatusForbidden},
		{"another token", "guess", []string{"Range", rangeOf(0, 10)}, http.StatusForbidden},
		{"no token, a range not written", "", []string{"Range", rangeOf(part, 10)}, http.StatusForbidden},
		{"another version", token, []string{"Range", rangeOf(0, 10), "If-Match", `"v0"`}, http.StatusPreconditionFailed},
		{"past the end", token, []string{"Range", rangeOf(size, 10)}, http.StatusRequestedRangeNotSatisfiable},
	} {
		if got := ask(t, http.MethodGet, addr, "k", tt.tok, tt.headers...); got.status != tt.status || tt.status == http.StatusForbidden && len(got.body) > 0 {
			t.Errorf("%s: %d with %d bytes, want %d", tt.name, got.status, len(got.body), tt.status)
		}
	}

	// A range across the first part and the second waits for the second.
	across := asking(addr, "k", "Range", rangeOf(part-50, 100), "If-Match", etag)
	whole := asking(addr, "k")
	select {
	case got := <-across:
		t.Fatalf("a range not written yet was answered %d before it was written", got.status)
	case <-time.After(100 * time.Millisecond):
	}
	p.land(t, part, part)
	if err := s.Written("k", p.path, etag, size, part, part); err != nil {
		t.Fatal(err)
	}
	if got := <-across; got.status != http.StatusPartialContent || !bytes.Equal(got.body, p.data[part-50:part+50]) {
		t.Errorf("a range written while it waited: %d, %d bytes; want 206 with its bytes", got.status, len(got.body))
	}
	// The last part, then the commit: the file moves to its final name.
	p.land(t, 2*part, size-2*part)
	if err := s.Written("k", p.path, etag, size, 2*part, size-2*part); err != nil {
		t.Fatal(err)
	}
	if got := <-whole; got.status != http.StatusOK || !bytes.Equal(got.body, p.data) {
		t.Errorf("the whole object once every part was written: %d, %d bytes; want 200 with all %d", got.status, len(got.body), size)
	}
	final := filepath.Join(filepath.Dir(p.path), "obj")
	if err := os.Rename(p.path, final); err != nil {
		t.Fatal(err)
	}
	if got := ask(t, http.MethodGet, addr, "k", token, "Range", rangeOf(5, 10)); got.status != http.StatusPartialContent || !bytes.Equal(got.body, p.data[5:15]) {
		t.Errorf("after the rename, before Ready: %d %q, want 206 with its bytes", got.status, got.body)
	}
	if err := s.Ready("k", final, etag, size); err != nil {
		t.Fatal(err)
	}
	if got := ask(t, http.MethodGet, addr, "k", token, "Range", rangeOf(2000, 500)); got.status != http.StatusPartialContent || !bytes.Equal(got.body, p.data[2000:]) {
		t.Errorf("once Ready: %d, %d bytes; want 206 with its bytes", got.status, len(got.body))
	}
}

// TestServerWaitsBounded: a request for a range nobody writes is held
// for the server's Wait, then answered 404 (the requester asks again); a
// request that gives up first ends its wait; a server that closes ends
// every wait at once. An object Discarded is no longer served.
func TestServerWaitsBounded(t *testing.T) {
	const wait = 300 * time.Millisecond
	s, addr := newServer(t, wait)
	p := newPartial(t, 100)
	p.land(t, 0, 50)
	if err := s.Written("k", p.path, `"e"`, 100, 0, 50); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, key, rng string }{
		{"an object not written here", "other", ""},
		{"a range not written", "k", rangeOf(40, 20)},
		{"the whole of an object partly written", "k", ""},
	} {
		t0 := time.Now()
		got := ask(t, http.MethodGet, addr, tt.key, token, "Range", tt.rng)
		if took := time.Since(t0); got.status != http.StatusNotFound || took < wait {
			t.Errorf("%s: %d after %v, want 404 after the wait (%v)", tt.name, got.status, took, wait)
		}
	}
	s.Discard("k")
	if got := ask(t, http.MethodGet, addr, "k", token, "Range", rangeOf(0, 10)); got.status != http.StatusNotFound {
		t.Errorf("discarded: %d, want 404", got.status)
	}

	// A request that gives up, and one the server's close ends.
	long, longAddr := newServer(t, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+longAddr+fleet.ObjectPath+"?key=k", nil)
	req.Header.Set(fleet.TokenHeader, token)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("a request that gave up after 100 ms: answered %d", resp.StatusCode)
	}
	held := asking(longAddr, "k")
	time.Sleep(50 * time.Millisecond) // let it reach the server (it is answered either way)
	t0 := time.Now()
	long.Close()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting request outlived the server's Close by 10 s")
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("Close ended a waiting request after %v", took)
	}
}

// TestObserverServesPartsUntilTheChecksumFails: the Observer marks each
// part the engine reports written, in the partial file the sink names,
// so it is served before the object is committed; a checksum failure
// (the engine fetches the object again) drops it, another retry does
// not; a refetch's parts are served anew; an object that then fails is
// dropped.
func TestObserverServesPartsUntilTheChecksumFails(t *testing.T) {
	s, addr := newServer(t, 50*time.Millisecond)
	p := newPartial(t, 300)
	p.land(t, 0, 300)
	var writing string
	o := &fleet.Observer{Server: s, Path: func(transfer.Object) string { return "" },
		Writing: func(transfer.Object) string { return writing }}
	obj := transfer.Object{Key: "p/obj", Name: "obj", Size: 300, ETag: `"e"`}
	servedNow := func() bool {
		return ask(t, http.MethodGet, addr, obj.Key, token, "Range", rangeOf(0, 100)).status == http.StatusPartialContent
	}
	o.PartDone(obj, 0, 100) // the sink has no partial file: nothing to serve
	if servedNow() {
		t.Error("served a part of a file the sink did not name")
	}
	writing = p.path
	o.PartDone(obj, 0, 100)
	if !servedNow() {
		t.Fatal("a part reported written is not served")
	}
	o.Retry(obj, 100, fmt.Errorf("read: %w", &transfer.ShortBodyError{}))
	if !servedNow() {
		t.Error("a retried range dropped the parts written")
	}
	o.Retry(obj, 0, fmt.Errorf("crc64nvme mismatch: %w", transfer.ErrChecksum))
	if servedNow() {
		t.Error("still served after its checksum failed")
	}
	o.PartDone(obj, 0, 100)
	if !servedNow() {
		t.Error("the refetch's part is not served")
	}
	o.ObjectDone(transfer.Result{Object: obj, Err: fmt.Errorf("crc64nvme mismatch: %w", transfer.ErrChecksum)})
	if servedNow() {
		t.Error("still served after the object failed")
	}
}

// gated holds every range of one object but its first until open is
// closed: the object stays in progress while the test asks for it.
type gated struct {
	*s3store.Source
	key  string
	open chan struct{}
}

func (g *gated) Open(ctx context.Context, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	if obj.Key == g.key && off > 0 {
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Source.Open(ctx, obj, off, n)
}

// TestEngineRunServesPartsBeforeTheCommit: a real run of the engine into
// the local sink, with the Observer's Writing from the sink: the first
// part of a large object is served to a peer while the object's other
// parts are still held at S3 (not committed yet: no file at its final
// name), from the sink's partial file; a request for the second part
// waits and is served once it is written; the object is committed and
// served whole after.
func TestEngineRunServesPartsBeforeTheCommit(t *testing.T) {
	w := newWorld(t, 1, s3emu.Options{})
	w.fetchAll(t)
	var obj transfer.Object
	for _, o := range w.objs {
		if o.Size > 2*partSz {
			obj = o
			break
		}
	}
	if obj.Key == "" {
		t.Fatal("no object of three parts in the dataset")
	}
	want := w.want[obj.Name]
	s, addr := newServer(t, 10*time.Second)
	dir := t.TempDir()
	sink, err := local.NewSink(dir, local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	final := filepath.Join(dir, filepath.FromSlash(obj.Name))
	obs := &fleet.Observer{Server: s, Path: func(transfer.Object) string { return final },
		Writing:      func(o transfer.Object) string { return sink.Writing(o.Name) },
		OnReadyError: func(o transfer.Object, err error) { t.Errorf("ready %s: %v", o.Key, err) }}
	src := &gated{Source: w.source(), key: obj.Key, open: make(chan struct{})}
	rec := transfertest.NewRecorder()
	e, err := transfer.New([]transfer.Lane{{Name: "s3", Source: src}}, sink, transfer.Options{
		PartSize: partSz, MaxRequests: 4, Workers: 2, Lister: w.source(),
		Filter: func(o transfer.Object) bool { return o.Key == obj.Key }, Observer: transfer.Observers{obs, rec},
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	var sum transfer.Summary
	var runErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		sum, runErr = e.Run(context.Background())
	}()
	opened := false
	defer func() {
		if !opened {
			close(src.open)
		}
	}()
	first := <-asking(addr, obj.Key, "Range", rangeOf(0, partSz), "If-Match", obj.ETag)
	if first.status != http.StatusPartialContent || !bytes.Equal(first.body, want[:partSz]) {
		t.Fatalf("the first part while the object is in progress: %d, %d bytes; want 206 with its %d bytes", first.status, len(first.body), partSz)
	}
	if _, err := os.Stat(final); !os.IsNotExist(err) {
		t.Fatalf("%s is at its final name before its last parts came (%v): the test held nothing back", obj.Name, err)
	}
	second := asking(addr, obj.Key, "Range", rangeOf(partSz, partSz), "If-Match", obj.ETag)
	opened = true
	close(src.open)
	if got := <-second; got.status != http.StatusPartialContent || !bytes.Equal(got.body, want[partSz:2*partSz]) {
		t.Errorf("the second part, asked before it was written: %d, %d bytes; want 206 with its bytes", got.status, len(got.body))
	}
	wg.Wait()
	if runErr != nil || sum.Objects != 1 {
		t.Fatalf("run: %d objects, error %v; want 1", sum.Objects, runErr)
	}
	if r, _ := rec.Result(obj.Key); !r.Verification.Verified() {
		t.Fatalf("%s verified %q, want verified", obj.Key, r.Verification)
	}
	if got := ask(t, http.MethodGet, addr, obj.Key, token); got.status != http.StatusOK || !bytes.Equal(got.body, want) {
		t.Errorf("committed: %d, %d bytes; want 200 with all %d", got.status, len(got.body), len(want))
	}
}
