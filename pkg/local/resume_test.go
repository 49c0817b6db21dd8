package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/s3pd/s3pd/pkg/checksum"
	"github.com/s3pd/s3pd/pkg/transfer"
)

const resumePart = 4096

// checkedObject is an object of 4 parts with its full-object CRC64NVME.
func checkedObject(name string) (transfer.Object, []byte) {
	data := make([]byte, 4*resumePart)
	for i := range data {
		data[i] = byte(i*13 + i/7)
	}
	crc := checksum.Start(checksum.CRC64NVME)
	crc.Update(data)
	return transfer.Object{Key: name, Name: name, Size: int64(len(data)), ETag: `"v1"`,
		ChecksumAlgorithm: string(checksum.CRC64NVME),
		Checksums:         map[string]string{string(checksum.CRC64NVME): checksum.Encode(checksum.CRC64NVME, crc.Sum())}}, data
}

// interrupted leaves what a killed run leaves: parts 0 and 2 written and
// journaled with their CRCs (as the engine computes them), the file kept.
func interrupted(t *testing.T, s *Sink, obj transfer.Object, data []byte) {
	t.Helper()
	f, err := s.Create(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, 2 * resumePart} {
		part := data[off : off+resumePart]
		f.WriteAt(part, off)
		crc := checksum.Start(checksum.CRC64NVME)
		crc.Update(part)
		f.(transfer.Journal).PartDone(off, resumePart, fmt.Sprintf("%s=%x", checksum.CRC64NVME, crc.Sum()))
	}
	if _, err := f.(transfer.Journal).Suspend(); err != nil {
		t.Fatal(err)
	}
}

// countingSource is a memSource that counts the ranges opened, by offset.
type countingSource struct {
	memSource
	mu     sync.Mutex
	opened map[int64]int
}

func (c *countingSource) Open(ctx context.Context, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	c.mu.Lock()
	c.opened[off]++
	c.mu.Unlock()
	return c.memSource.Open(ctx, obj, off, n)
}

// resumeRun runs the engine over obj into dir and returns its result and
// the ranges it fetched.
func resumeRun(t *testing.T, dir string, opts Options, obj transfer.Object, data []byte) (transfer.Result, map[int64]int) {
	t.Helper()
	src := &countingSource{opened: map[int64]int{}}
	src.memSource = memSource{objs: []transfer.Object{obj}, data: map[string][]byte{obj.Key: data}}
	opts.ResumeMin = 2 * resumePart
	sk, err := NewSink(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	res := &results{got: map[string]transfer.Result{}}
	eng, err := transfer.New([]transfer.Lane{{Name: "mem", Source: src}}, sk, transfer.Options{
		Workers: 1, Threads: 2, PartSize: resumePart, Threshold: 2 * resumePart, Observer: res})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return res.got[obj.Name], src.opened
}

// TestResumeCoversWhatIsOnDisk: a resumed part counts only if the bytes
// now in the partial file still have the CRC its run journaled; a
// journal whose partial file was replaced, or which --no-resume made
// stale, is ignored with a warning. In every case the file at the final
// name is the object, and "verified" is said of those bytes.
func TestResumeCoversWhatIsOnDisk(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string) // between the runs
		opts    Options
		fetched []int64 // the ranges the second run must fetch
		warn    string
	}{
		{"untouched", func(*testing.T, string) {}, Options{}, []int64{resumePart, 3 * resumePart}, ""},
		{"a resumed part changed on disk", func(t *testing.T, dir string) {
			p := partialPath(t, dir)
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("garbage"), 2*resumePart+100)
			f.Close()
		}, Options{}, []int64{resumePart, 2 * resumePart, 3 * resumePart}, ""},
		{"the partial file replaced", func(t *testing.T, dir string) {
			p := partialPath(t, dir)
			b, _ := os.ReadFile(p)
			os.Remove(p)
			os.WriteFile(p, b, 0o666) // same bytes, another inode
		}, Options{}, []int64{0, resumePart, 2 * resumePart, 3 * resumePart}, "not the one the journal describes"},
		{"the partial file gone", func(t *testing.T, dir string) {
			os.Remove(partialPath(t, dir))
		}, Options{}, []int64{0, resumePart, 2 * resumePart, 3 * resumePart}, "partial file is gone"},
		{"--no-resume", func(*testing.T, string) {}, Options{NoResume: true}, []int64{0, resumePart, 2 * resumePart, 3 * resumePart}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			obj, data := checkedObject("d/obj")
			first, err := NewSink(dir, Options{ResumeMin: 2 * resumePart})
			if err != nil {
				t.Fatal(err)
			}
			interrupted(t, first, obj, data)
			first.Close()
			tt.damage(t, dir)
			var warned []string
			opts := tt.opts
			opts.Warn = func(m string) { warned = append(warned, m) }
			res, opened := resumeRun(t, dir, opts, obj, data)
			if res.Err != nil {
				t.Fatalf("second run: %v", res.Err)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "d/obj")); string(got) != string(data) {
				t.Fatalf("the file at the final name differs from the object")
			}
			if !strings.Contains(fmt.Sprint(res.Verification), "crc64nvme") {
				t.Errorf("verification %v, want crc64nvme", res.Verification)
			}
			var got []int64
			for off := int64(0); off < obj.Size; off += resumePart {
				if opened[off] > 0 {
					got = append(got, off)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.fetched) {
				t.Errorf("fetched ranges at %v, want %v", got, tt.fetched)
			}
			if w := strings.Join(warned, "\n"); tt.warn != "" && !strings.Contains(w, tt.warn) || tt.warn == "" && w != "" {
				t.Errorf("warnings %q, want one with %q", w, tt.warn)
			}
			if _, err := os.Stat(filepath.Join(dir, WorkDir)); !os.IsNotExist(err) {
				t.Errorf("work folder after a complete run: %v", err)
			}
		})
	}
}

// TestNoResumeLeavesNoStaleJournal: a --no-resume run that is itself
// interrupted before it journals anything leaves no journal of the
// earlier run behind, so a later run cannot trust the old parts.
func TestNoResumeLeavesNoStaleJournal(t *testing.T) {
	dir := t.TempDir()
	obj, data := checkedObject("obj")
	s, err := NewSink(dir, Options{ResumeMin: 2 * resumePart})
	if err != nil {
		t.Fatal(err)
	}
	interrupted(t, s, obj, data)
	s.Close()
	s, err = NewSink(dir, Options{ResumeMin: 2 * resumePart, NoResume: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Create(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	f.(transfer.Journal).Suspend() // killed before its first journal batch
	s.Close()
	left, _ := filepath.Glob(filepath.Join(dir, WorkDir, "*"))
	if len(left) != 0 {
		t.Fatalf("after an interrupted --no-resume run: %v, want nothing", left)
	}
}

func partialPath(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, WorkDir, "*.partial"))
	if len(m) != 1 {
		t.Fatalf("partial files: %v, want one", m)
	}
	return m[0]
}
