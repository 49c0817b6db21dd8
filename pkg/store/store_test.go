package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// bytesSource is one object held in memory: a store of one location.
type bytesSource struct {
	key  string
	data []byte
}

func (s bytesSource) List(_ context.Context, emit func(transfer.Object) error) error {
	return emit(transfer.Object{Key: s.key, Name: s.key, Size: int64(len(s.data))})
}

func (s bytesSource) Open(_ context.Context, _ *transfer.Object, off, n int64) (*transfer.Body, error) {
	if n < 0 {
		n = int64(len(s.data)) - off
	}
	return &transfer.Body{ReadCloser: io.NopCloser(bytes.NewReader(s.data[off : off+n])), Off: off, Len: n, Size: int64(len(s.data))}, nil
}

// TestRegistryFindsTheStoreByScheme: a location goes to the opener of
// its scheme (case-insensitively; a path without one to the "" entry),
// and one no store takes is ErrNoStore, naming the scheme.
func TestRegistryFindsTheStoreByScheme(t *testing.T) {
	opened := func(name string) Opener {
		return func(_ context.Context, loc string, _ Options) (*Opened, error) {
			return &Opened{Key: name + ":" + loc}, nil
		}
	}
	r := Registry{{Scheme: "s3", Open: opened("s3")}, {Scheme: "", Open: opened("file")}}
	for loc, want := range map[string]string{
		"s3://b/k":       "s3:s3://b/k",
		"S3://b/k":       "s3:S3://b/k",
		"/data/x":        "file:/data/x",
		"rel/a://b":      "file:rel/a://b",
		"./x.y://z":      "file:./x.y://z",
		"s3://b/k?x=y/z": "s3:s3://b/k?x=y/z",
	} {
		o, err := r.Open(context.Background(), loc, Options{})
		if err != nil || o.Key != want {
			t.Errorf("%s: %+v, %v; want %s", loc, o, err, want)
		}
	}
	_, err := r.Open(context.Background(), "gs://b/k", Options{})
	if !errors.Is(err, ErrNoStore) || r.Takes("gs://b/k") || !r.Takes("s3://b/k") {
		t.Errorf("gs://: %v, want ErrNoStore", err)
	}
	if got := err.Error(); got != "gs://b/k: no store takes this location (no gs:// store)" {
		t.Errorf("error %q", got)
	}
}

// TestFromSourcePlugsInASource: a store that is one transfer.Source per
// location plugs in with one registry line: its object is named as the
// job says, read whole through ReadAll, and what it cannot do (a prefix,
// a version, a server-side copy) is refused.
func TestFromSourcePlugsInASource(t *testing.T) {
	data := []byte("one object")
	r := Registry{{Scheme: "https", Open: FromSource(func(_ context.Context, loc string) (transfer.Source, error) {
		return bytesSource{key: loc, data: data}, nil
	})}}
	const loc = "https://example.com/dir/model.bin"
	o, err := r.Open(context.Background(), loc, Options{Name: func(key string) string { return "renamed" }})
	if err != nil || !o.Single || len(o.Lanes) != 1 {
		t.Fatalf("open: %+v, %v; want one lane over a single object", o, err)
	}
	var names []string
	o.Lanes[0].Source.List(context.Background(), func(obj transfer.Object) error { names = append(names, obj.Name); return nil })
	if len(names) != 1 || names[0] != "renamed" {
		t.Errorf("listed %v, want [renamed]", names)
	}
	o, _ = r.Open(context.Background(), loc, Options{})
	o.Source.List(context.Background(), func(obj transfer.Object) error { names = append(names, obj.Name); return nil })
	if names[len(names)-1] != "model.bin" {
		t.Errorf("default name %q, want model.bin", names[len(names)-1])
	}
	rc, err := r.ReadAll(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, data) || rc.Close() != nil {
		t.Errorf("read %q, %v; want %q", got, err, data)
	}
	for _, o := range []Options{{Prefix: true}, {Version: "v1"}, {ServerSide: true}} {
		if _, err := r.Open(context.Background(), loc, o); err == nil {
			t.Errorf("%+v: opened, want it refused", o)
		}
	}
}
