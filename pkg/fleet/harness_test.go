package fleet_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/fleet"
	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// The tests run every node of a fleet in one process: each its own
// Server on 127.0.0.1, its own engine with the local sink into its own
// temporary folder, and the emulator as S3 for all of them.

const (
	token  = "fleet-secret"
	prefix = "ds/"
	// dataset: 4.5 MiB, large objects fetched in ranges and small ones
	// whole.
	dataset = "ds/big:6:640KiB,ds/small:8:96KiB"
	partSz  = 256 << 10
)

// world is the emulator, its objects and the fleet's shares of them.
type world struct {
	ts     *s3emu.TestServer
	client *s3.Client
	shares *fleet.Shares
	objs   []transfer.Object
	total  int64
	want   map[string][]byte // the objects' bytes by name, read at the end
}

func newWorld(t *testing.T, nodes int, opts s3emu.Options) *world {
	t.Helper()
	return newWorldOf(t, nodes, opts, worldOptions{})
}

// worldOptions make a world of other objects than the dataset's.
type worldOptions struct {
	// fill uploads the objects under prefix to the bucket (the memory
	// backend's) before the shares are split; nil: the synthetic dataset
	// (the options' Dataset, else dataset).
	fill func(t *testing.T, c *s3.Client)
	// front, when set, is how every request reaches the emulator (a
	// test's S3 that answers with other headers).
	front func(http.Handler) http.Handler
}

func newWorldOf(t *testing.T, nodes int, opts s3emu.Options, wo worldOptions) *world {
	t.Helper()
	switch {
	case wo.fill != nil:
		opts.Backend = s3emu.BackendMemory
	case opts.Dataset == "":
		opts.Dataset = dataset
	}
	var ts *s3emu.TestServer
	endpoint := ""
	if wo.front != nil {
		ts = s3emu.NewTestServer(t, opts, s3emu.Unstarted())
		hs := httptest.NewServer(wo.front(ts.Handler()))
		t.Cleanup(hs.Close)
		endpoint = hs.URL
	} else {
		ts = s3emu.NewTestServer(t, opts)
		endpoint = ts.URL
	}
	w := &world{ts: ts, client: s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}, HTTPClient: awshttp.NewBuildableClient()})}
	if wo.fill != nil {
		wo.fill(t, w.client)
	}
	shares, err := fleet.SplitShares(context.Background(), w.source(), nodes, shard.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	w.shares = shares
	w.source().List(context.Background(), func(o transfer.Object) error {
		w.objs = append(w.objs, o)
		w.total += o.Size
		return nil
	})
	for k := range nodes {
		if w.shareBytes(k) == 0 {
			t.Fatalf("share %d of %d is empty: the dataset cannot test a fleet", k, nodes)
		}
	}
	return w
}

// source is the S3 source of the dataset, as one lane.
func (w *world) source() *s3store.Source {
	return s3store.NewSource(w.client, s3store.Target{Bucket: s3emu.DefaultBucket, Prefix: prefix, Verify: true})
}

// shareBytes is the bytes of node k's share.
func (w *world) shareBytes(k int) int64 {
	var n int64
	for _, o := range w.objs {
		if w.shares.Owner(o.Key) == k {
			n += o.Size
		}
	}
	return n
}

// fromS3 is the object bytes the emulator has sent so far.
func (w *world) fromS3() int64 {
	var n int64
	for _, o := range w.objs {
		n += w.ts.BytesSentFor(s3emu.DefaultBucket, o.Key)
	}
	return n
}

// fetchAll reads every object from S3 once, for the comparisons (its
// bytes count at the emulator: read what it sent before).
func (w *world) fetchAll(t *testing.T) {
	t.Helper()
	if w.want == nil {
		w.want = map[string][]byte{}
		for _, o := range w.objs {
			out, err := w.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s3emu.DefaultBucket), Key: aws.String(o.Key)})
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			w.want[o.Name] = data
		}
	}
}

// wantLanded fails unless dir holds every object, byte for byte as S3
// has it, and nothing else at a final name.
func (w *world) wantLanded(t *testing.T, dir string) {
	t.Helper()
	w.fetchAll(t)
	seen := 0
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.IsDir() && strings.HasPrefix(d.Name(), ".s3pd") {
				return filepath.SkipDir // the sink's work folder
			}
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		want, ok := w.want[filepath.ToSlash(rel)]
		got, err := os.ReadFile(path)
		switch {
		case !ok:
			t.Errorf("%s: %s is no object", dir, rel)
		case err != nil || !bytes.Equal(got, want):
			t.Errorf("%s: %s differs from S3's object (%d bytes, want %d; %v)", dir, rel, len(got), len(want), err)
		default:
			seen++
		}
		return nil
	})
	if seen != len(w.objs) {
		t.Errorf("%s: %d objects landed right, want %d", dir, seen, len(w.objs))
	}
}

