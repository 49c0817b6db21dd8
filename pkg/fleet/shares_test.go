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
