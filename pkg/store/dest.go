package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Dest is the destination side of a store that takes writes: where a
// location lands, and the sink that writes there. What only the store
// needs (upload options, how local files are written) its constructor
// binds when the registry is built.
type Dest struct {
	// Locate says what loc names as a destination, before anything is
	// read or written: its root in the store and whether objects land
	// under it by name. It refuses a location that cannot be written.
	Locate func(loc string) (Place, error)
	// Open opens loc for writing under what o says.
	Open func(ctx context.Context, loc string, o DestOptions) (*Sink, error)
	// Overlap, when set, refuses a copy within the store whose
	// destination dst is its source src (ErrSame) or lies inside it
	// (ErrInside), before either is opened.
	Overlap func(src, dst string) error
	// CopiesWithin says the store copies its own objects within itself
	// (a server-side copy): a source of the same store is then opened
	// with Options.ServerSide, and its lanes name bytes.
	CopiesWithin bool
	// Streams says its sinks take one stream of unknown size (standard
	// input) to one object: they implement Streamer.
	Streams bool
}

// Place is what a destination location names.
type Place struct {
	// Path is the location's root in its store: a local path, an
	// object key.
	Path string
	// Dir says it names a directory or a prefix: objects land under it
	// by name (a single one at its base name), else at Path itself.
	Dir bool
}

// ErrSame and ErrInside are what Dest.Overlap refuses.
var (
	ErrSame   = errors.New("source and destination are the same")
	ErrInside = errors.New("destination is inside source")
)

// DestOptions are how a destination is opened: what the job decided of
// the copy. They are the same for every store.
type DestOptions struct {
	// Root is where the objects are written, each at its name: a
	// directory, or the root of keys (the store makes it a prefix).
	Root string
	// Name, when set, is the one object written: the destination then
	// locks only it, and other runs may write beside it.
	Name string
	// Lock names the share of the destination this run writes ("2of8",
	// a shard; "": all of it): runs of other shares write together.
	Lock string
	// PartSize and Threshold are the engine's part size and multipart
	// threshold.
	PartSize, Threshold int64
	// From is the opened source the objects come from (nil: a stream):
	// a destination may skip what it holds already by what From can
	// vouch for (Checksummer), and resume by its identity (Identifier).
	From *Opened
	// Within, when set, is the source's location in the same store: the
	// destination copies from it within itself (Dest.CopiesWithin), and
	// From's lanes name bytes instead of carrying them.
	Within string
}

// Sink is an opened destination: the engine's sink and what the job
// needs of it. The sink may implement Pruner (--delete) and Streamer
// (standard input).
type Sink struct {
	Sink transfer.Sink
	// StartWindow is the requests in flight the engine should start
	// with, as the destination's connections need (0: its default).
	StartWindow int
	// HoldsParts says a part whose body cannot be read twice (a stream
	// from another store) is held in memory while it is sent, PartSize
	// each: the job caps the requests in flight.
	HoldsParts bool
	// Close releases what the destination holds (its lock); nil:
	// nothing.
	Close func() error
}

// Release calls Close, when set; a nil Sink releases nothing.
func (s *Sink) Release() error {
	if s == nil || s.Close == nil {
		return nil
	}
	return s.Close()
}

// Pruner is a destination that can remove what is under it: the
// capability --delete needs of a store that takes writes.
type Pruner interface {
	// Prune removes the objects whose names doomed picks, reporting
	// each; with dryRun it only reports them.
	Prune(ctx context.Context, doomed func(name string) bool, dryRun bool, report func(name string, size int64)) error
}

// Streamer is a destination that writes one stream of unknown size (standard input) to
// one object.
type Streamer interface {
	Stream(ctx context.Context, key string, r io.Reader, o StreamOptions) (StreamResult, error)
	// Destination is where key lands, for messages.
	Destination(key string) string
}

// StreamOptions are how a stream is written.
type StreamOptions struct {
	// PartSize is the part size; Expected about how many bytes the
	// stream holds (0: not known), for the store to keep within its
	// count of parts.
	PartSize, Expected int64
	// Parts is how many parts may be in flight (and in memory) at once.
	Parts int
	// Progress is told of the bytes as they are sent.
	Progress func(int64)
}

// StreamResult is what a stream wrote.
type StreamResult struct {
	Bytes    int64
	Parts    int   // 0: one request
	PartSize int64 // the part size used
	// Checksum is the object's full-object checksum, computed over the
	// stream as it was read. Landed says how what the store kept was
	// checked against it.
	Checksum string
	Landed   transfer.Verification
	// Requests counts the stream's requests; Retries the parts sent
	// again, and SlowDowns those among them the store asked for by
	// throttling.
	Requests, Retries, SlowDowns int64
	Elapsed                      time.Duration
}

// Identifier is a source that identifies an object's bytes as they are
// now (a file's inode and modification time, an object's ETag and
// version), for a destination that resumes only what did not change.
type Identifier interface {
	Identity(obj transfer.Object) string
}

// Entry finds the entry of scheme ("" for local paths).
func (r Registry) Entry(scheme string) (Entry, bool) {
	for _, e := range r {
		if e.Scheme == scheme {
			return e, true
		}
	}
	return Entry{}, false
}

// EntryOf is the entry of loc's store.
func (r Registry) EntryOf(loc string) (Entry, error) {
	if e, ok := r.Entry(SchemeOf(loc)); ok {
		return e, nil
	}
	_, err := r.Lookup(loc)
	return Entry{}, err
}

// NameOf is what messages call e's store.
func (e Entry) NameOf() string {
	switch {
	case e.Name != "":
		return e.Name
	case e.Scheme == "":
		return "local paths"
	}
	return e.Scheme + ":// URLs"
}

// Writes reports whether e's store takes writes.
func (e Entry) Writes() bool { return e.Dest != nil && e.Dest.Open != nil && e.Dest.Locate != nil }

// ErrNoWrites says a store takes no writes.
var ErrNoWrites = errors.New("this store takes no writes")

// Locate is what loc names as a destination of e's store.
func (e Entry) Locate(loc string) (Place, error) {
	if !e.Writes() {
		return Place{}, fmt.Errorf("%s: %w", loc, ErrNoWrites)
	}
	return e.Dest.Locate(loc)
}
