package httpstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/httpstore"
	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestOpenerOneURL: a location is one file, named at its destination
// as the options say of its URL's last segment, over every lane given,
// with opaque ETags; what the store cannot do is refused.
func TestOpenerOneURL(t *testing.T) {
	srv := newFileServer(t, fileData(fileSize), nil)
	lanes := []httpstore.Lane{{Name: "a", Client: &http.Client{}}, {Name: "b", Client: &http.Client{}}}
	open := httpstore.Opener(httpstore.OpenerOptions{Lanes: lanes, Backoff: quick})
	loc := srv.url("dir/model.bin") + "?X-Amz-Signature=secret"
	st, err := open(context.Background(), loc, store.Options{FirstRange: partSize, Name: func(key string) string { return "renamed-" + key }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Release()
	if !st.Single || st.Key != "renamed-model.bin" || !st.OpaqueETags || len(st.Lanes) != 2 {
		t.Fatalf("opened: single %v key %q opaque %v lanes %d, want one file renamed-model.bin over 2 lanes with opaque ETags", st.Single, st.Key, st.OpaqueETags, len(st.Lanes))
	}
	var objs []transfer.Object
	if err := st.Source.List(context.Background(), func(o transfer.Object) error { objs = append(objs, o); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Size != fileSize || objs[0].Name != "renamed-model.bin" || strings.Contains(objs[0].Key, "secret") {
		t.Fatalf("listed %+v, want the file, its size, its name and a redacted key", objs)
	}
	for _, o := range []store.Options{{Prefix: true}, {Version: "v"}, {ServerSide: true}} {
		if st, err := open(context.Background(), loc, o); err == nil || strings.Contains(err.Error(), "secret") {
			st.Release()
			t.Errorf("options %+v: error %v, want a refusal that prints no credential", o, err)
		}
	}
}

// TestOpenerItems: with Items the location opens their list, each under
// its own name, and is no single file.
func TestOpenerItems(t *testing.T) {
	srv := newFileServer(t, fileData(fileSize), nil)
	open := httpstore.Opener(httpstore.OpenerOptions{Items: []httpstore.Item{{URL: srv.url("a.bin")}, {URL: srv.url("b.bin"), Name: "sub/b"}}, Backoff: quick})
	st, err := open(context.Background(), srv.url("a.bin"), store.Options{FirstRange: partSize})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Release()
	var names []string
	st.Source.List(context.Background(), func(o transfer.Object) error { names = append(names, o.Name); return nil })
	if st.Single || strings.Join(names, ",") != "a.bin,sub/b" {
		t.Fatalf("single %v, names %v: want the list a.bin, sub/b", st.Single, names)
	}
}

// doerFunc is a Doer.
type doerFunc func(*http.Request) (*http.Response, error)

func (f doerFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// wrapped is an error that carries another, as a lane's decorators
// wrap the client's.
type wrapped struct{ err error }

func (w wrapped) Error() string { return "cannot reach: " + w.err.Error() }
func (w wrapped) Unwrap() error { return w.err }

// TestClientOfRedactsErrors: the URL of a lane's error, deep in its
// chain, is printed redacted, and the chain is kept.
func TestClientOfRedactsErrors(t *testing.T) {
	refused := errors.New("connection refused")
	c := httpstore.ClientOf(doerFunc(func(r *http.Request) (*http.Response, error) {
		return nil, wrapped{&url.Error{Op: "Get", URL: r.URL.String(), Err: refused}}
	}))
	_, err := httpstore.Open(context.Background(), httpstore.Options{Items: []httpstore.Item{{URL: "http://127.0.0.1:1/f.bin?X-Amz-Signature=secret"}}, Client: c, Backoff: quick})
	if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), httpstore.Redacted) || !errors.Is(err, refused) {
		t.Fatalf("error %v: want the URL redacted and the cause kept", err)
	}
}

// TestOpenerNameFromDestination: a URL without a file name (a folder's,
// a site's root) lands where the destination names, and is refused when
// it names no file either.
func TestOpenerNameFromDestination(t *testing.T) {
	srv := newFileServer(t, fileData(fileSize), nil)
	open := httpstore.Opener(httpstore.OpenerOptions{Backoff: quick})
	st, err := open(context.Background(), srv.url(""), store.Options{FirstRange: partSize, Name: func(string) string { return "index.html" }})
	if err != nil {
		t.Fatal(err)
	}
	st.Release()
	if st.Key != "index.html" {
		t.Fatalf("key %q, want the destination's name index.html", st.Key)
	}
	if _, err := open(context.Background(), srv.url(""), store.Options{Name: func(key string) string { return path.Base(key) }}); err == nil || !strings.Contains(err.Error(), "no file name") {
		t.Fatalf("error %v, want no file name in the URL", err)
	}
}
