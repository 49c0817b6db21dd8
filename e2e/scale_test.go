package e2e

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// scaleManifest writes a manifest of every key of ds under prefix, a
// size after every other one (the rest are looked up), with extra keys
// inserted before the index they are mapped to.
func scaleManifest(t *testing.T, ds s3emu.Dataset, prefix string, extra map[int]string) (path string, keys []string) {
	t.Helper()
	for _, g := range ds.Groups {
		for i := range g.Count {
			if k := g.Key(i); strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, key := range keys {
		if k, ok := extra[i]; ok {
			fmt.Fprintln(&b, k)
		}
		if i%2 == 0 {
			fmt.Fprintf(&b, "%s\t%d\n", key, g(ds, key))
		} else {
			fmt.Fprintf(&b, "s3://%s/%s\n", s3emu.DefaultBucket, key)
		}
	}
	return writeFile(t, b.String()), keys
}

// g is the size of key in ds.
func g(ds s3emu.Dataset, key string) int64 {
	size, _ := ds.Lookup(key)
	return size
}

// shardSummary parses the last JSON line of a run's stdout that has a
// shard (a failed run ends with an error line after it).
func shardSummary(t *testing.T, stdout string) shardLine {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], `"shard":`) {
			return lastShardLine(t, lines[i])
		}
	}
	t.Fatalf("no summary with a shard in %q", stdout)
	return shardLine{}
}

// writes counts, per key of bucket, the requests that create an object
// (PutObject, CopyObject, CreateMultipartUpload) in the emulator's log.
func writes(s *store, bucket string) map[string]int {
	n := map[string]int{}
	for _, r := range s.emu.Log() {
		q, _ := url.ParseQuery(r.Query)
		if r.Bucket == bucket && r.Status/100 == 2 &&
			(r.Method == "PUT" && !q.Has("partNumber") || r.Method == "POST" && q.Has("uploads")) {
			n[r.Key]++
		}
	}
	return n
}

// sameObjects checks that bucket holds, under prefix, exactly the
// synthetic objects keys (key = srcPrefix + name), each written once.
func sameObjects(t *testing.T, s *store, bucket, prefix, srcPrefix string, keys []string) {
	t.Helper()
	dst := &store{client: s.client, bucket: bucket}
	got := dst.keys(t, prefix)
	if len(got) != len(keys) {
		t.Fatalf("s3://%s/%s holds %d objects, want %d", bucket, prefix, len(got), len(keys))
	}
	w := writes(s, bucket)
	for _, k := range keys {
		name := prefix + strings.TrimPrefix(k, srcPrefix)
		b := dst.get(t, name)
		want := make([]byte, len(b))
		s3emu.SyntheticBytes(k, 0, want)
		if size, _ := s.emu.Dataset().Lookup(k); int64(len(b)) != size || !bytes.Equal(b, want) {
			t.Errorf("s3://%s/%s: %d bytes, differs from %s (%d bytes)", bucket, name, len(b), k, size)
		}
		if w[name] != 1 {
			t.Errorf("s3://%s/%s was written %d times, want once", bucket, name, w[name])
		}
	}
}

