package manifest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// files is a hand-written store of locations for Open.
type files map[string][]byte

func (f files) open(_ context.Context, loc string) (io.ReadCloser, error) {
	if b, ok := f[loc]; ok {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	return os.Open(loc)
}

// objects is a hand-written source for Stat: key -> size; lookups counts
// calls, delay makes them finish out of order.
type objects struct {
	sizes   map[string]int64
	lookups atomic.Int64
	delay   bool
}

func (o *objects) stat(_ context.Context, key string) (transfer.Object, error) {
	o.lookups.Add(1)
	if o.delay {
		time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond) // lookups out of order: injected
	}
	n, ok := o.sizes[key]
	if !ok {
		return transfer.Object{}, transfer.ErrNotFound
	}
	return transfer.Object{Key: key, Size: n, ETag: fmt.Sprintf(`"%s"`, key)}, nil
}

func list(t *testing.T, l *Lister) ([]transfer.Object, error) {
	t.Helper()
	var got []transfer.Object
	err := l.List(context.Background(), func(o transfer.Object) error { got = append(got, o); return nil })
	return got, err
}

func TestTextManifest(t *testing.T) {
	src := &objects{sizes: map[string]int64{"p/c": 30}}
	man := "# a comment\n\ns3://b/p/a\t10\r\np/sub/b\t0\np/c\n"
	l := New(Options{Location: "m", Bucket: "b", Prefix: "p/", Open: files{"m": []byte(man)}.open, Stat: src.stat})
	got, err := list(t, l)
	if err != nil {
		t.Fatal(err)
	}
	want := []transfer.Object{
		{Key: "p/a", Name: "a", Size: 10},
		{Key: "p/sub/b", Name: "sub/b", Size: 0},
		{Key: "p/c", Name: "c", Size: 30, ETag: `"p/c"`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if n := src.lookups.Load(); n != 1 {
		t.Fatalf("%d lookups, want 1 (only the entry without a size)", n)
	}
}

func TestTextManifestKeepsOrderWhileLookingUp(t *testing.T) {
	src := &objects{sizes: map[string]int64{}, delay: true}
	var man strings.Builder
	var want []string
	for i := range 500 {
		k := fmt.Sprintf("k/%04d", i)
		src.sizes[k] = int64(i)
		want = append(want, k)
		if i%3 == 0 {
			fmt.Fprintf(&man, "%s\t%d\n", k, i)
		} else {
			fmt.Fprintln(&man, k)
		}
	}
	l := New(Options{Location: "m", Bucket: "b", Open: files{"m": []byte(man.String())}.open, Stat: src.stat, Lookups: 8})
	got, err := list(t, l)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range got {
		if o.Key != want[i] || o.Size != int64(i) {
			t.Fatalf("entry %d: %s (%d bytes), want %s (%d)", i, o.Key, o.Size, want[i], i)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
}

func TestTextManifestErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		name, man string
		line      int
		want      string
	}{
		{"outside the prefix", "p/a\nq/b\n", 2, `key "q/b" is not under s3://b/p/`},
		{"another bucket", "# x\ns3://other/p/a\n", 2, "not in bucket b"},
		{"bad size", "p/a\t-3\n", 1, "want a number of bytes"},
		{"the prefix itself", "p/\n", 1, "is not under"},
		{"not UTF-8", "p/\xff\n", 1, "not UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := New(Options{Location: "m", Bucket: "b", Prefix: "p/", Open: files{"m": []byte(tc.man)}.open})
			_, err := list(t, l)
			var le *LineError
			if !errors.As(err, &le) || le.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want line %d with %q", err, tc.line, tc.want)
			}
		})
	}
}

