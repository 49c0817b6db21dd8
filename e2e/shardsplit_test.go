package e2e

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// dryShards runs every shard of n of args (a get with the shard flag
// last) as a dry run with --json, 16 at a time, and returns each one's
// summary and the keys it would transfer.
func dryShards(t *testing.T, n int, args func(k int) []string) ([]shardLine, []map[string]string) {
	t.Helper()
	lines := make([]shardLine, n)
	keys := make([]map[string]string, n)
	for from := 0; from < n; from += 16 {
		var batch [][]string
		for k := from; k < min(n, from+16); k++ {
			batch = append(batch, args(k))
		}
		for i, r := range runAll(t, nil, batch) {
			k := from + i
			if r.code != 0 {
				t.Fatalf("shard %d/%d: exit %d\n%s", k, n, r.code, r.stderr)
			}
			lines[k], keys[k] = lastShardLine(t, r.stdout), objectStatus(t, r.stdout)
		}
	}
	return lines, keys
}

// TestShardsBalanceTheMixByBytes: 100 x 1 MiB, 40 x 4, 10 x 16 and
// 4 x 64 MiB over four shards, as a dry run: each within 2% of a
// quarter, together every object once; shards check refuses dry runs.
func TestShardsBalanceTheMixByBytes(t *testing.T) {
	const dataset = "mix/a:100:1MiB,mix/b:40:4MiB,mix/c:10:16MiB,mix/d:4:64MiB"
	s := emuStore(t, s3emu.Options{Dataset: dataset})
	ds, _ := s3emu.ParseDataset(dataset)
	var res []result
	var args [][]string
	for k := range 4 {
		args = append(args, s.cmd("get", "--json", "--dry-run", "--shard", fmt.Sprintf("%d/4", k), s.url("mix/"), t.TempDir()))
	}
	res = runAll(t, nil, args)
	seen := map[string]int{}
	for k, r := range res {
		if r.code != 0 {
			t.Fatalf("shard %d/4: exit %d\n%s", k, r.code, r.stderr)
		}
		l := lastShardLine(t, r.stdout)
		if l.Shard.ListingBytes != ds.Bytes() || l.WouldTransferBytes != l.Shard.Bytes || l.WouldTransfer != l.Shard.Objects {
			t.Fatalf("shard %d/4: %+v, would transfer %d objects (%d bytes); want a share of %d bytes", k, *l.Shard, l.WouldTransfer, l.WouldTransferBytes, ds.Bytes())
		}
		if dev := offEven(l, 4); dev > 0.02 || dev < -0.02 {
			t.Errorf("shard %d/4: %d MiB, %.2f%% off a quarter (%d MiB), want within 2%%", k, l.Shard.Bytes>>20, dev*100, ds.Bytes()/4>>20)
		}
		for key := range objectStatus(t, r.stdout) {
			seen[key]++
		}
	}
	if int64(len(seen)) != ds.Objects() {
		t.Fatalf("the shards would fetch %d objects, the listing has %d", len(seen), ds.Objects())
	}
	for key, n := range seen {
		if n != 1 {
			t.Errorf("%s is in %d shards", key, n)
		}
	}
	r := run(t, nil, append([]string{"shards", "check"}, saveOutputs(t, res)...)...)
	if r.code != 1 || strings.Count(r.stdout, ": a dry run") != 4 {
		t.Fatalf("shards check of four dry runs: exit %d, want 1 naming each\n%s", r.code, r.stdout)
	}
}

