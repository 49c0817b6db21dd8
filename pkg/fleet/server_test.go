package fleet_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/fleet"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// served is one answer of a Server.
type served struct {
	status int
	header http.Header
	body   []byte
}

// ask sends one request to the server at addr for key, with token ("":
// none) and the headers given as name, value pairs.
func ask(t *testing.T, method, addr, key, tok string, headers ...string) served {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+fleet.ObjectPath+"?key="+url.QueryEscape(key), nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set(fleet.TokenHeader, tok)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return served{resp.StatusCode, resp.Header, body}
}

// TestServerServesOnlyWhatWasMarked: the token is required (403, not a
// byte, without it or with another); only keys marked Ready are served
// (404 otherwise, whatever the key looks like), as ranges pinned by the
// S3 ETag; a file changed since it was marked is no longer served; the
// bytes sent are counted per peer.
func TestServerServesOnlyWhatWasMarked(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789"), 1000)
	path := filepath.Join(dir, "obj")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "secret"), []byte("not marked"), 0o644)
	s, err := fleet.NewServer(fleet.ServerOptions{Token: token, Wait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(":0"); err == nil {
		t.Error("Start(\":0\"): no error, want a refusal to bind every interface")
	}
	addr, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const etag = `"abc123"`
	if err := s.Ready("k/obj", path, etag, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready("k/short", path, etag, 5); err == nil {
		t.Error("Ready with the wrong size: no error")
	}
	for _, tt := range []struct {
		name, key, tok string
		headers        []string
		status         int
		body           []byte // nil: none
		contentRange   string
	}{
		{name: "no token", key: "k/obj", status: http.StatusForbidden},
		{name: "another token", key: "k/obj", tok: "guess", status: http.StatusForbidden},
		{name: "a token's prefix", key: "k/obj", tok: token[:3], status: http.StatusForbidden},
		{name: "not ready", key: "k/other", tok: token, status: http.StatusNotFound},
		{name: "a path", key: "../secret", tok: token, status: http.StatusNotFound},
		{name: "an absolute path", key: path, tok: token, status: http.StatusNotFound},
		{name: "a range", key: "k/obj", tok: token, headers: []string{"Range", "bytes=10-19"}, status: http.StatusPartialContent, body: data[10:20], contentRange: "bytes 10-19/10000"},
		{name: "to the end", key: "k/obj", tok: token, headers: []string{"Range", "bytes=9990-"}, status: http.StatusPartialContent, body: data[9990:], contentRange: "bytes 9990-9999/10000"},
		{name: "pinned", key: "k/obj", tok: token, headers: []string{"Range", "bytes=0-4", "If-Match", etag}, status: http.StatusPartialContent, body: data[:5], contentRange: "bytes 0-4/10000"},
		{name: "another version", key: "k/obj", tok: token, headers: []string{"Range", "bytes=0-4", "If-Match", `"other"`}, status: http.StatusPreconditionFailed},
		{name: "past the end", key: "k/obj", tok: token, headers: []string{"Range", "bytes=10000-10001"}, status: http.StatusRequestedRangeNotSatisfiable},
		{name: "two ranges", key: "k/obj", tok: token, headers: []string{"Range", "bytes=0-1,5-6"}, status: http.StatusRequestedRangeNotSatisfiable},
		{name: "whole", key: "k/obj", tok: token, status: http.StatusOK, body: data},
	} {
		got := ask(t, http.MethodGet, addr, tt.key, tt.tok, tt.headers...)
		if got.status != tt.status {
			t.Errorf("%s: status %d, want %d", tt.name, got.status, tt.status)
			continue
		}
		if tt.body == nil && len(got.body) > 0 && tt.status == http.StatusForbidden {
			t.Errorf("%s: %d bytes of body, want none", tt.name, len(got.body))
		}
		if tt.body != nil && !bytes.Equal(got.body, tt.body) {
			t.Errorf("%s: body %q, want %q", tt.name, got.body, tt.body)
		}
		if tt.body != nil && got.header.Get("ETag") != etag {
			t.Errorf("%s: etag %q, want %q", tt.name, got.header.Get("ETag"), etag)
		}
		if cr := got.header.Get("Content-Range"); tt.contentRange != "" && cr != tt.contentRange {
			t.Errorf("%s: content-range %q, want %q", tt.name, cr, tt.contentRange)
		}
	}
	if h := ask(t, http.MethodHead, addr, "k/obj", token); h.status != http.StatusOK || len(h.body) != 0 {
		t.Errorf("HEAD: status %d, %d bytes of body; want 200 and none", h.status, len(h.body))
	}
	ask(t, http.MethodGet, addr, "k/obj", token, "Range", "bytes=0-99", fleet.NodeHeader, "2")
	if got := s.Served()["2"]; got != 100 {
		t.Errorf("served node 2 %d bytes, want 100", got)
	}
	later := time.Now().Add(time.Hour)
	os.Chtimes(path, later, later) // the file changed since it was marked
	if got := ask(t, http.MethodGet, addr, "k/obj", token); got.status != http.StatusNotFound {
		t.Errorf("changed file: status %d, want 404", got.status)
	}
}

// cutFront serves its first response's first bytes only, then cuts it.
type cutFront struct{ h http.Handler }

func (c cutFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.h.ServeHTTP(&cutWriter{ResponseWriter: w, left: 1000}, r)
}

// TestPeerCutMidBodyFinishesFromS3: when a peer's body breaks off, the
// same body goes on with the rest of the range from S3, from the byte
// the peer reached: the engine sees one whole, right range.
func TestPeerCutMidBodyFinishesFromS3(t *testing.T) {
	w := newWorld(t, 2, s3emu.Options{})
	w.fetchAll(t)
	var obj transfer.Object
	for _, o := range w.objs {
		if w.shares.Owner(o.Key) == 1 && o.Size > partSz {
			obj = o
		}
	}
	if obj.Key == "" {
		t.Fatal("node 1 owns no large object")
	}
	peer, _ := fleet.NewServer(fleet.ServerOptions{Token: token})
	path := filepath.Join(t.TempDir(), "held")
	os.WriteFile(path, w.want[obj.Name], 0o644)
	if err := peer.Ready(obj.Key, path, obj.ETag, obj.Size); err != nil {
		t.Fatal(err)
	}
	nodes := newNodes(t, 2, func(k int, s *fleet.Server) http.Handler {
		if k == 1 {
			return cutFront{peer}
		}
		return nil
	})
	src, err := fleet.NewSource(w.source(), fleet.SourceOptions{Peers: addrs(nodes), Token: token, Owner: w.shares.Owner})
	if err != nil {
		t.Fatal(err)
	}
	const off, n = 4096, partSz
	b, err := src.Open(context.Background(), &obj, off, n)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(b)
	b.Close()
	if err != nil || !bytes.Equal(got, w.want[obj.Name][off:off+n]) || b.Off != off || b.Len != n {
		t.Fatalf("body of %d bytes at %d+%d, error %v; want bytes %d-%d of %s", len(got), b.Off, b.Len, err, off, off+n-1, obj.Key)
	}
	r := src.Report()
	if r.FromPeers[nodes[1].addr] != 1000 || r.FromSource != n-1000 {
		t.Errorf("%d bytes from the peer, %d from S3; want 1000 and %d", r.FromPeers[nodes[1].addr], r.FromSource, n-1000)
	}
	if len(r.Bypassed) != 1 || !strings.Contains(r.Bypassed[0].Reason, "at byte 1000") {
		t.Errorf("bypassed %+v, want the peer, cut at byte 1000", r.Bypassed)
	}
}

// TestRangeGivenUpIsNoFaultOfThePeer: a range the engine gives up (its
// context cancelled: a takeover, the run's end) fails with that, and the
// peer stays in the fleet.
func TestRangeGivenUpIsNoFaultOfThePeer(t *testing.T) {
	w := newWorld(t, 2, s3emu.Options{})
	w.fetchAll(t)
	peer, _ := fleet.NewServer(fleet.ServerOptions{Token: token})
	nodes := newNodes(t, 2, func(k int, s *fleet.Server) http.Handler {
		if k == 1 {
			return holdFront{peer}
		}
		return nil
	})
	var obj transfer.Object
	for _, o := range w.objs {
		if w.shares.Owner(o.Key) == 1 && o.Size > partSz {
			obj = o
		}
	}
	path := filepath.Join(t.TempDir(), "held")
	os.WriteFile(path, w.want[obj.Name], 0o644)
	if err := peer.Ready(obj.Key, path, obj.ETag, obj.Size); err != nil {
		t.Fatal(err)
	}
	src, err := fleet.NewSource(w.source(), fleet.SourceOptions{Peers: addrs(nodes), Token: token, Owner: w.shares.Owner})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b, err := src.Open(ctx, &obj, 0, partSz)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(b, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	cancel()
	_, err = io.ReadAll(b)
	b.Close()
	r := src.Report()
	if err == nil || len(r.Bypassed) != 0 || r.FromSource != 0 {
		t.Errorf("read error %v, bypassed %+v, %d bytes from S3; want the cancellation, no bypass, nothing from S3", err, r.Bypassed, r.FromSource)
	}
}

// holdFront sends the first 1000 bytes of a body, then nothing more
// until the client goes away.
type holdFront struct{ h http.Handler }

func (f holdFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.h.ServeHTTP(&holdWriter{ResponseWriter: w, ctx: r.Context(), left: 1000}, r)
}

type holdWriter struct {
	http.ResponseWriter
	ctx  context.Context
	left int
}

func (h *holdWriter) Write(p []byte) (int, error) {
	if len(p) > h.left {
		k, _ := h.ResponseWriter.Write(p[:h.left])
		h.left = 0
		h.ResponseWriter.(http.Flusher).Flush()
		<-h.ctx.Done()
		return k, h.ctx.Err()
	}
	h.left -= len(p)
	return h.ResponseWriter.Write(p)
}

// TestStalledPeerIsBypassed: a peer that stops sending in the middle
// of a body for the Stall timeout is bypassed, and the same body goes
// on from S3.
func TestStalledPeerIsBypassed(t *testing.T) {
	w := newWorld(t, 2, s3emu.Options{})
	w.fetchAll(t)
	peer, _ := fleet.NewServer(fleet.ServerOptions{Token: token})
	nodes := newNodes(t, 2, func(k int, s *fleet.Server) http.Handler {
		if k == 1 {
			return holdFront{peer}
		}
		return nil
	})
	var obj transfer.Object
	for _, o := range w.objs {
		if w.shares.Owner(o.Key) == 1 && o.Size > partSz {
			obj = o
		}
	}
	path := filepath.Join(t.TempDir(), "held")
	os.WriteFile(path, w.want[obj.Name], 0o644)
	if err := peer.Ready(obj.Key, path, obj.ETag, obj.Size); err != nil {
		t.Fatal(err)
	}
	src, err := fleet.NewSource(w.source(), fleet.SourceOptions{Peers: addrs(nodes), Token: token, Owner: w.shares.Owner, Stall: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, err := src.Open(context.Background(), &obj, 0, partSz)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(b)
	b.Close()
	if err != nil || !bytes.Equal(got, w.want[obj.Name][:partSz]) {
		t.Fatalf("%d bytes, error %v; want the range's %d bytes", len(got), err, partSz)
	}
	r := src.Report()
	if len(r.Bypassed) != 1 || !strings.Contains(r.Bypassed[0].Reason, "sent nothing") || r.FromPeers[nodes[1].addr] != 1000 || r.FromSource != partSz-1000 {
		t.Errorf("bypassed %+v, %v from peers, %d from S3; want the peer, stalled, after 1000 bytes", r.Bypassed, r.FromPeers, r.FromSource)
	}
}