// node is one node of the fleet.
type node struct {
	k      int
	dir    string
	server *fleet.Server
	addr   string
	src    *fleet.Source
	rec    *transfertest.Recorder
	sum    transfer.Summary
	err    error
}

// newNodes makes n nodes whose servers listen on 127.0.0.1; front, when
// it returns a handler for node k, serves that node's server through it
// (a test's faulty peer) instead of Server.Start.
func newNodes(t *testing.T, n int, front func(k int, s *fleet.Server) http.Handler) []*node {
	t.Helper()
	nodes := make([]*node, n)
	for k := range nodes {
		// A short hold at the server, so that the tests of the client's
		// asking again see it ask again (TestServerWaitsBounded tests the
		// hold itself).
		s, err := fleet.NewServer(fleet.ServerOptions{Token: token, Wait: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		nd := &node{k: k, dir: t.TempDir(), server: s}
		if h := front(k, s); h != nil {
			hs := httptest.NewServer(h)
			t.Cleanup(hs.Close)
			nd.addr = strings.TrimPrefix(hs.URL, "http://")
		} else {
			if nd.addr, err = s.Start("127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
		}
		nodes[k] = nd
	}
	return nodes
}

func noFront(int, *fleet.Server) http.Handler { return nil }

// addrs are the nodes' addresses in node order.
func addrs(nodes []*node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.addr)
	}
	return out
}

// run runs node nd's engine over w; only, when set, limits it to the
// objects it accepts.
func (nd *node) run(t *testing.T, w *world, peers []string, opts fleet.SourceOptions, only func(transfer.Object) bool) {
	t.Helper()
	opts.Self, opts.Peers, opts.Owner, opts.Backup = nd.k, peers, w.shares.Owner, w.shares.Backup
	if opts.Token == "" {
		opts.Token = token
	}
	if opts.Stall == 0 {
		opts.Stall = 20 * time.Second
	}
	if opts.WaitReady == 0 {
		opts.WaitReady = 40 * time.Second
	}
	src, err := fleet.NewSource(w.source(), opts)
	if err != nil {
		nd.err = err
		return
	}
	nd.src = src
	sink, err := local.NewSink(nd.dir, local.Options{})
	if err != nil {
		nd.err = err
		return
	}
	defer sink.Close()
	nd.rec = transfertest.NewRecorder()
	obs := &fleet.Observer{Server: nd.server, Source: src, Path: func(o transfer.Object) string {
		rel, _ := local.RelPath(o.Name)
		return filepath.Join(nd.dir, rel)
	}, Writing: func(o transfer.Object) string { return sink.Writing(o.Name) },
		OnReadyError: func(o transfer.Object, err error) { t.Errorf("node %d: ready %s: %v", nd.k, o.Key, err) }}
	e, err := transfer.New(src.Lanes([]transfer.Lane{{Name: "s3", Source: w.source()}}), sink, transfer.Options{
		PartSize: partSz, MaxRequests: 16, Workers: 8, StallTimeout: 90 * time.Second,
		Lister: w.shares.Lister(nd.k), Filter: only, Observer: transfer.Observers{obs, nd.rec},
	})
	if err != nil {
		nd.err = err
		return
	}
	nd.sum, nd.err = e.Run(context.Background())
}

// runAll runs the nodes at once and waits for them all.
func runAll(t *testing.T, w *world, nodes []*node, opts fleet.SourceOptions) {
	t.Helper()
	var wg sync.WaitGroup
	for _, nd := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd.run(t, w, addrs(nodes), opts, nil)
		}()
	}
	wg.Wait()
}

// wantRan fails unless the node's run transferred every object of w,
// each verified.
func (nd *node) wantRan(t *testing.T, w *world) {
	t.Helper()
	if nd.err != nil || nd.sum.Failed != 0 || nd.sum.Objects != int64(len(w.objs)) {
		t.Fatalf("node %d: %d objects, %d failed, error %v; want %d objects", nd.k, nd.sum.Objects, nd.sum.Failed, nd.err, len(w.objs))
	}
	for _, o := range w.objs {
		if r, ok := nd.rec.Result(o.Key); !ok || !r.Verification.Verified() {
			t.Errorf("node %d: %s verified %q (reported %v), want verified", nd.k, o.Key, r.Verification, ok)
		}
	}
}

// ownShare accepts the objects of node k's share only.
func ownShare(w *world, k int) func(transfer.Object) bool {
	return func(o transfer.Object) bool { return w.shares.Owner(o.Key) == k }
}
