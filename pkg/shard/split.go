package shard

import (
	"cmp"
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Version numbers the split and the Report: a fleet of one version
// agrees on every split. Version 2 places large objects whole and lays
// the rest out by entry hash, whatever the listing's order; its Report
// carries set hashes where version 1 carried positions and keys.
const Version = 2

// Options configure a split.
type Options struct {
	// Filter, when set, decides which listed objects count (the
	// include/exclude rules): the split is of what passes it.
	Filter func(transfer.Object) bool
	// TempDir holds the spooled listing ("": the system's).
	TempDir string
}

// Report is what a shard saw: the whole listing (its length, bytes and
// set hash, the same in every shard of one listing whatever order it
// arrived in) and its own share.
type Report struct {
	Version int  `json:"version"`
	Shard   Spec `json:"id"`
	// ListingObjects and ListingBytes are the whole listing's (after the
	// include/exclude rules); ListingHash is its set Hash. ListingUnsized
	// counts the objects the listing gives no size for (a manifest's
	// entries without one): ListingBytes counts only the sizes given.
	ListingObjects int64 `json:"listing_objects"`
	ListingBytes   int64 `json:"listing_bytes"`
	ListingUnsized int64 `json:"listing_unsized,omitempty"`
	ListingHash    Hash  `json:"listing_hash"`
	// Objects and Bytes are this shard's share (Unsized of its objects
	// have no size in the listing), Hash their set Hash: the shards'
	// hashes add up to the listing's.
	Objects int64   `json:"objects"`
	Bytes   int64   `json:"bytes"`
	Unsized int64   `json:"unsized,omitempty"`
	Hash    Hash    `json:"hash"`
	Share   float64 `json:"share"` // of the split's weight: Bytes / ListingBytes when every size is given
	// Whole counts this shard's objects placed whole, largest first
	// (docs/SCALE-OUT.md).
	Whole int64 `json:"whole,omitempty"`
	// done: the listing was read to its end and every object of the
	// shard emitted.
	done bool
}

// Done says whether the report is complete: the whole listing was read
// and every object of the shard emitted.
func (r *Report) Done() bool { return r.done }

// Split returns a lister of shard spec of what inner lists, and the
// report it fills before it emits the first object. The lister reads
// inner's whole listing once (spooled to disk) before emitting anything:
// the split needs the total. It is a transfer.Refresher when inner is.
//
// The split depends on nothing but the set of objects listed (keys and
// sizes), never on their order nor on a request, so every node
// that lists the same objects computes the same split, whether from a
// listing, a fan-out of listings, an unordered listing or a manifest in
// any order: an object whose size the listing does not give (Size < 0,
// a manifest entry without one) weighs the mean size of the objects that
// have one (1 byte when none has), never a size learnt from a request,
// which could differ from node to node or fail on one of them. It is
// emitted with its size unknown. The objects are emitted in listing
// order, except those near the shard's cuts, emitted last.
func Split(inner transfer.Lister, spec Spec, opts Options) (transfer.Lister, *Report) {
	l := &lister{inner: inner, spec: spec, opts: opts, report: &Report{Version: Version, Shard: spec}}
	if r, ok := inner.(transfer.Refresher); ok {
		return refreshing{l, r}, l.report
	}
	return l, l.report
}

type lister struct {
	inner  transfer.Lister
	spec   Spec
	opts   Options
	report *Report
}

type refreshing struct {
	*lister
	transfer.Refresher
}

// held is a small object in a bucket that a cut falls in.
type held struct {
	o transfer.Object
	h Hash
}

// List implements transfer.Lister.
func (l *lister) List(ctx context.Context, emit func(transfer.Object) error) error {
	sp, err := newSpool(l.opts.TempDir)
	if err != nil {
		return err
	}
	defer sp.Close()
	t := newTally(l.spec.N)
	rp := newRepeats()
	var buf []byte
	var entries int64
	err = l.inner.List(ctx, func(o transfer.Object) error {
		if l.opts.Filter != nil && !l.opts.Filter(o) {
			return nil
		}
		o.Size = max(o.Size, -1)
		var h Hash
		h, buf = entryHash(o, buf)
		fp := rp.fingerprint(o.Key)
		if rp.first(entries, fp) {
			t.add(o.Size, h)
		}
		entries++
		return sp.put(o, h, fp)
	})
	if err != nil {
		return err
	}
	dropped, err := rp.second(sp, entries, t)
	if err != nil {
		return err
	}
	rp = nil // the filter's memory is free for the emitting pass
	if err := sp.rewind(); err != nil {
		return err
	}
	p := newPlan(t, l.spec.K)
	r := l.report
	r.ListingObjects, r.ListingBytes, r.ListingUnsized, r.ListingHash = t.count, t.known, t.unsized, t.listing
	e := &emitter{p: p, r: r, emit: emit}
	class := p.classify()
	var split []held
	for i := range entries {
		hd, err := sp.head()
		if err != nil {
			return err
		}
		if len(dropped) > 0 && dropped[0] == i {
			dropped = dropped[1:] // a repeat: its key's first entry stands for it
			continue
		}
		h, size := hd.h, hd.size
		c := class[bucketOf(h)]
		if p.whole(size) {
			if !p.mineWhole(h) {
				continue
			}
			e.r.Whole++
		} else if c == bucketOthers {
			continue // read no further
		}
		o, err := sp.object(size)
		switch {
		case err != nil:
		case p.whole(size) || c == bucketMine:
			err = e.small(o, h)
		default:
			split = append(split, held{o, h})
		}
		if err != nil {
			return err
		}
	}
	if _, err := sp.head(); !errors.Is(err, io.EOF) {
		return errors.New("shard: the spooled listing is longer than the listing")
	}
	if err := e.split(split); err != nil {
		return err
	}
	if p.total > 0 {
		r.Share = float64(e.weight) / float64(p.total)
	} else if t.count > 0 {
		r.Share = float64(r.Objects) / float64(t.count)
	}
	r.done = true
	return nil
}

// emitter hands on the plan's shard's objects and counts them in its
// report.
type emitter struct {
	p      *plan
	r      *Report
	emit   func(transfer.Object) error
	weight int64
}

// small emits o, the shard's.
func (e *emitter) small(o transfer.Object, h Hash) error {
	r := e.r
	r.Objects++
	r.Hash = r.Hash.Plus(h)
	if o.Size < 0 {
		r.Unsized++
	} else {
		r.Bytes += o.Size
	}
	e.weight += e.p.bytesWeight(o)
	return e.emit(o)
}

// split places the small objects of the buckets that a cut falls in one
// by one, in the order of their entry hash (then key, ETag and size, so
// that the order is total), and emits the shard's.
func (e *emitter) split(objs []held) error {
	slices.SortFunc(objs, func(a, b held) int {
		switch {
		case a.h.less(b.h):
			return -1
		case b.h.less(a.h):
			return 1
		}
		return cmp.Or(strings.Compare(a.o.Key, b.o.Key), strings.Compare(a.o.ETag, b.o.ETag), cmp.Compare(a.o.Size, b.o.Size))
	})
	p := e.p
	for i := 0; i < len(objs); {
		b := bucketOf(objs[i].h)
		at := p.starts[b]
		for ; i < len(objs) && bucketOf(objs[i].h) == b; i++ {
			w := p.weight(objs[i].o)
			if p.in(p.midpoint(at, w)) {
				if err := e.small(objs[i].o, objs[i].h); err != nil {
					return err
				}
			}
			at += 2 * uint64(w)
		}
		if at != p.starts[b+1] {
			return errors.New("shard: the spooled listing differs from the listing")
		}
	}
	return nil
}
