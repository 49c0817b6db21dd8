package local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// memSource is a small in-memory source: objects by name, each with its
// bytes; open, when set, runs before a body is returned (a file that
// "appears during the run").
type memSource struct {
	objs []transfer.Object
	data map[string][]byte
	open func(obj *transfer.Object)
}

func (m *memSource) List(ctx context.Context, emit func(transfer.Object) error) error {
	for _, o := range m.objs {
		if err := emit(o); err != nil {
			return err
		}
	}
	return nil
}

func (m *memSource) Open(_ context.Context, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	if m.open != nil {
		m.open(obj)
	}
	b := m.data[obj.Key]
	if n < 0 || off+n > int64(len(b)) {
		n = int64(len(b)) - off
	}
	return &transfer.Body{ReadCloser: io.NopCloser(bytes.NewReader(b[off : off+n])), Off: off, Len: n,
		Size: int64(len(b)), ETag: obj.ETag}, nil
}

func (m *memSource) add(name string, data []byte) {
	if m.data == nil {
		m.data = map[string][]byte{}
	}
	m.objs = append(m.objs, transfer.Object{Key: name, Name: name, Size: int64(len(data)), ETag: fmt.Sprintf(`"%x"`, len(m.objs))})
	m.data[name] = data
}

type results struct {
	transfer.NopObserver
	mu  sync.Mutex
	got map[string]transfer.Result
}

func (r *results) ObjectDone(res transfer.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got[res.Object.Name] = res
}

// TestFailedCommitsLeaveOtherObjectsWhole runs objects whose commits fail
// (a key that is both an object and a prefix, a file that appears under
// --no-clobber) among unrelated objects, many times: a failing commit
// must not close or reuse a descriptor another object's file holds, so
// every unrelated object lands whole and no partial file is left.
func TestFailedCommitsLeaveOtherObjectsWhole(t *testing.T) {
	rounds := 6
	if testing.Short() {
		rounds = 3
	}
	for _, noClobber := range []bool{false, true} {
		t.Run(fmt.Sprintf("noclobber=%v", noClobber), func(t *testing.T) {
			for round := range rounds {
				commitRound(t, noClobber, round)
				if t.Failed() {
					return
				}
			}
		})
	}
}

// fastDir is a fresh directory on tmpfs when there is one (a commit's
// fsync costs nothing there), else under the test's temporary directory.
func fastDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "s3pd-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

func commitRound(t *testing.T, noClobber bool, round int) {
	dir := fastDir(t)
	src := &memSource{}
	unrelated := map[string][]byte{}
	for i := range 80 {
		// Conflicting pairs: "pI/c" is a file and a directory.
		src.add(fmt.Sprintf("p%03d/c", i), bytes.Repeat([]byte{byte(i)}, 300+i))
		src.add(fmt.Sprintf("p%03d/c/b", i), bytes.Repeat([]byte{byte(i + 1)}, 200+i))
		// Unrelated objects, some fetched in parts, in their own directories.
		name := fmt.Sprintf("u%03d/d/f", i)
		data := make([]byte, 1000+i*97%9000)
		for j := range data {
			data[j] = byte(i*31 + j*7 + round)
		}
		src.add(name, data)
		unrelated[name] = data
		if noClobber {
			src.add(fmt.Sprintf("n%03d/n", i), []byte("object"))
		}
	}
	if noClobber {
		src.open = func(obj *transfer.Object) {
			if strings.HasPrefix(obj.Name, "n") {
				os.MkdirAll(filepath.Join(dir, filepath.Dir(obj.Name)), 0o777)
				os.WriteFile(filepath.Join(dir, obj.Name), []byte("appeared"), 0o666)
			}
		}
	}
	sk, err := NewSink(dir, Options{NoClobber: noClobber})
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	res := &results{got: map[string]transfer.Result{}}
	eng, err := transfer.New([]transfer.Lane{{Name: "mem", Source: src}}, sk, transfer.Options{
		Workers: 32, Threads: 4, PartSize: 1024, Threshold: 2048, Observer: res, Verify: transfer.VerifyOff})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Run(context.Background()); err != nil {
		t.Fatalf("round %d: Run: %v", round, err)
	}
	for name, data := range unrelated {
		if r := res.got[name]; r.Err != nil {
			t.Errorf("round %d: unrelated %s failed: %v", round, name, r.Err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("round %d: unrelated %s: %d bytes, want %d, equal %v (%v)", round, name, len(got), len(data), bytes.Equal(got, data), err)
		}
	}
	for i := range 80 {
		if noClobber {
			got, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("n%03d/n", i)))
			if string(got) != "appeared" {
				t.Errorf("round %d: n%03d/n holds %q, want the file that appeared", round, i, got)
			}
		}
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".partial") {
			t.Errorf("round %d: partial file left: %s", round, p)
		}
		return nil
	})
}
