package shard

import (
	"fmt"
	"sort"
)

// Check compares the reports of a fleet's shards and returns what is
// wrong, nothing when together they cover one listing exactly once: every
// shard of 0..N-1 present once, all with the same listing, each starting
// where the one before it ended, and together every object and byte.
func Check(reports []Report) []string {
	if len(reports) == 0 {
		return []string{"no shard summaries"}
	}
	var problems []string
	n := reports[0].Shard.N
	ref := reports[0]
	for _, r := range reports[1:] {
		if r.Shard.N != n {
			problems = append(problems, fmt.Sprintf("shard %s and shard %s split into different counts", ref.Shard, r.Shard))
		}
		if r.ListingHash != ref.ListingHash || r.ListingObjects != ref.ListingObjects || r.ListingBytes != ref.ListingBytes {
			problems = append(problems, fmt.Sprintf("differing listings: shard %s saw %s (%d objects, %d bytes), shard %s saw %s (%d objects, %d bytes)",
				ref.Shard, ref.ListingHash, ref.ListingObjects, ref.ListingBytes, r.Shard, r.ListingHash, r.ListingObjects, r.ListingBytes))
		}
	}
	if len(problems) > 0 {
		return problems
	}
	byK := map[int]Report{}
	for _, r := range reports {
		if _, dup := byK[r.Shard.K]; dup {
			problems = append(problems, fmt.Sprintf("overlap: shard %s reported twice", r.Shard))
		}
		byK[r.Shard.K] = r
	}
	var ks []int
	for k := range byK {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	for k := range n {
		if _, ok := byK[k]; !ok {
			problems = append(problems, fmt.Sprintf("missing shard %d/%d", k, n))
		}
	}
	var next, bytes int64
	for i, k := range ks {
		r := byK[k]
		bytes += r.Bytes
		if i > 0 && ks[i-1] != k-1 {
			next = r.Index // a missing shard is reported above
		}
		switch {
		case r.Index > next:
			problems = append(problems, fmt.Sprintf("gap: objects %d to %d of the listing are in no shard (before shard %s)", next, r.Index-1, r.Shard))
		case r.Index < next:
			problems = append(problems, fmt.Sprintf("overlap: shard %s starts at object %d, before the end of the shard before it (%d)", r.Shard, r.Index, next))
		}
		next = r.Index + r.Objects
	}
	if len(problems) == 0 {
		switch {
		case next != ref.ListingObjects:
			problems = append(problems, fmt.Sprintf("gap: the shards end at object %d of %d", next, ref.ListingObjects))
		case bytes != ref.ListingBytes:
			problems = append(problems, fmt.Sprintf("the shards hold %d bytes, the listing %d", bytes, ref.ListingBytes))
		}
	}
	return problems
}