// TestCopyS3ToS3WithManifestAndShards copies between buckets from a
// manifest, whole and split over three processes started together: the
// destination is the manifest's objects byte-exact, each written once,
// and no listing is sent.
func TestCopyS3ToS3WithManifestAndShards(t *testing.T) {
	const dataset = "d/a:9:200KiB,d/b:4:1MiB,d/c:2:3MiB,other:3:1KiB"
	s := emuStore(t, s3emu.Options{Dataset: dataset, Buckets: []string{"dst"}, LogRequests: true})
	man, keys := scaleManifest(t, s.emu.Dataset(), "d/", nil)
	flags := []string{"--manifest", man, "--partsize", "1MiB", "--copy-threshold", "1MiB"}

	r := run(t, nil, append(s.cmd("copy", flags...), s.url("d"), "s3://dst/whole/")...)
	if r.code != 0 {
		t.Fatalf("copy --manifest: exit %d\n%s", r.code, r.stderr)
	}
	if n := s.emu.Stats().ListRequests; n != 0 {
		t.Fatalf("copy --manifest sent %d listing requests, want none", n)
	}
	sameObjects(t, s, "dst", "whole/", "d/", keys)

	s.emu.ResetStats()
	const n = 3
	var args [][]string
	for k := range n {
		args = append(args, append(s.cmd("copy", append(flags, "--json", "--shard", fmt.Sprintf("%d/%d", k, n))...), s.url("d"), "s3://dst/sharded/"))
	}
	var summaries []string
	var objects int64
	for k, r := range runAll(t, nil, args) {
		if r.code != 0 {
			t.Fatalf("shard %d/%d: exit %d\n%s", k, n, r.code, r.stderr)
		}
		l := shardSummary(t, r.stdout)
		if l.Shard.ListingObjects != int64(len(keys)) {
			t.Fatalf("shard %d saw %d objects, the manifest has %d", k, l.Shard.ListingObjects, len(keys))
		}
		objects += l.Shard.Objects
		f := filepath.Join(t.TempDir(), fmt.Sprintf("shard-%d.json", k))
		if err := os.WriteFile(f, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		summaries = append(summaries, f)
	}
	if objects != int64(len(keys)) {
		t.Fatalf("the shards hold %d objects, the manifest %d", objects, len(keys))
	}
	if n := s.emu.Stats().ListRequests; n != 0 {
		t.Fatalf("sharded copies sent %d listing requests, want none", n)
	}
	sameObjects(t, s, "dst", "sharded/", "d/", keys)
	if r := run(t, nil, append([]string{"shards", "check"}, summaries...)...); r.code != 0 || !strings.Contains(r.stdout, "ok: 3 shards") {
		t.Fatalf("shards check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestManifestShardsSurviveFailedLookups: an entry without a size whose
// object is gone fails that object alone, in the one shard it falls in;
// the split depends on the manifest only, so it is the same whether the
// lookups succeed or fail (then every entry whose
// lookup failed fails alone), and each entry is looked up by one node
// only.
func TestManifestShardsSurviveFailedLookups(t *testing.T) {
	const dataset = "d/a:8:100KiB,d/b:8:300KiB"
	fleet := func(t *testing.T, faults *s3emu.Faults, arrive int) ([]shardLine, []result, []string, *store) {
		s := emuStore(t, s3emu.Options{Dataset: dataset, Faults: faults})
		man, keys := scaleManifest(t, s.emu.Dataset(), "d/", map[int]string{5: "d/gone", 11: "d/gone-too\t4096"})
		var args [][]string
		var dests []string
		for k := range 2 {
			dests = append(dests, t.TempDir())
			args = append(args, append(s.cmd("get", "--json", "--manifest", man, "--shard", fmt.Sprintf("%d/2", k)), s.url("d/"), dests[k]))
		}
		res := runAll(t, nil, args)
		var lines []shardLine
		for _, r := range res {
			lines = append(lines, shardSummary(t, r.stdout))
		}
		where := syntheticTree(t, "d/", dests)
		if arrive < 0 {
			arrive = len(keys)
		}
		if len(where) != arrive {
			t.Fatalf("the DESTs hold %d objects, want %d", len(where), arrive)
		}
		return lines, res, dests, s
	}

	healthy, res, _, s := fleet(t, nil, -1)
	var failed int
	for k, r := range res {
		l := healthy[k]
		gone := 0
		held := objectStatus(t, r.stdout)
		for _, key := range []string{"d/gone", "d/gone-too"} {
			if _, ok := held[key]; ok {
				gone++
				if !strings.Contains(r.stderr, key) {
					t.Errorf("shard %d holds %s but does not name it:\n%s", k, key, r.stderr)
				}
			}
		}
		if l.Failed != int64(gone) || (gone > 0) != (r.code == 1) || (gone == 0) != (r.code == 0) {
			t.Errorf("shard %d holds %d missing objects: exit %d, %d failed; want exit %d", k, gone, r.code, l.Failed, min(gone, 1))
		}
		failed += gone
		if l.Shard.ListingObjects != 18 || l.Shard.ListingUnsized != 9 {
			t.Errorf("shard %d saw %d entries, %d without a size; want 18 and 9", k, l.Shard.ListingObjects, l.Shard.ListingUnsized)
		}
	}
	if failed != 2 {
		t.Fatalf("%d shards reported the missing objects, want each reported once", failed)
	}
	// The fleet did not get everything: shards check names each shard
	// that failed objects.
	check := run(t, nil, append([]string{"shards", "check"}, saveOutputs(t, res)...)...)
	for k, l := range healthy {
		named := strings.Contains(check.stdout, fmt.Sprintf("shard %d/2 (", k)) && strings.Contains(check.stdout, "failed")
		if check.code != 1 || named != (l.Failed > 0) {
			t.Errorf("shards check of a fleet with %d failed in shard %d: exit %d\n%s", l.Failed, k, check.code, check.stdout)
		}
	}
	// Each entry without a size is looked up once in the fleet, by the
	// shard it falls in: 8 objects and d/gone.
	if n := s.emu.Stats().HeadRequests; n != 9 {
		t.Errorf("the fleet sent %d HEADs, want 9 (each entry without a size once)", n)
	}

	// Every lookup failing (a server error, retried) changes the split in
	// nothing: each shard fails exactly its own entries without a size
	// (and d/gone-too, sized but gone); the 8 sized objects that exist
	// arrive.
	failing := s3emu.NewFaults(s3emu.Rule{Method: "HEAD", Key: "*", Times: -1, Action: s3emu.Status{Code: 500}})
	broken, res2, _, _ := fleet(t, failing, 8)
	var unsized int64
	for k := range broken {
		a, b := healthy[k].Shard, broken[k].Shard
		if *a != *b {
			t.Errorf("shard %d split differently when its lookups failed:\n%+v\n%+v", k, *a, *b)
		}
		unsized += b.Unsized
		want := b.Unsized
		if _, ok := objectStatus(t, res[k].stdout)["d/gone-too"]; ok {
			want++ // d/gone-too
		}
		if broken[k].Failed != want || (want > 0) != (res2[k].code == 1) {
			t.Errorf("shard %d: exit %d, %d failed with failing lookups; want %d failed", k, res2[k].code, broken[k].Failed, want)
		}
	}
	if unsized != 9 {
		t.Errorf("the shards hold %d entries without a size, want 9", unsized)
	}
}
