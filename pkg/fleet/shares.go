package fleet

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// Shares says which node's share each object of a listing is, under the
// rule of --shard K/N (shard.Split): every node that lists the same
// objects computes the same shares, with no word between them.
type Shares struct {
	n       int
	owner   map[string]int
	backup  map[string]int    // each object's first backup (Backup)
	objects []transfer.Object // in listing order
}

// SplitShares lists l once and splits what it listed into n shares as
// shard.Split does. It holds the listing in memory (a key and an index
// per object).
func SplitShares(ctx context.Context, l transfer.Lister, n int, opts shard.Options) (*Shares, error) {
	if n < 1 {
		return nil, fmt.Errorf("fleet of %d nodes", n)
	}
	s := &Shares{n: n, owner: map[string]int{}, backup: map[string]int{}}
	if err := l.List(ctx, func(o transfer.Object) error {
		s.objects = append(s.objects, o)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list for the fleet's shares: %w", err)
	}
	listed := sliceLister(s.objects)
	for k := range n {
		part, _ := shard.Split(listed, shard.Spec{K: k, N: n}, opts)
		err := part.List(ctx, func(o transfer.Object) error {
			if was, ok := s.owner[o.Key]; ok && was != k {
				return fmt.Errorf("%s is in shares %d and %d", o.Key, was, k)
			}
			s.owner[o.Key] = k
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("split share %d/%d: %w", k, n, err)
		}
	}
	s.splitBackups()
	return s, nil
}

// splitBackups gives each object of a share its first backup: the
// other node that has been given the fewest bytes of that share so far,
// the objects taken largest first (then by key), so that a share whose
// owner is gone is fetched from S3 about evenly by the others, each its
// part, and every node computes the same from the listing alone.
func (s *Shares) splitBackups() {
	if s.n < 2 {
		return
	}
	byShare := make([][]transfer.Object, s.n)
	for _, o := range s.objects {
		if k, ok := s.owner[o.Key]; ok {
			byShare[k] = append(byShare[k], o)
		}
	}
	given := make([]int64, s.n)
	for k, objs := range byShare {
		slices.SortStableFunc(objs, func(a, b transfer.Object) int {
			return cmp.Or(cmp.Compare(b.Size, a.Size), cmp.Compare(a.Key, b.Key))
		})
		clear(given)
		for _, o := range objs {
			best := -1
			for d := 1; d < s.n; d++ {
				if b := (k + d) % s.n; best < 0 || given[b] < given[best] {
					best = b
				}
			}
			given[best] += max(o.Size, 1)
			s.backup[o.Key] = best
		}
	}
}

// Owner returns the node whose share the object named key is, -1 for a
// key not listed.
func (s *Shares) Owner(key string) int {
	if k, ok := s.owner[key]; ok {
		return k
	}
	return -1
}

// Backup returns the i-th node (i >= 1) that stands in for the owner of
// the object named key once the owner and each before are gone: its
// first backup (see splitBackups), then the nodes after that one in
// index order, the owner skipped; -1 past the last, or for a key not
// listed. Every node computes the same order from the listing alone.
func (s *Shares) Backup(key string, i int) int {
	owner, ok := s.owner[key]
	if !ok || i < 1 || i >= s.n {
		return -1
	}
	b := s.backup[key]
	at := i - 1 // where it stands in the nodes from b on
	if at >= (owner-b+s.n)%s.n {
		at++ // the owner is not its own backup
	}
	return (b + at) % s.n
}

// rank is where node self stands in the order of the object named key:
// 0 its owner, i its i-th backup; n for a key not listed.
func (s *Shares) rank(key string, self int) int {
	owner, ok := s.owner[key]
	switch {
	case !ok:
		return s.n
	case owner == self:
		return 0
	}
	b := s.backup[key]
	at := (self - b + s.n) % s.n
	if at > (owner-b+s.n)%s.n {
		return at // the owner, skipped, stands before
	}
	return at + 1
}

// Lister lists every object for node self: its own share first (it
// serves those to the others), then the objects it is the first backup
// of, then the second, and so on, so that a node fetches from S3 what
// it inherits of a node that is gone before the others ask it for
// that; within each, the next node's share first, so that nodes ask
// different peers at once. Objects filtered out of the split come last.
// The rank is the node's position in the object's relay tree (FanOut),
// where the nodes with children are those of the lowest positions, so
// the objects a node relays to others come before those it only takes,
// and it is usually fetching one by the time its children ask.
func (s *Shares) Lister(self int) transfer.Lister {
	type entry struct {
		o           transfer.Object
		rank, after int
	}
	order := make([]entry, 0, len(s.objects))
	for _, o := range s.objects {
		e := entry{o: o, rank: s.rank(o.Key, self)}
		if k := s.Owner(o.Key); k >= 0 {
			e.after = (k - self + s.n) % s.n
		}
		order = append(order, e)
	}
	slices.SortStableFunc(order, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.after, b.after))
	})
	out := make(sliceLister, len(order))
	for i, e := range order {
		out[i] = e.o
	}
	return out
}

// sliceLister lists objects held in memory.
type sliceLister []transfer.Object

func (l sliceLister) List(ctx context.Context, emit func(transfer.Object) error) error {
	for _, o := range l {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(o); err != nil {
			return err
		}
	}
	return nil
}
