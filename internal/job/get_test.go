package job

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// emuClient is an anonymous client of the emulator ts.
func emuClient(ts *s3emu.TestServer) *s3.Client {
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(ts.URL), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}, HTTPClient: awshttp.NewBuildableClient()})
}

// emuLanes is a registry whose s3:// store reads the emulator ts over
// one lane of an anonymous client.
func emuLanes(t *testing.T) (store.Registry, *s3emu.TestServer) {
	t.Helper()
	ts := s3emu.NewTestServer(t, s3emu.Options{Dataset: "p:3:1MiB", LogRequests: true})
	return emuRegistry(emuClient(ts)), ts
}

// emuRegistry is a registry whose s3:// store reads over client.
func emuRegistry(client *s3.Client) store.Registry {
	lanes := []s3store.Lane{{Name: "default", Base: s3store.NewSource(client, s3store.Target{Bucket: s3emu.DefaultBucket})}}
	return store.Registry{{Scheme: "s3", Open: s3store.Opener(s3store.OpenerOptions{Lanes: lanes})},
		{Scheme: "", Open: local.Opener(local.SourceOptions{}), Dest: local.Dest(local.Options{})}}
}

// s3Stores is a registry of local files and of an s3:// store read and
// written with opts.
func s3Stores(opts s3store.ClientOptions) store.Registry { return s3StoresTo(opts, opts) }

// s3StoresTo is a registry of local files and of an s3:// store read
// with src and written with dst.
func s3StoresTo(src, dst s3store.ClientOptions) store.Registry {
	return store.Registry{
		{Scheme: "s3", Name: "S3", Open: s3store.Opener(s3store.OpenerOptions{Client: src}), Dest: s3store.Dest(s3store.DestOptions{Client: dst})},
		{Scheme: "", Name: "local files", Open: local.Opener(local.SourceOptions{}), Dest: local.Dest(local.Options{})},
	}
}

// emuURL is the emulator's default bucket's key.
func emuURL(key string) string { return "s3://" + s3emu.DefaultBucket + "/" + key }

// TestNewGet: what a URL names (one object, a prefix, nothing) and where
// it lands, and the specs that cannot run.
func TestNewGet(t *testing.T) {
	lanes, _ := emuLanes(t)
	dir := t.TempDir()
	for _, tt := range []struct {
		name, key, dest string
		shard           *shard.Spec
		single          bool
		landsAt         string // the file a run writes ("": none checked)
		mustExist       string
		specErr         bool
	}{
		{name: "an object into a directory", key: "p/00000001", dest: dir + "/", single: true, landsAt: "00000001"},
		{name: "an object renamed", key: "p/00000002", dest: filepath.Join(dir, "renamed"), single: true, landsAt: "renamed"},
		{name: "a prefix without its slash", key: "p", dest: filepath.Join(dir, "tree"), landsAt: "tree/00000000", mustExist: "p"},
		{name: "nothing there", key: "nothing", dest: filepath.Join(dir, "none"), mustExist: "nothing"},
		{name: "a prefix to stdout", key: "p", dest: "-", specErr: true},
		{name: "a shard of one object", key: "p/00000000", dest: dir + "/", shard: &shard.Spec{K: 0, N: 2}, specErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g, err := newGet(context.Background(), GetSpec{
				Source: emuURL(tt.key), Stores: lanes, Read: store.Options{FirstRange: 256 << 10, FanOut: 1, Verify: true},
				URL: "s3://bench/" + tt.key, Dest: tt.dest, Stdout: io.Discard, OrderWindow: 1 << 20, Scale: ScaleSpec{Shard: tt.shard},
			})
			var se *SpecError
			if tt.specErr {
				if !errors.As(err, &se) {
					t.Fatalf("got %v, want a *SpecError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if g.Source.Single != tt.single {
				t.Errorf("single %v, want %v", g.Source.Single, tt.single)
			}
			if got := ""; g.MustExist != nil {
				got = g.MustExist.Key
				if got != tt.mustExist {
					t.Errorf("must exist %q, want %q", got, tt.mustExist)
				}
			} else if tt.mustExist != "" {
				t.Errorf("nothing must exist, want %q", tt.mustExist)
			}
			e, err := transfer.New(g.Source.Lanes, g.Sink, transfer.Options{PartSize: 256 << 10, Verify: transfer.VerifyAuto})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := e.Run(context.Background())
			if err != nil || sum.Failed != 0 {
				t.Fatalf("run: %+v, %v", sum, err)
			}
			if tt.landsAt == "" {
				return
			}
			st, err := os.Stat(filepath.Join(dir, tt.landsAt))
			if err != nil || st.Size() != 1<<20 {
				t.Errorf("%s: %v, want a file of 1 MiB", tt.landsAt, err)
			}
		})
	}
}

// TestSingleObjectFirstRangeOnce: the probe's first range is the run's
// first bytes: a 1 MiB object in 256 KiB parts costs four GETs (and the
// checksums' HEAD), not five; one fetched whole (under the threshold)
// costs the probe and one GET of the rest, each byte sent once, and is
// verified with the checksums of the HEAD.
func TestSingleObjectFirstRangeOnce(t *testing.T) {
	for _, tt := range []struct {
		name      string
		threshold int64
		ranges    []string // the Range of every GET, sorted
		first     int64    // the probe's range (default 256 KiB)
	}{
		{"in parts", 256 << 10, []string{"bytes=0-262143", "bytes=262144-524287", "bytes=524288-786431", "bytes=786432-1048575"}, 0},
		{"whole", 2 << 20, []string{"bytes=0-262143", "bytes=262144-1048575"}, 0},
		{"whole in the first range", 2 << 20, []string{"bytes=0-2097151"}, 2 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lanes, ts := emuLanes(t)
			ts.ResetStats()
			g, err := newGet(context.Background(), GetSpec{
				Source: emuURL("p/00000000"), Stores: lanes, Read: store.Options{FirstRange: cmp.Or(tt.first, 256<<10), Verify: true},
				URL: "s3://bench/p/00000000", Dest: "",
			})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			var res resultOf
			e, err := transfer.New(g.Source.Lanes, g.Sink, transfer.Options{PartSize: 256 << 10, Threshold: tt.threshold, Observer: &res})
			if err != nil {
				t.Fatal(err)
			}
			if sum, err := e.Run(context.Background()); err != nil || sum.Objects != 1 || sum.Bytes != 1<<20 {
				t.Fatalf("run: %+v, %v; want one object of 1 MiB", sum, err)
			}
			if st := ts.Stats(); st.GetRequests != int64(len(tt.ranges)) || st.HeadRequests != 1 {
				t.Errorf("%d GETs and %d HEADs, want %d and 1", st.GetRequests, st.HeadRequests, len(tt.ranges))
			}
			var ranges []string
			for _, r := range ts.Log() {
				if r.Method == "GET" {
					ranges = append(ranges, r.Range)
				}
			}
			slices.Sort(ranges)
			if !slices.Equal(ranges, tt.ranges) {
				t.Errorf("GETs of %q, want %q", ranges, tt.ranges)
			}
			if !res.r.Verification.Verified() {
				t.Errorf("not verified: %+v", res.r.Verification)
			}
		})
	}
}

