package e2e

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestShardsOfAManifestWithRepeats: a manifest that names a third of
// its keys twice (as listed, as an s3:// URL, without its size, with
// another size: the first entry wins) splits as the same manifest
// without the repeats, shard for shard (dry runs over 5); three shards
// at once fetch every key once, byte-exact, the server sending each
// object's bytes once, and shards check agrees.
func TestShardsOfAManifestWithRepeats(t *testing.T) {
	const dataset = "r/a:60:64KiB,r/b:10:1MiB,r/c:3:6MiB"
	s := emuStore(t, s3emu.Options{Dataset: dataset})
	ds, _ := s3emu.ParseDataset(dataset)
	rng := rand.New(rand.NewPCG(31, 2))
	var lines []string
	for _, g := range ds.Groups {
		for i := range g.Count {
			lines = append(lines, fmt.Sprintf("%s\t%d", g.Key(i), g.Size))
		}
	}
	rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	withRepeats := slices.Clone(lines)
	for i, l := range lines[:len(lines)/3] {
		key, size, _ := strings.Cut(l, "\t")
		again := []string{l, "s3://" + s.bucket + "/" + key + "\t" + size, key, key + "\t1", key + "\t999999999"}[i%5]
		at := slices.Index(withRepeats, l) + 1 + rng.IntN(len(withRepeats)-slices.Index(withRepeats, l))
		withRepeats = slices.Insert(withRepeats, at, again)
	}
	plain := writeFile(t, strings.Join(lines, "\n")+"\n")
	repeated := writeFile(t, strings.Join(withRepeats, "\n")+"\n")

	const dry = 5
	shardArgs := func(manifest string, n int) func(k int) []string {
		return func(k int) []string {
			return append(s.cmd("get", "--json", "--dry-run", "--manifest", manifest, "--shard", fmt.Sprintf("%d/%d", k, n)), s.url("r/"), t.TempDir())
		}
	}
	want, wantKeys := dryShards(t, dry, shardArgs(plain, dry))
	got, gotKeys := dryShards(t, dry, shardArgs(repeated, dry))
	for k := range dry {
		if *got[k].Shard != *want[k].Shard || !maps.Equal(gotKeys[k], wantKeys[k]) {
			t.Errorf("shard %d/%d with repeats: %+v (%d keys), without: %+v (%d keys)", k, dry, *got[k].Shard, len(gotKeys[k]), *want[k].Shard, len(wantKeys[k]))
		}
		if got[k].Shard.ListingObjects != ds.Objects() || got[k].Shard.ListingBytes != ds.Bytes() {
			t.Errorf("shard %d/%d: a listing of %d objects, %d bytes, want each key once: %d, %d", k, dry, got[k].Shard.ListingObjects, got[k].Shard.ListingBytes, ds.Objects(), ds.Bytes())
		}
	}

	const n = 3
	var args [][]string
	var dests []string
	for k := range n {
		dests = append(dests, t.TempDir())
		args = append(args, s.cmd("get", "--json", "--partsize", "1MiB", "--manifest", repeated, "--shard", fmt.Sprintf("%d/%d", k, n), s.url("r/"), dests[k]))
	}
	res := runAll(t, nil, args)
	var outs []string
	var retries int64
	for k, r := range res {
		if r.code != 0 {
			t.Fatalf("shard %d/%d: exit %d\n%s", k, n, r.code, r.stderr)
		}
		l := lastShardLine(t, r.stdout)
		if l.Bytes != l.Shard.Bytes || int64(len(objectStatus(t, r.stdout))) != l.Shard.Objects {
			t.Errorf("shard %d/%d moved %d bytes in %d objects, its share is %d bytes in %d", k, n, l.Bytes, len(objectStatus(t, r.stdout)), l.Shard.Bytes, l.Shard.Objects)
		}
		retries += l.Retries + l.Hedged
		f := filepath.Join(t.TempDir(), fmt.Sprintf("shard-%d.json", k))
		if err := os.WriteFile(f, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, f)
	}
	where := syntheticTree(t, "r/", dests)
	if int64(len(where)) != ds.Objects() {
		t.Fatalf("the DESTs hold %d objects, the dataset %d", len(where), ds.Objects())
	}
	for name := range where {
		size, _ := ds.Lookup("r/" + name)
		if sent := s.emu.BytesSentFor(s.bucket, "r/"+name); sent != size && retries == 0 {
			t.Errorf("r/%s: the server sent %d bytes of %d", name, sent, size)
		}
	}
	if r := run(t, nil, append([]string{"shards", "check"}, outs...)...); r.code != 0 || !strings.Contains(r.stdout, "ok: 3 shards") {
		t.Fatalf("shards check of the fleet: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
