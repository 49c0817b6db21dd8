package job

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// copyTree writes a small tree (a/1, a/b/2) and returns its root.
func copyTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"a/1", "a/b/2"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// emuStore starts an emulator with buckets b-1 and b-2 and returns the
// clients' options for it, with the AWS configuration of the machine
// out of the way.
func emuStore(t *testing.T) s3store.ClientOptions {
	t.Helper()
	home := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	ts := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory, Buckets: []string{"b-1", "b-2"}})
	return s3store.ClientOptions{Region: "us-east-1", EndpointURL: ts.URL, NoSignRequest: true}
}

// keys lists the keys of bucket.
func keys(t *testing.T, c s3store.ClientOptions, bucket string) []string {
	t.Helper()
	client, err := s3store.NewClient(context.Background(), bucket, c)
	if err != nil {
		t.Fatal(err)
	}
	out, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, o := range out.Contents {
		ks = append(ks, aws.ToString(o.Key))
	}
	slices.Sort(ks)
	return ks
}

// runCopy builds the job of spec and runs it; the job is closed when
// the test ends.
func runCopy(t *testing.T, spec CopySpec) *Copy {
	t.Helper()
	c, err := newCopy(context.Background(), spec)
	if err != nil {
		t.Fatalf("%s -> %s: %v", spec.Src, spec.Dst, err)
	}
	t.Cleanup(c.Close)
	e, err := transfer.New(c.Lanes, c.Sink, transfer.Options{PartSize: c.PartSize, Threshold: c.Threshold, Listing: c.Listing()})
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := e.Run(context.Background()); err != nil || sum.Failed != 0 {
		t.Fatalf("%s -> %s: %+v, %v", spec.Src, spec.Dst, sum, err)
	}
	return c
}

