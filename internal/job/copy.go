package job

import (
	"cmp"
	"context"
	"errors"

	"github.com/s3pd/s3pd/pkg/sink"
	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// CopySpec is a copy as a command was given it: between two stores of
// the registry (a download from S3 to local files is a Get), or from
// standard input to a store that takes streams.
type CopySpec struct {
	// Src and Dst are locations as written (Dst "" with Benchmark); Src
	// "-" is standard input.
	Src, Dst string
	// Source is Src as its store reads it (an S3 URL whose key's
	// wildcards are already rules; "": Src).
	Source string
	// Benchmark keeps nothing: the bytes are counted and dropped.
	Benchmark bool
	// Stores open Src and Dst: each store's own options (how local files
	// are read and written, the clients that reach S3, what uploaded
	// objects get) were bound as the registry was built. CrossStore says
	// they reach Src on another store than Dst (or with other
	// credentials): the bytes stream through this process.
	Stores     store.Registry
	CrossStore bool
	// Read is how Src is read (verification, stall timeout, retries);
	// its Prefix, Name, first range and fan-out are decided here.
	Read store.Options
	// PartSize and Threshold are the run's part size and multipart
	// threshold. A server-side copy uses CopyThreshold instead of
	// Threshold, and 1 GiB parts unless PartSizeSet.
	PartSize, Threshold, CopyThreshold int64
	PartSizeSet                        bool
	// FanOut is how many sub-prefixes of Src are listed at once.
	FanOut int
	// Delete removes what Dst has and Src does not list, after a run
	// without failures (--delete).
	Delete bool
	Scale  ScaleSpec
	// Stdin is the stream of a Src "-".
	Stdin *StdinSpec
}

// Copy is a resolved copy: what to read, where it goes, and how the
// engine runs it.
type Copy struct {
	Lanes []transfer.Lane
	Sink  transfer.Sink
	// Listed records the listed names for Delete (nil without --delete).
	Listed *Listed
	Scaled Scaled
	// LocalTo says Src is local files: the scheme of Dst's store
	// ("local" for local paths), or "stdin"; "" from a store.
	LocalTo string
	// ServerSide says the bytes move inside the store, not through
	// s3pd.
	ServerSide bool
	// PartSize and Threshold are the engine's for this copy.
	PartSize, Threshold int64
	// MaxRequests, when not 0, caps the requests in flight: a stream
	// between stores that cannot send its checksum as a trailer holds
	// its parts in memory.
	MaxRequests int
	// StartWindow is the requests in flight the engine starts with, as
	// the copy's connections need (0: the engine's default).
	StartWindow int
	// OpaqueETags and Unordered say the source's ETags are not MD5s
	// and that it lists out of key order.
	OpaqueETags, Unordered bool

	stream  *stream
	pruner  store.Pruner
	closers []func()
}

// copyPartSize is the part of a server-side copy when no part size is
// chosen: 1 GiB parts copy S3's largest object (5 TiB) in 5,120 parts.
const copyPartSize = 1 << 30

// streamBuffer bounds the memory of parts held in buffers when a stream
// between stores cannot send its checksum as a trailer (plain HTTP).
const streamBuffer = 1 << 30

// newCopy resolves spec: the source, the sink, and where each object or
// file lands (Land). Close releases what it holds.
func newCopy(ctx context.Context, spec CopySpec) (*Copy, error) {
	c := &Copy{PartSize: spec.PartSize, Threshold: spec.Threshold}
	if spec.Delete {
		c.Listed = NewListed()
	}
	if err := c.open(ctx, spec); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// open routes the copy by what the stores of Src and Dst can do: a
// stream into a store that takes streams, a copy within a store that
// copies within itself, else the bytes through this process into a
// store that takes writes.
func (c *Copy) open(ctx context.Context, spec CopySpec) error {
	if spec.Stores == nil {
		return specErrorf("copy %s to %s: no store to open them with", spec.Src, spec.Dst)
	}
	if spec.Src == "-" {
		return c.fromStdin(ctx, spec)
	}
	from, err := spec.Stores.EntryOf(spec.Src)
	if err != nil {
		return &SpecError{Err: err}
	}
	if spec.Benchmark {
		return c.toNothing(ctx, spec, from)
	}
	to, err := spec.Stores.EntryOf(spec.Dst)
	if err != nil {
		return &SpecError{Err: err}
	}
	if !to.Writes() {
		return specErrorf("copy %s to %s: s3pd does not copy from %s to %s, which takes no writes", spec.Src, spec.Dst, from.NameOf(), to.NameOf())
	}
	return c.between(ctx, spec, from, to)
}

// refuseSingleDelete refuses --delete when Src is one file or object.
func (c *Copy) refuseSingleDelete(spec CopySpec, single bool) error {
	if c.Listed != nil && single {
		return specErrorf("--delete needs a directory or a prefix as SRC; %s is a single file or object", spec.Src)
	}
	return nil
}

// openFrom opens Src with read (which names its objects), refuses what
// a single object cannot be given (--shard, --delete), and decides who
// lists it.
func (c *Copy) openFrom(ctx context.Context, spec CopySpec, from store.Entry, read store.Options) (*store.Opened, error) {
	loc := cmp.Or(spec.Source, spec.Src)
	if spec.Scale.Manifest != "" {
		read.Prefix = true
	}
	read.FirstRange, read.FanOut = c.PartSize, spec.FanOut
	res, err := openSource(ctx, spec.Stores, loc, read, false)
	var se *SpecError
	if err != nil && from.Scheme == "" && !errors.As(err, &se) {
		// A local path that cannot be read is the command's input.
		err = &SpecError{Err: err}
	}
	if err != nil {
		return nil, err
	}
	c.closers = append(c.closers, func() { res.Release() })
	c.OpaqueETags, c.Unordered = res.OpaqueETags, res.Unordered
	if from.Scheme == "" {
		c.LocalTo = "local"
	}
	if res.Single && spec.Scale.Shard != nil {
		return nil, specErrorf("--shard splits a prefix; %s is a single object", spec.Src)
	}
	if err := c.refuseSingleDelete(spec, res.Single); err != nil {
		return nil, err
	}
	c.Lanes = res.Lanes
	c.Scaled = spec.Scale.scale(c.Lanes[0].Source, hostOf(loc), res.Key, res.Source)
	return res, nil
}

// toNothing reads Src and keeps nothing (--benchmark).
func (c *Copy) toNothing(ctx context.Context, spec CopySpec, from store.Entry) error {
	if _, err := c.openFrom(ctx, spec, from, spec.Read); err != nil {
		return err
	}
	c.Sink = sink.Discard{}
	return nil
}

// between copies Src into Dst: within the store when both are in one
// that copies within itself, else through this process.
func (c *Copy) between(ctx context.Context, spec CopySpec, from, to store.Entry) error {
	loc := cmp.Or(spec.Source, spec.Src)
	sameStore := from.Scheme == to.Scheme && !spec.CrossStore
	if sameStore && to.Dest.Overlap != nil {
		switch err := to.Dest.Overlap(loc, spec.Dst); {
		case errors.Is(err, store.ErrSame):
			return specErrorf("source and destination are the same: %s", spec.Src)
		case errors.Is(err, store.ErrInside):
			return specErrorf("destination %s is inside source %s", spec.Dst, spec.Src)
		case err != nil:
			return &SpecError{Err: err}
		}
	}
	place, err := to.Locate(spec.Dst)
	if err != nil {
		return &SpecError{Err: err}
	}
	read := spec.Read
	c.ServerSide = sameStore && to.Dest.CopiesWithin
	if c.ServerSide {
		// A server-side copy moves no byte through s3pd: nothing to verify.
		read.Verify, read.ServerSide = false, true
		c.Threshold = spec.CopyThreshold
		if !spec.PartSizeSet {
			c.PartSize = copyPartSize
		}
	}
	read.Name = func(key string) string {
		_, name := Land(true, key, place.Path, place.Dir)
		return name
	}
	res, err := c.openFrom(ctx, spec, from, read)
	if err != nil {
		return err
	}
	if c.LocalTo != "" {
		c.LocalTo = cmp.Or(to.Scheme, "local")
	}
	root, _ := Land(res.Single, "", place.Path, place.Dir)
	o := store.DestOptions{Root: root, Lock: ShardLockID(spec.Scale.Shard), PartSize: c.PartSize, Threshold: c.Threshold, From: res}
	if c.ServerSide {
		o.Within = loc
	}
	dst, err := to.Dest.Open(ctx, spec.Dst, o)
	if err != nil {
		if to.Scheme == "" {
			return &SpecError{Err: err}
		}
		return err
	}
	c.closers = append(c.closers, func() { dst.Release() })
	c.Sink = dst.Sink
	c.StartWindow = cmp.Or(res.StartWindow, dst.StartWindow)
	if !c.ServerSide && dst.HoldsParts && !res.Rereadable {
		c.MaxRequests = max(1, int(streamBuffer/c.PartSize))
	}
	if p, ok := dst.Sink.(store.Pruner); ok {
		c.pruner = p
	} else if c.Listed != nil {
		return specErrorf("--delete: %s cannot remove what it holds", spec.Dst)
	}
	return nil
}

// Listing is what observes the listing for the copy (nil: nothing).
func (c *Copy) Listing() transfer.ListObserver {
	if c.Listed == nil {
		return nil
	}
	return c.Listed
}

// Delete is --delete's step after a run without failures: it removes
// the files or objects under Dst whose names the listing did not give
// and keep picks (the include/exclude rules), reporting each; with
// dryRun it only reports them. It refuses when the listing did not
// complete.
func (c *Copy) Delete(ctx context.Context, keep func(name string) bool, dryRun bool, report func(name string, size int64)) error {
	if !c.Listed.Complete() {
		return ErrIncompleteListing
	}
	return c.Listed.PruneWith(ctx, c.pruner, keep, dryRun, report)
}

// Close releases the destination's lock and the first range if unused;
// a second Close does nothing.
func (c *Copy) Close() {
	for _, fn := range c.closers {
		fn()
	}
	c.closers = nil
}
