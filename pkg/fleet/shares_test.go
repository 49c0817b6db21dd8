package fleet_test

import (
	"context"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestSharesAreTheShardSplit: each object's owner is the shard that
// shard.Split puts it in, and a node's Lister lists every object once,
// its own share first.
func TestSharesAreTheShardSplit(t *testing.T) {
	const n = 3
	w := newWorld(t, n, s3emu.Options{})
	for k := range n {
		part, _ := shard.Split(w.source(), shard.Spec{K: k, N: n}, shard.Options{TempDir: t.TempDir()})
		part.List(context.Background(), func(o transfer.Object) error {
			if got := w.shares.Owner(o.Key); got != k {
				t.Errorf("%s: owner %d, want shard %d", o.Key, got, k)
			}
			return nil
		})
	}
	if got := w.shares.Owner("not/listed"); got != -1 {
		t.Errorf("owner of a key not listed: %d, want -1", got)
	}
	for self := range n {
		seen := map[string]bool{}
		own := true // still in the node's own share
		w.shares.Lister(self).List(context.Background(), func(o transfer.Object) error {
			if seen[o.Key] {
				t.Errorf("node %d: %s listed twice", self, o.Key)
			}
			seen[o.Key] = true
			mine := w.shares.Owner(o.Key) == self
			if mine && !own {
				t.Errorf("node %d: %s of its own share listed after another share's", self, o.Key)
			}
			own = own && mine
			return nil
		})
		if len(seen) != len(w.objs) {
			t.Errorf("node %d: listed %d objects, want %d", self, len(seen), len(w.objs))
		}
	}
}

// TestBackupsSplitEachShare: each object's order (its owner, then its
// backups) names every node once; the first backups split each share
// about evenly by bytes; and a node lists its own share first, then the
// objects it is the first backup of, then the second, and so on.
func TestBackupsSplitEachShare(t *testing.T) {
	const n = 4
	w := newWorld(t, n, s3emu.Options{Dataset: "ds/f:48:64KiB,ds/big:4:512KiB"})
	rank := func(key string, self int) int {
		for i := range n {
			if k := w.shares.Owner(key); i == 0 && k == self || i > 0 && w.shares.Backup(key, i) == self {
				return i
			}
		}
		return n
	}
	first := make([][n]int64, n) // bytes of each share by its objects' first backup
	for _, o := range w.objs {
		seen := map[int]bool{w.shares.Owner(o.Key): true}
		for i := 1; i < n; i++ {
			seen[w.shares.Backup(o.Key, i)] = true
		}
		if len(seen) != n || seen[-1] || w.shares.Backup(o.Key, n) != -1 || w.shares.Backup(o.Key, 0) != -1 {
			t.Errorf("%s: owner %d and backups %v, want every node of %d once", o.Key, w.shares.Owner(o.Key), seen, n)
		}
		first[w.shares.Owner(o.Key)][w.shares.Backup(o.Key, 1)] += o.Size
	}
	if got := w.shares.Backup("not/listed", 1); got != -1 {
		t.Errorf("backup of a key not listed: %d, want -1", got)
	}
	for k := range n {
		for b := range n {
			if b != k && (first[k][b] < w.shareBytes(k)*15/100 || first[k][b] > w.shareBytes(k)*55/100) {
				t.Errorf("share %d: node %d is the first backup of %d of its %d bytes, want 15%% to 55%%", k, b, first[k][b], w.shareBytes(k))
			}
		}
	}
	for self := range n {
		last := 0
		w.shares.Lister(self).List(context.Background(), func(o transfer.Object) error {
			r := rank(o.Key, self)
			if r < last {
				t.Errorf("node %d: %s (its rank %d in the object's order) listed after one of rank %d", self, o.Key, r, last)
			}
			last = r
			return nil
		})
	}
}