// TestShardsSplitTheSameFromAnyOrder: the same objects listed (by one
// stream or by a fan-out over sub-prefixes) or named by a manifest with
// sizes, in key order, shuffled or reversed, give every shard the same
// objects and the same report.
func TestShardsSplitTheSameFromAnyOrder(t *testing.T) {
	const dataset = "s/a:200:64KiB,s/b:100:1MiB,s/c:30:3MiB,s/d:6:40MiB,s/e:20:0"
	s := emuStore(t, s3emu.Options{Dataset: dataset})
	ds, _ := s3emu.ParseDataset(dataset)
	var lines []string
	for _, g := range ds.Groups {
		for i := range g.Count {
			lines = append(lines, fmt.Sprintf("%s\t%d", g.Key(i), g.Size))
		}
	}
	slices.Sort(lines)
	shuffled := slices.Clone(lines)
	rand.New(rand.NewPCG(31, 1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	reversed := slices.Clone(lines)
	slices.Reverse(reversed)
	const n = 5
	var first []shardLine
	var firstKeys []map[string]string
	for _, src := range []struct {
		name  string
		flags []string
	}{
		{"listed by a fan-out", nil},
		{"listed by one stream", []string{"--list-concurrency", "1"}},
		{"a manifest in key order", []string{"--manifest", writeFile(t, strings.Join(lines, "\n")+"\n")}},
		{"a manifest shuffled", []string{"--manifest", writeFile(t, strings.Join(shuffled, "\n")+"\n")}},
		{"a manifest reversed", []string{"--manifest", writeFile(t, strings.Join(reversed, "\n")+"\n")}},
	} {
		got, keys := dryShards(t, n, func(k int) []string {
			args := append([]string{"--json", "--dry-run", "--shard", fmt.Sprintf("%d/%d", k, n)}, src.flags...)
			return append(s.cmd("get", args...), s.url("s/"), t.TempDir())
		})
		if first == nil {
			first, firstKeys = got, keys
			continue
		}
		for k := range n {
			if *got[k].Shard != *first[k].Shard || !maps.Equal(keys[k], firstKeys[k]) {
				t.Errorf("shard %d/%d of %s: %+v (%d keys), %s: %+v (%d keys)", k, n, src.name, *got[k].Shard, len(keys[k]), "listed by a fan-out", *first[k].Shard, len(firstKeys[k]))
			}
		}
	}
}

// TestShardsOfAModelManifest: 163 files drawn like a model's (three
// small, 160 of 4.0 to 4.6 GB) through a manifest with sizes, as dry
// runs: over 8 and 16 shards each within 5% of even; over 64 (2.5 files
// a shard, where no split of whole files is within 5%) each holds 2 or
// 3 of the large files and no two differ by more than the largest.
func TestShardsOfAModelManifest(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: "d:1:1"})
	r := rand.New(rand.NewPCG(163, 1))
	var man strings.Builder
	fmt.Fprintf(&man, "model/config.json\t1024\nmodel/tokenizer.json\t7340032\nmodel/model.safetensors.index.json\t122880\n")
	var total, largest int64 = 1024 + 7340032 + 122880, 0
	for i := range 160 {
		size := 4_000_000_000 + r.Int64N(600_000_000)
		fmt.Fprintf(&man, "model/model-%05d-of-00160.safetensors\t%d\n", i+1, size)
		total += size
		largest = max(largest, size)
	}
	path := writeFile(t, man.String())
	for _, n := range []int{8, 16, 64} {
		t.Run(fmt.Sprintf("over %d", n), func(t *testing.T) {
			lines, keys := dryShards(t, n, func(k int) []string {
				return append(s.cmd("get", "--json", "--dry-run", "--manifest", path, "--shard", fmt.Sprintf("%d/%d", k, n)), s.url("model/"), t.TempDir())
			})
			var sum, lo, hi int64 = 0, total, 0
			for k, l := range lines {
				sum += l.Shard.Bytes
				lo, hi = min(lo, l.Shard.Bytes), max(hi, l.Shard.Bytes)
				dev := offEven(l, n)
				if n < 64 && (dev > 0.05 || dev < -0.05) {
					t.Errorf("shard %d/%d: %d bytes, %.2f%% off even, want within 5%%", k, n, l.Shard.Bytes, dev*100)
				}
				var files int
				for key := range keys[k] {
					if strings.HasSuffix(key, ".safetensors") {
						files++
					}
				}
				if n == 64 && (files < 2 || files > 3) {
					t.Errorf("shard %d/64 holds %d of the 160 large files, want 2 or 3", k, files)
				}
			}
			if sum != total {
				t.Fatalf("the shards hold %d bytes, the manifest %d", sum, total)
			}
			if hi-lo > largest {
				t.Errorf("shards of %d to %d bytes differ by more than the largest file (%d)", lo, hi, largest)
			}
			t.Logf("over %d shards: %.2f%% to %+.2f%% of even", n, (float64(lo)*float64(n)/float64(total)-1)*100, (float64(hi)*float64(n)/float64(total)-1)*100)
		})
	}
}
