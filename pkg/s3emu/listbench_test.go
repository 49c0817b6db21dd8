package s3emu

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
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
