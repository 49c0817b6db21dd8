package local

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// dirTarget is a destination directory; copy makes its sinks CopySinks.
type dirTarget struct {
	dir  string
	copy bool
	opts Options
	open *Sink
}

func newDirTarget(t *testing.T, copy bool) *dirTarget {
	tg := &dirTarget{dir: t.TempDir(), copy: copy}
	t.Cleanup(tg.end)
	return tg
}

func (d *dirTarget) end() {
	if d.open != nil {
		d.open.Close()
		d.open = nil
	}
}

func (d *dirTarget) Sink(t testing.TB) transfer.Sink {
	d.end()
	s, err := NewSink(d.dir, d.opts)
	if err != nil {
		t.Fatal(err)
	}
	d.open = s
	if d.copy {
		return NewCopySink(s)
	}
	return s
}

func (d *dirTarget) Read(t testing.TB, name string) ([]byte, bool) {
	b, err := os.ReadFile(filepath.Join(d.dir, filepath.FromSlash(name)))
	return b, err == nil
}

// Names lists every file under the directory, the work folder's too,
// once the sink closed; directories are not listed.
func (d *dirTarget) Names(t testing.TB) []string {
	d.end()
	var names []string
	err := filepath.WalkDir(d.dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(d.dir, p)
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

func TestSinkContract(t *testing.T) {
	(&transfertest.SinkSuite{
		NewTarget: func(t *testing.T) transfertest.Target { return newDirTarget(t, false) },
	}).Run(t)
}

// TestDirectSinkContract runs the contract with direct I/O: the parts go
// through aligned stages, with O_DIRECT where the temporary directory's
// file system takes it.
func TestDirectSinkContract(t *testing.T) {
	(&transfertest.SinkSuite{
		NewTarget: func(t *testing.T) transfertest.Target {
			tg := &dirTarget{dir: t.TempDir(), opts: Options{DirectIO: DirectOn, StageSize: 64 << 10}}
			t.Cleanup(tg.end)
			return tg
		},
	}).Run(t)
}

// TestCopySinkContract runs the contract with the bodies a local copy
// takes: sections of source files, moved by copy_file_range.
func TestCopySinkContract(t *testing.T) {
	srcDir := t.TempDir()
	src, err := NewSource(srcDir, SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	(&transfertest.SinkSuite{
		NewTarget: func(t *testing.T) transfertest.Target { return newDirTarget(t, true) },
		Object: func(t testing.TB, name string, data []byte, modTime time.Time) transfer.Object {
			p := filepath.Join(srcDir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, modTime, modTime); err != nil {
				t.Fatal(err)
			}
			return transfer.Object{Key: p, Name: name, Size: int64(len(data)), ModTime: modTime}
		},
		PartBody: func(t testing.TB, obj transfer.Object, _ []byte, off, n int64) *transfer.Body {
			b, err := src.Open(t.Context(), &obj, off, n)
			if err != nil {
				t.Errorf("open the source: %v", err)
				return &transfer.Body{ReadCloser: failing{err}, Off: off, Len: n, Size: obj.Size}
			}
			return b
		},
	}).Run(t)
}

type failing struct{ err error }

func (f failing) Read([]byte) (int, error) { return 0, f.err }
func (f failing) Close() error             { return nil }

func TestSourceContract(t *testing.T) {
	(&transfertest.SourceSuite{
		New: func(t *testing.T, objects map[string][]byte) transfer.Source {
			dir := t.TempDir()
			for name, data := range objects {
				p := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			src, err := NewSource(dir, SourceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return src
		},
	}).Run(t)
}
