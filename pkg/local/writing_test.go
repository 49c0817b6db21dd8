package local

import (
	"bytes"
	"context"
	"os"
	"testing"
)

// TestWritingNamesThePartialFile: while an object is being written,
// Writing names the file its bytes land in (a fresh partial file, or the
// one an earlier run left and this one resumes), readable there as they
// are written; once the file is committed or aborted, it names nothing.
func TestWritingNamesThePartialFile(t *testing.T) {
	dir := t.TempDir()
	obj, data := checkedObject("d/obj")
	first, err := NewSink(dir, Options{ResumeMin: 2 * resumePart})
	if err != nil {
		t.Fatal(err)
	}
	if got := first.Writing(obj.Name); got != "" {
		t.Errorf("before Create: Writing %q, want none", got)
	}
	f, err := first.Create(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	p := first.Writing(obj.Name)
	if p == "" || first.Writing("d/other") != "" {
		t.Fatalf("Writing %q for the object being written, %q for another; want its partial file and none", p, first.Writing("d/other"))
	}
	if _, err := f.WriteAt(data[resumePart:2*resumePart], resumePart); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got[resumePart:2*resumePart], data[resumePart:2*resumePart]) {
		t.Fatalf("the file Writing names does not hold the bytes written (%v)", err)
	}
	if _, err := f.WriteAt(data[:resumePart], 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data[2*resumePart:], 2*resumePart); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := first.Writing(obj.Name); got != "" {
		t.Errorf("after Commit: Writing %q, want none", got)
	}
	first.Close()

	// A run resumes the partial file an earlier one left: Writing names
	// that file, whatever run named it.
	resumed, _ := checkedObject("d/resumed")
	old, err := NewSink(dir, Options{ResumeMin: 2 * resumePart})
	if err != nil {
		t.Fatal(err)
	}
	interrupted(t, old, resumed, data)
	old.Close()
	again, err := NewSink(dir, Options{ResumeMin: 2 * resumePart})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	rf, err := again.Create(context.Background(), resumed)
	if err != nil {
		t.Fatal(err)
	}
	p = again.Writing(resumed.Name)
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got[:resumePart], data[:resumePart]) {
		t.Fatalf("resumed: Writing %q, which holds %d bytes (%v); want the partial file with the first run's parts", p, len(got), err)
	}
	if err := rf.Abort(); err != nil {
		t.Fatal(err)
	}
	if got := again.Writing(resumed.Name); got != "" {
		t.Errorf("after Abort: Writing %q, want none", got)
	}
}
