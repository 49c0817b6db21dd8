package s3emu

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// BenchmarkListPages measures the server's CPU per listed key: every
// page of a prefix of 100 sub-prefixes of 1,000 keys, served in
// process (no network), as one stream (prefix list/) and as one
// sub-prefix's stream (list/p42/).
func BenchmarkListPages(b *testing.B) {
	var groups []string
	for i := range 100 {
		groups = append(groups, fmt.Sprintf("list/p%02d:1000:1", i))
	}
	s, err := New(Options{Dataset: strings.Join(groups, ",")})
	if err != nil {
		b.Fatal(err)
	}
	for _, prefix := range []string{"list/", "list/p42/"} {
		b.Run("prefix="+prefix, func(b *testing.B) {
			var keys int
			b.ReportAllocs()
			for b.Loop() {
				token := ""
				for {
					q := url.Values{"list-type": {"2"}, "prefix": {prefix}, "encoding-type": {"url"}}
					if token != "" {
						q.Set("continuation-token", token)
					}
					rec := httptest.NewRecorder()
					s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/bench?"+q.Encode(), nil))
					if rec.Code != http.StatusOK {
						b.Fatalf("status %d: %s", rec.Code, rec.Body)
					}
					var page struct {
						KeyCount              int
						NextContinuationToken string
					}
					body := rec.Body.Bytes()
					i := strings.Index(string(body), "<Contents>")
					if i < 0 {
						i = len(body)
					}
					xml.Unmarshal(append(body[:i:i], "</ListBucketResult>"...), &page)
					keys += page.KeyCount
					if page.NextContinuationToken == "" {
						break
					}
					token = page.NextContinuationToken
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(keys), "ns/key")
		})
	}
}

func TestEscapeTextMatchesEncodingXML(t *testing.T) {
	for _, v := range []string{"", "plain/key-0001", `"0123abcd"`, "a&b<c>d'e\"f", "tab\there", "line\nbreak\r", "caf\u00e9 \"q\"", "\x7f", "\xff bad utf-8", "end&"} {
		var want, got bytes.Buffer
		xml.EscapeText(&want, []byte(v))
		bw := bufio.NewWriter(&got)
		escapeText(bw, v)
		bw.Flush()
		if got.String() != want.String() {
			t.Errorf("escapeText(%q) = %q, want %q", v, got.String(), want.String())
		}
	}
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// TestListPageAllocations bounds the allocations of one page of 1,000
// keys (a listing of 10^6 keys is a thousand of them): the key and its
// ETag, and a few per page; not a digest buffer, a date or an escaped
// copy per key.
func TestListPageAllocations(t *testing.T) {
	var groups []string
	for i := range 100 {
		groups = append(groups, fmt.Sprintf("list/p%02d:1000:1", i))
	}
	s, err := New(Options{Dataset: strings.Join(groups, ",")})
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"list/", "list/p42/"} {
		req := httptest.NewRequest(http.MethodGet, "/bench?list-type=2&prefix="+url.QueryEscape(prefix)+"&continuation-token=bGlzdC9wNDIvMDAwMDAwMDA", nil)
		w := &discardWriter{h: http.Header{}}
		perKey := testing.AllocsPerRun(5, func() { s.ServeHTTP(w, req) }) / 1000
		t.Logf("prefix %s: %.2f allocations per key", prefix, perKey)
		if perKey > 3 {
			t.Errorf("prefix %s: %.2f allocations per listed key, want at most 3", prefix, perKey)
		}
	}
}

// TestSeedIsFNV1a: the content seed is hash/fnv's 64-bit FNV-1a of the
// key, as it always was (synthetic bytes must not change).
func TestSeedIsFNV1a(t *testing.T) {
	for _, k := range []string{"", "m/00000001", "list/p42/00001234", "caf\u00e9"} {
		h := fnv.New64a()
		h.Write([]byte(k))
		if got, want := seedOf(k, 0), h.Sum64(); got != want {
			t.Errorf("seedOf(%q) = %x, want %x", k, got, want)
		}
	}
}
