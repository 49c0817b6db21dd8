package shard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"math/bits"
	"strconv"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Options configure a split.
type Options struct {
	// Filter, when set, decides which listed objects count (the
	// include/exclude rules): the split is of what passes it.
	Filter func(transfer.Object) bool
	// TempDir holds the spooled listing ("": the system's).
	TempDir string
}

// Report is what a shard saw: the whole listing (its length, bytes and
// hash, the same in every shard of an unchanged listing) and its share.
type Report struct {
	Shard Spec `json:"id"`
	// ListingObjects and ListingBytes are the whole listing's (after the
	// include/exclude rules); ListingHash identifies it: SHA-256 over
	// each object's key, size and ETag in order, 32 hex digits.
	// ListingUnsized counts the objects the listing gives no size for (a
	// manifest's entries without one): ListingBytes counts only the
	// sizes given.
	ListingObjects int64  `json:"listing_objects"`
	ListingBytes   int64  `json:"listing_bytes"`
	ListingUnsized int64  `json:"listing_unsized,omitempty"`
	ListingHash    string `json:"listing_hash"`
	// Objects and Bytes are this shard's share (Unsized of its objects
	// have no size in the listing); Index is the position in the listing
	// of its first object (where it would be when empty).
	Objects  int64   `json:"objects"`
	Bytes    int64   `json:"bytes"`
	Unsized  int64   `json:"unsized,omitempty"`
	Share    float64 `json:"share"` // of the split's weight: Bytes / ListingBytes when every size is given
	Index    int64   `json:"first_index"`
	FirstKey string  `json:"first_key,omitempty"`
	LastKey  string  `json:"last_key,omitempty"`
}

// Split returns a lister of shard spec of what inner lists, and the
// report it fills before it emits the first object. The lister reads
// inner's whole listing once (spooled to disk) before emitting anything:
// the split needs the total. It is a transfer.Refresher when inner is.
//
// The split depends on nothing but the listing, so every node that sees
// the same listing computes the same split: an object whose size the
// listing does not give (Size < 0, a manifest entry without one) weighs
// the mean size of the objects that have one (1 byte when none has),
// never a size learnt from a request, which could differ from node to
// node or fail on one of them. It is emitted with its size unknown.
func Split(inner transfer.Lister, spec Spec, opts Options) (transfer.Lister, *Report) {
	l := &lister{inner: inner, spec: spec, opts: opts, report: &Report{Shard: spec}}
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

// List implements transfer.Lister.
func (l *lister) List(ctx context.Context, emit func(transfer.Object) error) error {
	sp, err := newSpool(l.opts.TempDir)
	if err != nil {
		return err
	}
	defer sp.Close()
	sum := newListingHash()
	var count, known, unsized int64
	err = l.inner.List(ctx, func(o transfer.Object) error {
		if l.opts.Filter != nil && !l.opts.Filter(o) {
			return nil
		}
		if o.Size < 0 {
			o.Size = -1
			unsized++
		} else {
			known += o.Size
		}
		sum.add(o)
		count++
		return sp.put(o)
	})
	if err != nil {
		return err
	}
	if err := sp.rewind(); err != nil {
		return err
	}
	r := l.report
	r.ListingObjects, r.ListingBytes, r.ListingUnsized, r.ListingHash = count, known, unsized, sum.hex()
	w := unsizedWeight(count-unsized, known)
	total := known + unsized*w
	var cum, mine, i int64
	r.Index = count
	for ; i < count; i++ {
		o, err := sp.get()
		if err != nil {
			return err
		}
		size := o.Size
		if size < 0 {
			size = w
		}
		k := Of(cum, size, i, total, count, l.spec.N)
		cum += size
		if k < l.spec.K {
			continue
		}
		if k > l.spec.K {
			break // shards are contiguous: the rest belong to later ones
		}
		if r.Objects == 0 {
			r.Index, r.FirstKey = i, o.Key
		}
		r.Objects++
		mine += size
		if o.Size < 0 {
			r.Unsized++
		} else {
			r.Bytes += o.Size
		}
		r.LastKey = o.Key
		if err := emit(o); err != nil {
			return err
		}
	}
	if r.Objects == 0 {
		r.Index = i
	}
	if total > 0 {
		r.Share = float64(mine) / float64(total)
	}
	if i == count {
		if _, err := sp.get(); !errors.Is(err, io.EOF) {
			return errors.New("shard: the spooled listing is longer than the listing")
		}
	}
	return nil
}

// unsizedWeight is what an object of unknown size weighs in the split:
// the mean of the sizes the listing gives (sized objects of known
// bytes), 1 when it gives none.
func unsizedWeight(sized, known int64) int64 {
	if sized == 0 {
		return 1
	}
	return known / sized
}

// Of is the shard, of n, of an object of size bytes that starts cum
// bytes into a listing of total bytes: the one whose range [K*total/n,
// (K+1)*total/n) holds the object's midpoint cum+size/2. A listing of
// empty objects only (total 0) is split by count: object i of count
// takes the midpoint i+1/2.
func Of(cum, size, i, total, count int64, n int) int {
	num, den := uint64(2*cum+size), uint64(2*total)
	if total == 0 {
		num, den = uint64(2*i+1), uint64(2*count)
	}
	if den == 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(n), num)
	if hi >= den {
		return n - 1 // cum+size > total: not a listing this split made
	}
	q, _ := bits.Div64(hi, lo, den)
	return min(int(q), n-1)
}

// listingHash identifies a listing by its keys, sizes and ETags in order.
type listingHash struct {
	h   hash.Hash
	buf []byte
}

func newListingHash() *listingHash { return &listingHash{h: sha256.New()} }

func (l *listingHash) add(o transfer.Object) {
	b := append(l.buf[:0], o.Key...)
	b = append(b, 0)
	b = strconv.AppendInt(b, o.Size, 10)
	b = append(b, 0)
	b = append(b, o.ETag...)
	b = append(b, '\n')
	l.buf = b
	l.h.Write(b)
}

func (l *listingHash) hex() string { return hex.EncodeToString(l.h.Sum(nil)[:16]) }
