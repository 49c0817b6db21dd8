package s3store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// offline keeps the machine's AWS configuration out of a test's clients.
func offline(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// TestDestFollowsTheEndpoint: over HTTPS (AWS's endpoint, or an
// https:// one) the window starts at transfer.TLSStartWindow and parts
// stream with a trailing checksum; over HTTP the engine starts the
// window and a part from another store is held in memory. A copy from
// within S3 takes a copy sink, which holds nothing; an upload sink
// prunes and takes streams, its keys under the root's prefix.
func TestDestFollowsTheEndpoint(t *testing.T) {
	offline(t)
	ctx := context.Background()
	for _, tt := range []struct {
		endpoint string
		window   int
		holds    bool
	}{
		{"", transfer.TLSStartWindow, false},
		{"https://s3.example.com", transfer.TLSStartWindow, false},
		{"http://127.0.0.1:9000", 0, true},
	} {
		d := Dest(DestOptions{Client: ClientOptions{Region: "us-east-1", EndpointURL: tt.endpoint, NoSignRequest: true}})
		up, err := d.Open(ctx, "s3://dst/p/", store.DestOptions{Root: "p", PartSize: 5 << 20, Threshold: 5 << 20})
		if err != nil {
			t.Fatalf("%q: %v", tt.endpoint, err)
		}
		if up.StartWindow != tt.window || up.HoldsParts != tt.holds {
			t.Errorf("%q: window %d, holds parts %v; want %d, %v", tt.endpoint, up.StartWindow, up.HoldsParts, tt.window, tt.holds)
		}
		st, ok := up.Sink.(store.Streamer)
		if _, prunes := up.Sink.(store.Pruner); !ok || !prunes {
			t.Fatalf("%q: upload sink %T: streams %v, prunes %v", tt.endpoint, up.Sink, ok, prunes)
		}
		if got := st.Destination("x/y"); got != "s3://dst/p/x/y" {
			t.Errorf("%q: x/y lands at %s, want s3://dst/p/x/y", tt.endpoint, got)
		}
		cp, err := d.Open(ctx, "s3://dst/", store.DestOptions{PartSize: 1 << 30, Within: "s3://src/k"})
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := cp.Sink.(*CopySink); !ok || cp.HoldsParts || c.srcBucket != "src" {
			t.Errorf("%q: a copy within S3 got %T (holds parts %v)", tt.endpoint, cp.Sink, cp.HoldsParts)
		}
	}
}

// vouching is a source that can vouch for checksums and identify
// objects.
type vouching struct{ transfer.Source }

func (vouching) Checksum(context.Context, transfer.Object, string) (string, error) { return "sum", nil }
func (vouching) Identity(transfer.Object) string                                   { return "id" }

// TestDestAsksTheSource: an upload skips what it holds by the checksum
// its source vouches for, else, from a source whose bodies read twice,
// by reading it; it resumes by the identity its source gives; a stream
// from elsewhere skips nothing and resumes by checksums alone.
func TestDestAsksTheSource(t *testing.T) {
	offline(t)
	d := Dest(DestOptions{Client: ClientOptions{Region: "us-east-1", EndpointURL: "http://127.0.0.1:9000", NoSignRequest: true}})
	for _, tt := range []struct {
		name         string
		from         *store.Opened
		sums, resume bool
	}{
		{"vouching", &store.Opened{Source: vouching{}}, true, true},
		{"rereadable", &store.Opened{Source: &bytesSource{}, Rereadable: true}, true, false},
		{"a stream", &store.Opened{Source: &bytesSource{}}, false, false},
		{"nothing", nil, false, false},
	} {
		up, err := d.Open(context.Background(), "s3://dst/", store.DestOptions{PartSize: 5 << 20, From: tt.from})
		if err != nil {
			t.Fatal(err)
		}
		opts := up.Sink.(*streamSink).opts
		if (opts.SourceChecksum != nil) != tt.sums || (opts.SourceIdentity != nil) != tt.resume {
			t.Errorf("%s: skips by checksum %v, resumes by identity %v; want %v, %v", tt.name, opts.SourceChecksum != nil, opts.SourceIdentity != nil, tt.sums, tt.resume)
		}
	}
}

// bytesSource lists nothing: a source with no capability.
type bytesSource struct{}

func (*bytesSource) List(context.Context, func(transfer.Object) error) error { return nil }
func (*bytesSource) Open(context.Context, *transfer.Object, int64, int64) (*transfer.Body, error) {
	return nil, errors.New("no bytes")
}

// TestDestOverlap: a copy within S3 onto its own source, or into the
// prefix it copies, is refused; another key or bucket is not.
func TestDestOverlap(t *testing.T) {
	for _, tt := range []struct {
		src, dst string
		want     error
	}{
		{"s3://bkt/k", "s3://bkt/k", store.ErrSame},
		{"s3://bkt/p/", "s3://bkt/p", store.ErrSame},
		{"s3://bkt/p/", "s3://bkt/p/q/", store.ErrInside},
		{"s3://bkt/p", "s3://bkt/p/q/", nil}, // p is one object
		{"s3://bkt/p/", "s3://cbk/p/q/", nil},
		{"s3://bkt/p/", "s3://bkt/pq/", nil},
	} {
		if err := overlap(tt.src, tt.dst); !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
			t.Errorf("overlap(%s, %s) = %v, want %v", tt.src, tt.dst, err, tt.want)
		}
	}
	if err := overlap("/local", "s3://bkt/k"); err == nil {
		t.Error("a source that is no s3:// URL: no error")
	}
}

// TestKeyPrefix: the root where objects land is the prefix of their
// keys.
func TestKeyPrefix(t *testing.T) {
	for root, want := range map[string]string{"": "", ".": "", "a": "a/", "a/": "a/", "a/b": "a/b/"} {
		if got := keyPrefix(root); got != want {
			t.Errorf("keyPrefix(%q) = %q, want %q", root, got, want)
		}
	}
}

// TestSourceIdentity: an object's identity changes with its ETag,
// version and size.
func TestSourceIdentity(t *testing.T) {
	var s Source
	a := s.Identity(transfer.Object{ETag: `"e"`, VersionID: "v", Size: 1})
	for _, o := range []transfer.Object{{ETag: `"f"`, VersionID: "v", Size: 1}, {ETag: `"e"`, VersionID: "w", Size: 1}, {ETag: `"e"`, VersionID: "v", Size: 2}} {
		if s.Identity(o) == a {
			t.Errorf("%+v has the identity of another object", o)
		}
	}
}
