package s3emu

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
)

// NewCorruptingProxy starts, for one test, a proxy on loopback in front
// of target that passes the body of every PutObject and UploadPart
// through change and drops its checksum headers, so that the server
// stores other bytes than were sent without noticing: what a store that
// mishandles a body's framing does. It returns the proxy's endpoint.
func NewCorruptingProxy(t TB, target string, change func([]byte) []byte) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("corrupting proxy: %v", err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("corrupting proxy: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") == "" && r.ContentLength > 0 {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			for k := range r.Header {
				if strings.HasPrefix(strings.ToLower(k), "x-amz-checksum-") {
					r.Header.Del(k)
				}
			}
			b = change(b)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
			r.Header.Set("Content-Length", strconv.Itoa(len(b)))
		}
		rp.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}
