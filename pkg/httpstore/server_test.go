package httpstore_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fileServer serves one file over real HTTP on loopback, as a web
// server or S3 would (http.ServeContent: Range, If-Match, If-Range,
// If-Unmodified-Since), or as a plain server that ignores Range and
// every condition. It records every request it is sent.
type fileServer struct {
	*httptest.Server

	mu      sync.Mutex
	data    []byte
	etag    string    // "" sends none
	modTime time.Time // zero sends no Last-Modified
	// noRanges answers every GET with 200 and the whole file.
	noRanges bool
	// changeAfter, when above 0, replaces the file (new bytes, new ETag
	// and modification time) for every request after the first
	// changeAfter ones.
	changeAfter int
	// hook, when set, may answer a request itself (returning true).
	hook func(w http.ResponseWriter, r *http.Request, data []byte) bool
	reqs []request
}

// request is what the server saw of one request.
type request struct {
	Range, IfMatch, IfRange, IfUnmodifiedSince string
}

// newFileServer starts a server of data, stopped when the test ends.
func newFileServer(t *testing.T, data []byte, configure func(*fileServer)) *fileServer {
	t.Helper()
	s := &fileServer{data: data, etag: `"v1"`, modTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if configure != nil {
		configure(s)
	}
	s.Server = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

func (s *fileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, request{r.Header.Get("Range"), r.Header.Get("If-Match"), r.Header.Get("If-Range"), r.Header.Get("If-Unmodified-Since")})
	if s.changeAfter > 0 && len(s.reqs) == s.changeAfter+1 {
		s.change()
	}
	data, etag, mod, noRanges, hook := s.data, s.etag, s.modTime, s.noRanges, s.hook
	s.mu.Unlock()
	if hook != nil && hook(w, r, data) {
		return
	}
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	if noRanges {
		if !mod.IsZero() {
			w.Header().Set("Last-Modified", mod.Format(http.TimeFormat))
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data)
		return
	}
	http.ServeContent(w, r, "", mod, bytes.NewReader(data))
}

// change replaces the file with another version. Under s.mu.
func (s *fileServer) change() {
	s.data = bytes.ToUpper(s.data)
	if s.etag != "" {
		s.etag = strings.Replace(s.etag, "v1", "v2", 1)
	}
	if !s.modTime.IsZero() {
		s.modTime = s.modTime.Add(time.Hour)
	}
}

// requests returns what the server saw so far.
func (s *fileServer) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.reqs...)
}

// rangeStart is the first byte a request's Range asks for (-1: none).
func (r request) rangeStart() int64 {
	spec, ok := strings.CutPrefix(r.Range, "bytes=")
	if !ok {
		return -1
	}
	first, _, _ := strings.Cut(spec, "-")
	n, err := strconv.ParseInt(first, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// fileData is size bytes that differ from one offset to the next, in
// lower case (the server's change makes them upper case).
func fileData(size int) []byte {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, size)
	for i := range b {
		b[i] = letters[(i*7+i/1000)%len(letters)]
	}
	return b
}

func (s *fileServer) url(path string) string { return fmt.Sprintf("%s/%s", s.URL, path) }
