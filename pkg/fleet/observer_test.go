package fleet_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/fleet"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// A rerun (a node restarted) skips the files an earlier run landed, and
// serves them again: a skipped file of the object's size dated with its
// modification time is marked Ready. A file that merely has the name (a
// size or a date of its own), a failed object and an empty one are not.
func TestObserverServesWhatAnEarlierRunLanded(t *testing.T) {
	servers, addrs := startServers(t, 1)
	dir := t.TempDir()
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	write := func(name string, data []byte, at time.Time) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	write("landed", []byte("hello"), mtime)
	write("dated-otherwise", []byte("hello"), mtime.Add(time.Second))
	write("other-size", []byte("hello!"), mtime)
	write("empty", nil, mtime)
	o := &fleet.Observer{Server: servers[0], Path: func(obj transfer.Object) string { return filepath.Join(dir, obj.Name) }}
	for _, tt := range []struct {
		name  string
		size  int64
		err   error
		serve bool
	}{
		{"landed", 5, nil, true},
		{"dated-otherwise", 5, nil, false},
		{"other-size", 5, nil, false},
		{"empty", 0, nil, false},
		{"missing", 5, nil, false},
		{"landed-but-failed", 5, transfer.ErrChecksum, false},
	} {
		obj := transfer.Object{Key: "p/" + tt.name, Name: tt.name, Size: tt.size, ETag: `"e"`, ModTime: mtime}
		if tt.name == "landed-but-failed" {
			obj.Name = "landed"
		}
		o.ObjectDone(transfer.Result{Object: obj, Skipped: "unchanged (size and mtime)", Err: tt.err})
		got := ask(t, http.MethodGet, addrs[0], obj.Key, token)
		if served := got.status == http.StatusOK; served != tt.serve {
			t.Errorf("%s: %d %q, want served %v", tt.name, got.status, got.body, tt.serve)
		}
	}
}

// An object committed with nothing of S3's to verify it by is served
// only when the fleet trusts its peers for such objects (TrustPeers);
// one committed verified is served either way.
func TestObserverServesUnverifiedOnlyWhenTrusted(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "obj"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	obj := transfer.Object{Key: "p/obj", Name: "obj", Size: 5, ETag: `"e"`}
	for _, tt := range []struct {
		trust    bool
		verified bool
		serve    bool
	}{{false, false, false}, {true, false, true}, {false, true, true}} {
		servers, addrs := startServers(t, 1)
		src, err := fleet.NewSource(nil, fleet.SourceOptions{Self: 0, Peers: addrs, Token: token, Owner: func(string) int { return -1 }, TrustPeers: tt.trust})
		if err != nil {
			t.Fatal(err)
		}
		o := &fleet.Observer{Server: servers[0], Source: src, Path: func(obj transfer.Object) string { return filepath.Join(dir, obj.Name) }}
		r := transfer.Result{Object: obj}
		if tt.verified {
			r.Verification.Checksums = []string{"crc64nvme"}
		}
		o.ObjectDone(r)
		got := ask(t, http.MethodGet, addrs[0], obj.Key, token)
		if served := got.status == http.StatusOK; served != tt.serve {
			t.Errorf("trust %v, verified %v: %d, want served %v", tt.trust, tt.verified, got.status, tt.serve)
		}
	}
}