// resultOf keeps the result of the one object of a run.
type resultOf struct {
	transfer.NopObserver
	r transfer.Result
}

func (o *resultOf) ObjectDone(r transfer.Result) { o.r = r }

// TestGetFromAnyStore: a store that is one transfer.Source per URL
// plugs in with one registry line (store.FromSource), and a get reads
// from it as from S3: here file:// URLs over the local store's source,
// into the local paths the registry's store of them writes.
func TestGetFromAnyStore(t *testing.T) {
	src := filepath.Join(t.TempDir(), "model.bin")
	data := bytes.Repeat([]byte("0123456789abcdef"), 40<<10) // 640 KiB: three parts
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	stores := store.Registry{{Scheme: "file", Open: store.FromSource(func(_ context.Context, loc string) (transfer.Source, error) {
		return local.NewSource(strings.TrimPrefix(loc, "file://"), local.SourceOptions{})
	})}, {Scheme: "", Dest: local.Dest(local.Options{})}}
	dir := t.TempDir()
	get := &GetSpec{Source: "file://" + src, Stores: stores, URL: "file://" + src, Dest: dir + "/"}
	run, err := Open(context.Background(), Spec{Get: get, Engine: transfer.Options{PartSize: 256 << 10, Threshold: 256 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	sum, err := run.Transfer(context.Background(), Hooks{})
	if err != nil || sum.Objects != 1 || sum.Bytes != int64(len(data)) {
		t.Fatalf("transfer: %+v, %v; want one object of %d bytes", sum, err, len(data))
	}
	got, err := os.ReadFile(filepath.Join(dir, "model.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("landed %d bytes, %v; want the source's %d", len(got), err, len(data))
	}
	if _, err := Open(context.Background(), Spec{Get: &GetSpec{Source: "gs://b/k", Stores: stores, Dest: dir}}); !errors.As(err, new(*SpecError)) {
		t.Errorf("a scheme no store takes: %v, want a *SpecError", err)
	}
}

// TestStoreSetupFailure: a store that cannot be set up (here a profile
// the AWS configuration lacks) is a usage error of a get, as its lanes'
// clients always were, and a copy's own error.
func TestStoreSetupFailure(t *testing.T) {
	home := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
	stores := s3Stores(s3store.ClientOptions{Region: "us-east-1", Profile: "no-such-profile"})
	_, err := Open(context.Background(), Spec{Get: &GetSpec{Source: "s3://bucket/key", Stores: stores, Dest: t.TempDir()}})
	var se *SpecError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "no-such-profile") {
		t.Errorf("get: %v, want a *SpecError naming the profile", err)
	}
	stores = s3StoresTo(s3store.ClientOptions{Region: "us-east-1", Profile: "no-such-profile"}, s3store.ClientOptions{Region: "us-east-1", NoSignRequest: true})
	_, err = Open(context.Background(), Spec{Copy: &CopySpec{Src: "s3://bucket/key", Dst: "s3://other/", Stores: stores, PartSize: 64 << 10}})
	if err == nil || errors.As(err, &se) || !strings.Contains(err.Error(), "no-such-profile") {
		t.Errorf("copy: %v, want an error naming the profile, not a *SpecError", err)
	}
}
