package httpstore_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/httpstore"
	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// TestSourceContract: the store's source keeps the contract of every
// Source, over a real server of the suite's objects, one URL each.
func TestSourceContract(t *testing.T) {
	(&transfertest.SourceSuite{
		New: func(t *testing.T, objects map[string][]byte) transfer.Source {
			mod := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				data, ok := objects[strings.TrimPrefix(r.URL.Path, "/")]
				if !ok {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("ETag", `"e"`)
				http.ServeContent(w, r, "", mod, bytes.NewReader(data))
			}))
			t.Cleanup(srv.Close)
			var items []httpstore.Item
			for name := range objects {
				items = append(items, httpstore.Item{URL: srv.URL + "/" + (&url.URL{Path: name}).EscapedPath(), Name: name})
			}
			store, err := httpstore.Open(context.Background(), httpstore.Options{Items: items, Backoff: quick})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { store.Close() })
			return store.Lanes()[0].Source
		},
	}).Run(t)
}
