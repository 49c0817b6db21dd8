package httpstore_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/httpstore"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestOpenProbes: Open's objects say what the probe learned: the size,
// the ETag, Last-Modified as the pin where there is no strong ETag, and
// whether the server takes Range.
func TestOpenProbes(t *testing.T) {
	data := fileData(5000)
	ranged := newFileServer(t, data, nil)
	lm := newFileServer(t, data, func(s *fileServer) { s.etag = "" })
	plain := newFileServer(t, data, func(s *fileServer) { s.noRanges = true })
	store, err := httpstore.Open(context.Background(), httpstore.Options{Items: []httpstore.Item{
		{URL: ranged.url("dir/a.bin?X-Amz-Signature=s")}, {URL: lm.url("b.bin")}, {URL: plain.url("c.bin")},
	}, FirstRange: 1000, Backoff: quick})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	date := ranged.modTime.Format(http.TimeFormat)
	want := []transfer.Object{
		{Key: ranged.url("dir/a.bin?X-Amz-Signature=REDACTED"), Name: "a.bin", Size: 5000, ETag: `"v1"`},
		{Key: lm.url("b.bin"), Name: "b.bin", Size: 5000, VersionID: "last-modified: " + date},
		{Key: plain.url("c.bin"), Name: "c.bin", Size: 5000, ETag: `"v1"`, NoRanges: true},
	}
	got := store.Objects()
	for i, w := range want {
		g := got[i]
		if g.Key != w.Key || g.Name != w.Name || g.Size != w.Size || g.ETag != w.ETag || g.VersionID != w.VersionID || g.NoRanges != w.NoRanges || !g.ModTime.Equal(ranged.modTime) {
			t.Errorf("object %d = %+v\nwant %+v (ModTime %v)", i, g, w, ranged.modTime)
		}
	}
}

// TestOpenRefuses: what Open refuses, each with a clear error that names
// the URL without its credentials.
func TestOpenRefuses(t *testing.T) {
	data := fileData(100)
	missing := newFileServer(t, data, func(s *fileServer) {
		s.hook = func(w http.ResponseWriter, _ *http.Request, _ []byte) bool { http.NotFound(w, nil); return true }
	})
	expired := newFileServer(t, data, func(s *fileServer) {
		s.hook = func(w http.ResponseWriter, _ *http.Request, _ []byte) bool {
			http.Error(w, "Request has expired", http.StatusForbidden)
			return true
		}
	})
	chunked := newFileServer(t, data, func(s *fileServer) {
		s.hook = func(w http.ResponseWriter, _ *http.Request, data []byte) bool {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush() // no Content-Length: chunked
			w.Write(data)
			return true
		}
	})
	ok := newFileServer(t, data, nil)
	for _, tt := range []struct {
		name  string
		items []httpstore.Item
		want  string
		is    error
	}{
		{"no items", nil, "no URL to fetch", nil},
		{"not found", []httpstore.Item{{URL: missing.url("f?sig=SECRET")}}, "404 Not Found", transfer.ErrNotFound},
		{"expired", []httpstore.Item{{URL: expired.url("f?X-Amz-Signature=SECRET")}}, "403 Forbidden (a presigned URL may have expired", nil},
		{"no length", []httpstore.Item{{URL: chunked.url("f")}}, "does not say the file's size", nil},
		{"same name", []httpstore.Item{{URL: ok.url("a/f")}, {URL: ok.url("b/f")}}, "both land at f", nil},
		{"no name", []httpstore.Item{{URL: ok.url("")}}, "no file name in the URL", nil},
		{"folder", []httpstore.Item{{URL: ok.url("dir/")}}, "no file name in the URL", nil},
		{"escaping name", []httpstore.Item{{URL: ok.url("f"), Name: "../f"}}, `name "../f" is not a path inside the destination`, nil},
		{"absolute name", []httpstore.Item{{URL: ok.url("f"), Name: "/etc/f"}}, "is not a path inside", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := httpstore.Open(context.Background(), httpstore.Options{Items: tt.items, Backoff: quick})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("error %v is not %v", err, tt.is)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("error prints the credential: %v", err)
			}
		})
	}
}

// TestEmptyFileLands: an empty file (a 416 to bytes=0-N, Content-Range
// bytes */0) lands as an empty file.
func TestEmptyFileLands(t *testing.T) {
	srv := newFileServer(t, nil, nil)
	dir := t.TempDir()
	if _, sum, err := fetch(t, context.Background(), dir, []httpstore.Item{{URL: srv.url("empty")}}, nil); err != nil || sum.Objects != 1 {
		t.Fatalf("run: %v, %d objects", err, sum.Objects)
	}
	landed(t, dir, "empty", []byte{})
}