func gz(t *testing.T, s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const inventoryJSON = `{
  "sourceBucket": "b",
  "destinationBucket": "arn:aws:s3:::inv",
  "version": "2016-11-30",
  "fileFormat": "CSV",
  "fileSchema": "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, ETag, StorageClass, ChecksumAlgorithm",
  "files": [
    {"key": "inv/b/cfg/data/one.csv.gz", "size": 1, "MD5checksum": "x"},
    {"key": "inv/b/cfg/data/two.csv.gz", "size": 1, "MD5checksum": "x"}
  ]
}`

var inventoryFiles = []string{
	`"b","p%2Fa+b%C3%BC","v2","true","false","10","2026-01-02T03:04:05.000Z","0123abcd","STANDARD","CRC64NVME"
"b","p%2Fold","v1","false","false","5","2026-01-01T00:00:00.000Z","aa","STANDARD",""
"b","p%2Fgone","v3","true","true","","2026-01-01T00:00:00.000Z","","",""
"b","q%2Foutside","v1","true","false","7","2026-01-01T00:00:00.000Z","bb","STANDARD",""
`,
	`"b","p%2Fdir%2Fc","","true","false","3","2026-01-03T00:00:00Z","cc-2","GLACIER",""
`,
}

func TestInventoryFromS3(t *testing.T) {
	fs := files{
		"s3://inv/inv/b/cfg/2026-01-04T00-00Z/manifest.json": []byte(inventoryJSON),
		"s3://inv/inv/b/cfg/data/one.csv.gz":                 gz(t, inventoryFiles[0]),
		"s3://inv/inv/b/cfg/data/two.csv.gz":                 gz(t, inventoryFiles[1]),
	}
	l := New(Options{Location: "s3://inv/inv/b/cfg/2026-01-04T00-00Z/manifest.json", Bucket: "b", Prefix: "p/", Open: fs.open})
	got, err := list(t, l)
	if err != nil {
		t.Fatal(err)
	}
	want := []transfer.Object{
		{Key: "p/a bü", Name: "a bü", Size: 10, ETag: `"0123abcd"`, ModTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), StorageClass: "STANDARD", ChecksumAlgorithm: "CRC64NVME"},
		{Key: "p/dir/c", Name: "dir/c", Size: 3, ETag: `"cc-2"`, ModTime: time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC), StorageClass: "GLACIER"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestInventoryFromLocalLayout(t *testing.T) {
	root := t.TempDir()
	dated := filepath.Join(root, "cfg", "2026-01-04T00-00Z")
	data := filepath.Join(root, "cfg", "data")
	for _, d := range []string{dated, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dated, "manifest.json"), []byte(inventoryJSON), 0o644)
	os.WriteFile(filepath.Join(data, "one.csv.gz"), gz(t, inventoryFiles[0]), 0o644)
	os.WriteFile(filepath.Join(dated, "two.csv.gz"), gz(t, inventoryFiles[1]), 0o644) // beside manifest.json
	l := New(Options{Location: filepath.Join(dated, "manifest.json"), Bucket: "b", Prefix: "p/", Open: files{}.open})
	got, err := list(t, l)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Key != "p/a bü" || got[1].Key != "p/dir/c" {
		t.Fatalf("got %+v", got)
	}
}

func TestInventoryRefusesOtherBucketsAndFormats(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{strings.Replace(inventoryJSON, `"sourceBucket": "b"`, `"sourceBucket": "c"`, 1), "an inventory of bucket c"},
		{strings.Replace(inventoryJSON, `"CSV"`, `"Parquet"`, 1), "reads CSV inventories"},
		{`{"fileFormat": "CSV", "fileSchema": "Bucket, Size", "files": []}`, "has no Key"},
	} {
		l := New(Options{Location: "m", Bucket: "b", Open: files{"m": []byte(tc.doc)}.open})
		if _, err := list(t, l); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

func TestRefreshLooksTheObjectUpAgain(t *testing.T) {
	src := &objects{sizes: map[string]int64{"p/a": 99}}
	l := New(Options{Location: "m", Bucket: "b", Prefix: "p/", Stat: src.stat})
	o := transfer.Object{Key: "p/a", Name: "a", Size: 10, ETag: `"stale"`}
	if err := l.Refresh(context.Background(), &o); err != nil {
		t.Fatal(err)
	}
	if o.Size != 99 || o.ETag != `"p/a"` || o.Name != "a" {
		t.Fatalf("refreshed to %+v", o)
	}
}

func TestUnresolvedListsAsWrittenAndResolveLooksUpLater(t *testing.T) {
	// A split needs the manifest as written (no lookups, whose results
	// could differ from node to node); Resolve then looks up only what
	// the split kept, in order, and leaves a failed lookup unknown.
	src := &objects{sizes: map[string]int64{"p/a": 10, "p/c": 30}, delay: true}
	man := "p/a\np/b\t20\np/gone\np/c\n"
	l := New(Options{Location: "m", Bucket: "b", Prefix: "p/", Open: files{"m": []byte(man)}.open, Stat: src.stat, Unresolved: true})
	got, err := list(t, l)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int64{-1, 20, -1, -1} {
		if got[i].Size != want {
			t.Fatalf("unresolved entry %d: %+v, want size %d", i, got[i], want)
		}
	}
	if n := src.lookups.Load(); n != 0 {
		t.Fatalf("%d lookups while listing unresolved, want none", n)
	}
	// Refresh still works through Resolve.
	r := Resolve(l, src.stat, 2)
	if _, ok := r.(transfer.Refresher); !ok {
		t.Fatal("Resolve of a Refresher is no Refresher")
	}
	var res []transfer.Object
	if err := r.List(context.Background(), func(o transfer.Object) error { res = append(res, o); return nil }); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int64{10, 20, -1, 30} {
		if res[i].Size != want {
			t.Fatalf("resolved entry %d: %+v, want size %d", i, res[i], want)
		}
	}
	if n := src.lookups.Load(); n != 3 {
		t.Fatalf("%d lookups, want 3 (the entries without a size)", n)
	}
}