// TestNewCopyLands: in every direction the job builds, a tree lands
// under DEST by its relative names, a single file or object at
// DEST/<base name> under a directory or prefix, else at DEST.
func TestNewCopyLands(t *testing.T) {
	store := emuStore(t)
	src := copyTree(t)
	dst := t.TempDir()
	spec := func(from, to string) CopySpec {
		s := CopySpec{Src: from, Dst: to, Stores: s3Stores(store), PartSize: 64 << 10, Threshold: 64 << 10, CopyThreshold: 64 << 10, FanOut: 1}
		if strings.HasPrefix(from, "s3://") {
			u, err := s3store.ParseURL(from)
			if err != nil {
				t.Fatal(err)
			}
			s.Source = "s3://" + u.Bucket + "/" + u.Key
		}
		return s
	}
	for _, s := range []CopySpec{
		spec(filepath.Join(src, "a"), filepath.Join(dst, "tree")),
		spec(filepath.Join(src, "a/1"), dst+"/"),
		spec(filepath.Join(src, "a/1"), filepath.Join(dst, "renamed")),
		spec(filepath.Join(src, "a"), "s3://b-1/up"),
		spec(filepath.Join(src, "a/1"), "s3://b-1/one/"),
		spec(filepath.Join(src, "a/1"), "s3://b-1/named"),
		spec("s3://b-1/up/", "s3://b-2/copied/"),
		spec("s3://b-1/named", "s3://b-2/"),
	} {
		c := runCopy(t, s)
		c.Close() // the next copy may lock the same directory
		if strings.HasPrefix(s.Src, "s3://") != c.ServerSide {
			t.Errorf("%s -> %s: server-side %v", s.Src, s.Dst, c.ServerSide)
		}
	}
	for _, name := range []string{"tree/1", "tree/b/2", "1", "renamed"} {
		if _, err := os.Stat(filepath.Join(dst, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if got, want := keys(t, store, "b-1"), []string{"named", "one/1", "up/1", "up/b/2"}; !slices.Equal(got, want) {
		t.Errorf("b-1 holds %q, want %q", got, want)
	}
	if got, want := keys(t, store, "b-2"), []string{"copied/1", "copied/b/2", "named"}; !slices.Equal(got, want) {
		t.Errorf("b-2 holds %q, want %q", got, want)
	}
}

// TestNewCopyRefuses: the copies that cannot run as asked are usage
// errors, before any byte moves.
func TestNewCopyRefuses(t *testing.T) {
	store := emuStore(t)
	src := copyTree(t)
	put := CopySpec{Src: filepath.Join(src, "a/1"), Dst: "s3://b-1/x", Stores: s3Stores(store), PartSize: 64 << 10, Threshold: 64 << 10}
	runCopy(t, put)
	for _, tt := range []struct {
		name string
		spec CopySpec
	}{
		{"onto itself", CopySpec{Src: filepath.Join(src, "a"), Dst: filepath.Join(src, "a")}},
		{"into its own tree", CopySpec{Src: filepath.Join(src, "a"), Dst: filepath.Join(src, "a/b/c")}},
		{"--delete of one file", CopySpec{Src: filepath.Join(src, "a/1"), Dst: t.TempDir(), Delete: true}},
		{"a missing source", CopySpec{Src: filepath.Join(src, "none"), Dst: t.TempDir()}},
		{"an object onto itself", CopySpec{Src: "s3://b-1/x", Dst: "s3://b-1/x"}},
		{"a prefix into itself", CopySpec{Src: "s3://b-1/p/", Dst: "s3://b-1/p/q/"}},
		{"--shard of one object", CopySpec{Src: "s3://b-1/x", Dst: "s3://b-2/", Scale: ScaleSpec{Shard: &shard.Spec{K: 0, N: 2}}}},
		{"--delete of one object", CopySpec{Src: "s3://b-1/x", Dst: "s3://b-2/", Delete: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.spec
			s.PartSize, s.Threshold, s.CopyThreshold = 64<<10, 64<<10, 64<<10
			s.Stores = s3Stores(store)
			c, err := newCopy(context.Background(), s)
			var se *SpecError
			if !errors.As(err, &se) {
				if c != nil {
					c.Close()
				}
				t.Fatalf("got %v, want a *SpecError", err)
			}
		})
	}
}

// TestCopyDelete: --delete's step removes, in a local and in an S3
// destination, what the source did not list.
func TestCopyDelete(t *testing.T) {
	store := emuStore(t)
	src := copyTree(t)
	dst := t.TempDir()
	if err := os.WriteFile(filepath.Join(dst, "stale"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	runCopy(t, CopySpec{Src: filepath.Join(src, "a/1"), Dst: "s3://b-1/t/stale", Stores: s3Stores(store), PartSize: 64 << 10, Threshold: 64 << 10})
	for _, to := range []string{dst, "s3://b-1/t/"} {
		c := runCopy(t, CopySpec{Src: filepath.Join(src, "a"), Dst: to, Stores: s3Stores(store), PartSize: 64 << 10, Threshold: 64 << 10, Delete: true})
		var gone []string
		if err := c.Delete(context.Background(), func(string) bool { return true }, false, func(name string, _ int64) { gone = append(gone, name) }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(gone, []string{"stale"}) {
			t.Errorf("%s: deleted %q, want stale", to, gone)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "stale")); !os.IsNotExist(err) {
		t.Errorf("stale file: %v, want it removed", err)
	}
	if got, want := keys(t, store, "b-1"), []string{"t/1", "t/b/2"}; !slices.Equal(got, want) {
		t.Errorf("b-1 holds %q, want %q", got, want)
	}
}

// TestCopyAcrossStoresStreams: S3 to S3 across stores streams through
// this process, not server-side, and over plain HTTP (no trailing
// checksum) its requests are capped by the memory of the parts it holds;
// from local files, whose bodies read twice, nothing is capped.
func TestCopyAcrossStoresStreams(t *testing.T) {
	store := emuStore(t)
	src := copyTree(t)
	base := CopySpec{Stores: s3Stores(store), PartSize: 64 << 10, Threshold: 64 << 10, CopyThreshold: 64 << 10, FanOut: 1}
	up := base
	up.Src, up.Dst = filepath.Join(src, "a"), "s3://b-1/across/"
	if c := runCopy(t, up); c.MaxRequests != 0 || c.ServerSide || c.LocalTo != "s3" {
		t.Errorf("local to S3: cap %d, server-side %v, local to %q", c.MaxRequests, c.ServerSide, c.LocalTo)
	}
	across := base
	across.Src, across.Source, across.Dst, across.CrossStore = "s3://b-1/across/", "s3://b-1/across/", "s3://b-2/across/", true
	c := runCopy(t, across)
	if c.ServerSide || c.MaxRequests != streamBuffer/(64<<10) || c.LocalTo != "" {
		t.Errorf("across stores: server-side %v, cap %d, local to %q; want streamed, capped at %d", c.ServerSide, c.MaxRequests, c.LocalTo, streamBuffer/(64<<10))
	}
	if got, want := keys(t, store, "b-2"), []string{"across/1", "across/b/2"}; !slices.Equal(got, want) {
		t.Errorf("b-2 holds %q, want %q", got, want)
	}
}
