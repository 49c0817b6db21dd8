package job

import (
	"cmp"
	"context"
	"errors"
	"io"
	"path"
	"strings"

	"github.com/s3pd/s3pd/pkg/sink"
	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// GetSpec is a download as a command was given it: a location, read
// through the store its scheme names, into local files (written by the
// registry's store of local paths, as it was built), onto stdout or
// into nothing.
type GetSpec struct {
	// Source is the location to read (an s3:// URL whose key's
	// wildcards are already rules), opened through Stores; URL is the
	// source as written, for messages.
	Source string
	Stores store.Registry
	URL    string
	// Read is how Source is read (version, verification, first range,
	// fan-out); its Prefix and Name are decided here.
	Read store.Options
	// Dest is a local path; "-" is stdout, in order; "" keeps nothing
	// (a benchmark: the bytes are counted and dropped).
	Dest string
	// Stdout and OrderWindow serve Dest "-": the bytes a part may run
	// ahead of the stream.
	Stdout      io.Writer
	OrderWindow int
	// Delete removes local files whose keys the listing no longer has,
	// after a run without failures (--delete).
	Delete bool
	// Scale is who lists (--manifest, whose URL names a prefix) and
	// the share this process takes (--shard, which needs a prefix).
	Scale ScaleSpec
	// Fleet, when set, makes this download a node of a fleet that
	// fetches the prefix from S3 about once in all (--fleet).
	Fleet *FleetSpec
}

// Get is a resolved download: what to read, and where it goes.
type Get struct {
	Source *store.Opened
	Sink   transfer.Sink
	// Listed records the listed names for Delete (nil without --delete).
	Listed *Listed
	// MustExist, when set, is the object a run must find: an URL that
	// named neither an object nor anything under it is one failed
	// object, with the error Missing, not an empty success.
	MustExist *transfer.Object
	Missing   error
	// missingAt is where MustExist would have landed, as a single object
	missingAt string
	Scaled    Scaled
	// dest is the local destination (nil: stdout or nothing).
	dest *store.Sink
}

// newGet resolves spec: a single object or a prefix, the sink, and where
// each object lands. Close releases what it holds.
func newGet(ctx context.Context, spec GetSpec) (*Get, error) {
	dest := spec.Dest
	// Nothing (a benchmark) and stdout are a directory: an object lands
	// at its base name, unused.
	place := store.Place{Path: dest, Dir: true}
	var to *store.Entry
	if dest != "" && dest != "-" {
		// get writes local files: this DEST is a local path, whatever
		// it looks like.
		e, ok := spec.Stores.Entry("")
		if !ok || !e.Writes() {
			return nil, specErrorf("%s: no store writes local files", dest)
		}
		p, err := e.Locate(dest)
		if err != nil {
			return nil, &SpecError{Err: err}
		}
		place, to = p, &e
	}
	o := spec.Read
	if spec.Scale.Manifest != "" {
		o.Prefix = true
	}
	o.Name = func(key string) string {
		_, name := Land(true, key, place.Path, place.Dir)
		return name
	}
	src, err := openSource(ctx, spec.Stores, spec.Source, o, true)
	if err != nil {
		return nil, err
	}
	g := &Get{Source: src}
	ok := false
	defer func() {
		if !ok {
			g.Close()
		}
	}()
	root, name := dest, ""
	if src.Single || src.Guessed {
		root, name = Land(true, strings.TrimSuffix(src.Key, "/"), place.Path, place.Dir)
	}
	single := src.Single
	switch {
	case single && spec.Scale.Shard != nil:
		return nil, specErrorf("--shard splits a prefix; %s is a single object", spec.URL)
	case single && spec.Fleet != nil:
		return nil, specErrorf("--fleet shares a prefix among nodes; %s is a single object", spec.URL)
	case !single && dest == "-":
		found, err := listsAny(ctx, src.Source)
		switch {
		case err != nil:
			return nil, err
		case found || !src.Guessed:
			return nil, specErrorf("%s is a prefix, and standard output (cat, or DEST -) takes a single object: s3pd ls lists what it holds, s3pd get SRC DIR fetches it", spec.URL)
		}
		// Nothing there: the run fails its one object as "no such key"
		// (MustExist), as into a file.
		g.missingAt = dest
	case !single:
		g.missingAt = path.Join(root, name)
		root = dest
	}
	if err := g.openSink(ctx, spec, to, root, name); err != nil {
		return nil, err
	}
	if spec.Delete && !single {
		g.Listed = NewListed()
	}
	if src.Guessed {
		g.MustExist, g.Missing = missing(spec.URL, src.Key, name)
	}
	g.Scaled = spec.Scale.scale(src.Source, hostOf(spec.Source), src.Key, src.Source)
	ok = true
	return g, nil
}

// listsAny reports whether src lists at least one object, asking for
// no more than its first page.
func listsAny(ctx context.Context, src transfer.Source) (bool, error) {
	errFound := errors.New("found")
	err := src.List(ctx, func(transfer.Object) error { return errFound })
	if errors.Is(err, errFound) {
		return true, nil
	}
	return false, err
}

// missing is the object a URL that named no object must find under
// prefix, the key it named plus "/", and the error of finding nothing.
func missing(url, prefix, name string) (*transfer.Object, error) {
	key := strings.TrimSuffix(prefix, "/")
	return &transfer.Object{Key: key, Name: name, Size: -1}, &NotFoundError{URL: url, Key: key, Prefix: prefix}
}

// openSink opens where the download's objects go: nothing (a
// benchmark), stdout in order, or local files under root through to (a
// single object at name).
func (g *Get) openSink(ctx context.Context, spec GetSpec, to *store.Entry, root, name string) error {
	switch {
	case spec.Dest == "":
		g.Sink = sink.Discard{}
		return nil
	case spec.Dest == "-":
		g.Sink = sink.NewOrdered(spec.Stdout, spec.OrderWindow)
		return nil
	}
	o := store.DestOptions{Root: root, Lock: ShardLockID(spec.Scale.Shard), From: g.Source}
	if g.Source.Single {
		o.Name, o.Lock = name, ""
	}
	dst, err := to.Dest.Open(ctx, spec.Dest, o)
	if err != nil {
		return &SpecError{Err: err}
	}
	g.dest, g.Sink = dst, dst.Sink
	return nil
}

// Listing is what observes the listing for the job (nil: nothing).
func (g *Get) Listing() transfer.ListObserver {
	if g.Listed == nil {
		return nil
	}
	return g.Listed
}

// Delete is --delete's step after a run without failures: it removes
// the local files under DEST whose names the listing did not give and
// keep picks (the include/exclude rules), reporting each; with dryRun it
// only reports them. It refuses when the listing did not complete.
func (g *Get) Delete(ctx context.Context, keep func(name string) bool, dryRun bool, report func(name string, size int64)) error {
	p, ok := g.Sink.(store.Pruner)
	if !ok {
		return specErrorf("--delete: DEST %s cannot remove what it holds", cmp.Or(g.missingAt, "-"))
	}
	return g.Listed.PruneWith(ctx, p, keep, dryRun, report)
}

// Destination maps an object's name to where it lands, for messages;
// nil when the sink has no place to name.
func (g *Get) Destination() func(string) string {
	if d, ok := g.Sink.(interface{ Destination(string) string }); ok {
		if g.MustExist != nil {
			// The run lists a prefix, under DEST; the object it must
			// find would have landed where a single object does.
			missing, at := g.MustExist.Name, g.missingAt
			return func(name string) string {
				if name == missing {
					return at
				}
				return d.Destination(name)
			}
		}
		return d.Destination
	}
	return nil
}

// Close releases the sink's lock and the first range if unused.
func (g *Get) Close() {
	g.dest.Release()
	g.Source.Release()
}
