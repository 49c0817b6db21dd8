package fleet

import (
	"context"
	"fmt"

	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// Shares says which node's share each object of a listing is, under the
// rule of --shard K/N (shard.Split): every node that lists the same
// objects computes the same shares, with no word between them.
type Shares struct {
	n       int
	owner   map[string]int
	objects []transfer.Object // in listing order
}

// SplitShares lists l once and splits what it listed into n shares as
// shard.Split does. It holds the listing in memory (a key and an index
// per object).
func SplitShares(ctx context.Context, l transfer.Lister, n int, opts shard.Options) (*Shares, error) {
	if n < 1 {
		return nil, fmt.Errorf("fleet of %d nodes", n)
	}
	s := &Shares{n: n, owner: map[string]int{}}
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
	return s, nil
}

// Owner returns the node whose share the object named key is, -1 for a
// key not listed.
func (s *Shares) Owner(key string) int {
	if k, ok := s.owner[key]; ok {
		return k
	}
	return -1
}

// Lister lists every object for node self: its own share first (it
// serves those to the others), then the other shares, the next node's
// first, so that nodes ask different peers at once.
func (s *Shares) Lister(self int) transfer.Lister {
	var order []transfer.Object
	for d := range s.n {
		k := (self + d) % s.n
		for _, o := range s.objects {
			if s.Owner(o.Key) == k {
				order = append(order, o)
			}
		}
	}
	for _, o := range s.objects {
		if s.Owner(o.Key) < 0 { // filtered out of the split: listed last
			order = append(order, o)
		}
	}
	return sliceLister(order)
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
