package job

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestCopyRoutes: a copy into a store that cannot take it (standard
// input into local files; anything into a store without writes) is a
// spec error naming the stores, before anything is opened.
func TestCopyRoutes(t *testing.T) {
	readOnly := store.FromSource(func(context.Context, string) (transfer.Source, error) {
		t.Error("a refused copy opened its source")
		return nil, errors.New("opened")
	})
	stores := append(s3Stores(s3store.ClientOptions{}), store.Entry{Scheme: "http", Open: readOnly})
	dir := t.TempDir()
	for _, tt := range []struct{ src, dst string }{
		{"-", filepath.Join(dir, "x")},
		{"-", "-"},
		{filepath.Join(dir, "x"), "http://127.0.0.1:1/x"},
		{"s3://b/k", "http://127.0.0.1:1/x"},
	} {
		_, err := newCopy(context.Background(), CopySpec{Src: tt.src, Dst: tt.dst, Stores: stores, Stdin: &StdinSpec{In: strings.NewReader("")}})
		var se *SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "does not copy from") {
			t.Errorf("copy %s %s: %v, want a spec error naming the stores", tt.src, tt.dst, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused copy left %d entries in its directory", len(entries))
	}
}

// recorder is an Observer that keeps the results.
type recorder struct {
	mu      sync.Mutex
	results []transfer.Result
}

func (r *recorder) ObjectStarted(transfer.Object)          {}
func (r *recorder) Bytes(int64)                            {}
func (r *recorder) PartDone(transfer.Object, int64, int64) {}
func (r *recorder) Retry(transfer.Object, int64, error)    {}
func (r *recorder) ObjectDone(res transfer.Result) {
	r.mu.Lock()
	r.results = append(r.results, res)
	r.mu.Unlock()
}

// count is how many results came, and the last.
func (r *recorder) count() (int, transfer.Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.results) == 0 {
		return 0, transfer.Result{}, false
	}
	return len(r.results), r.results[len(r.results)-1], true
}

// TestOpenNothingThereIsNotFound: a URL that names neither an object nor
// anything under it runs as one failed object whose error is a
// *NotFoundError (errors.Is transfer.ErrNotFound) worded as S3 words a
// missing key, named where it would have landed; an empty prefix named as one (a trailing "/") is an
// empty success.
func TestOpenNothingThereIsNotFound(t *testing.T) {
	lanes, _ := emuLanes(t)
	dir := t.TempDir()
	for _, tt := range []struct {
		name, key, dest string
		prefix          bool
		wantFailed      int64
		wantAt          string
	}{
		{name: "into a file", key: "nothing", dest: filepath.Join(dir, "out.bin"), wantFailed: 1, wantAt: filepath.Join(dir, "out.bin")},
		{name: "to stdout", key: "nothing", dest: "-", wantFailed: 1, wantAt: "-"},
		{name: "an empty prefix", key: "nothing/", dest: dir + "/", prefix: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			get := &GetSpec{Source: emuURL(tt.key), Stores: lanes, Read: store.Options{Prefix: tt.prefix, FirstRange: 256 << 10, FanOut: 1, Verify: true},
				URL: "s3://bench/" + tt.key, Dest: tt.dest, Stdout: io.Discard, OrderWindow: 1 << 20}
			run, err := Open(context.Background(), Spec{Get: get, Engine: transfer.Options{PartSize: 256 << 10}, SpaceCheck: true})
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			rec := &recorder{}
			sum, err := run.Transfer(context.Background(), Hooks{Observer: rec})
			if err != nil || sum.Failed != tt.wantFailed {
				t.Fatalf("transfer: %+v, %v; want %d failed", sum, err, tt.wantFailed)
			}
			n, res, ok := rec.count()
			if tt.wantFailed == 0 {
				if ok {
					t.Errorf("%d results, want none", n)
				}
				return
			}
			var nf *NotFoundError
			if !ok || !errors.As(res.Err, &nf) || !errors.Is(res.Err, transfer.ErrNotFound) {
				t.Fatalf("result %+v, want a *NotFoundError", res)
			}
			want := `404 NoSuchKey: s3://bench/nothing: no such key (no object "nothing" and nothing under "nothing/")`
			if res.Err.Error() != want {
				t.Errorf("error %q, want %q", res.Err, want)
			}
			if got := run.Destination(res.Object.Name); got != tt.wantAt {
				t.Errorf("destination %q, want %q", got, tt.wantAt)
			}
		})
	}
}

// TestOpenSpaceCheck: a local destination with less room than the
// listing needs stops the run with a *SpaceError before a byte lands.
func TestOpenSpaceCheck(t *testing.T) {
	lanes, _ := emuLanes(t)
	dir := t.TempDir()
	get := &GetSpec{Source: emuURL("p/"), Stores: lanes, Read: store.Options{Prefix: true, FirstRange: 256 << 10, FanOut: 1}, URL: "s3://bench/p/", Dest: dir}
	run, err := Open(context.Background(), Spec{Get: get, Engine: transfer.Options{PartSize: 256 << 10}, SpaceCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	run.space = fixedSpace{free: 1 << 20} // three objects of 1 MiB
	sum, err := run.Transfer(context.Background(), Hooks{})
	var se *SpaceError
	if !errors.As(err, &se) || se.Need <= se.Free || sum.Bytes != 0 {
		t.Fatalf("transfer: %+v, %v; want a *SpaceError and no byte", sum, err)
	}
}

// TestStartWindowKeepsTheOptions: the window starts where the store's
// connections need it unless the options set it.
func TestStartWindowKeepsTheOptions(t *testing.T) {
	for _, tt := range []struct{ store, set, want int }{
		{transfer.TLSStartWindow, 0, transfer.TLSStartWindow},
		{0, 0, 0},
		{transfer.TLSStartWindow, 8, 8},
	} {
		r := &Run{Options: transfer.Options{StartWindow: tt.set}}
		r.startOver(tt.store)
		if r.Options.StartWindow != tt.want {
			t.Errorf("store %d, set %d: start window %d, want %d", tt.store, tt.set, r.Options.StartWindow, tt.want)
		}
	}
}
