package shard

import "fmt"

// Check compares the reports of a fleet's shards and returns what is
// wrong, nothing when together they hold one listing exactly once: all
// of this Version, every shard of 0..N-1 present once, all of the same
// listing, their objects, bytes and set hashes adding up to the
// listing's. The hashes prove it by set membership, whatever the order
// of the listing and however the split placed the objects: an object in
// two shards or in none changes the sum.
func Check(reports []Report) []string {
	if len(reports) == 0 {
		return []string{"no shard summaries"}
	}
	var problems []string
	for _, r := range reports {
		switch {
		case r.Version == 0:
			problems = append(problems, fmt.Sprintf("shard %s: from an s3pd older than version %d of the split: run every shard with this s3pd", r.Shard, Version))
		case r.Version != Version:
			problems = append(problems, fmt.Sprintf("shard %s: split by version %d of the split, want %d: run every shard with this s3pd", r.Shard, r.Version, Version))
		}
	}
	if len(problems) > 0 {
		return problems
	}
	ref := reports[0]
	n := ref.Shard.N
	for _, r := range reports[1:] {
		if r.Shard.N != n {
			problems = append(problems, fmt.Sprintf("shard %s and shard %s split into different counts", ref.Shard, r.Shard))
		}
		if r.ListingHash != ref.ListingHash || r.ListingObjects != ref.ListingObjects || r.ListingBytes != ref.ListingBytes || r.ListingUnsized != ref.ListingUnsized {
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
	for k := range n {
		if _, ok := byK[k]; !ok {
			problems = append(problems, fmt.Sprintf("missing shard %d/%d", k, n))
		}
	}
	if len(problems) > 0 {
		return problems
	}
	var sum Report
	for _, r := range byK {
		sum.Objects += r.Objects
		sum.Bytes += r.Bytes
		sum.Unsized += r.Unsized
		sum.Hash = sum.Hash.Plus(r.Hash)
	}
	if sum.Objects != ref.ListingObjects || sum.Bytes != ref.ListingBytes || sum.Unsized != ref.ListingUnsized {
		problems = append(problems, fmt.Sprintf("the shards hold %d objects (%d bytes, %d without a size), the listing %d (%d bytes, %d without a size)",
			sum.Objects, sum.Bytes, sum.Unsized, ref.ListingObjects, ref.ListingBytes, ref.ListingUnsized))
	}
	if sum.Hash != ref.ListingHash {
		problems = append(problems, fmt.Sprintf("the shards' objects are not the listing's: their hashes add up to %s, the listing's is %s (an object in two shards, or in none)", sum.Hash, ref.ListingHash))
	}
	return problems
}
