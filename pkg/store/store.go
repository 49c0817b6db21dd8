// Package store is the contract between the job and the stores objects
// are read from: a store is one package with an Opener for its URL
// scheme, and a Registry (a value, built in one place and passed in)
// finds a location's opener by its scheme. What an opener returns is the
// engine's own vocabulary: lanes of transfer.Source (list, and open a
// byte range of an object pinned by its version and ETag). What only
// some stores can do is an optional interface a source may implement:
// Stater, Checksummer. The package knows no store.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Options are how a location is opened: what the job decided of it, and
// how its objects are read. They are the same for every store; what
// only one store needs (credentials, a region, request headers) its
// opener is given when the registry is built.
type Options struct {
	// Prefix says the location names a prefix (a directory) for sure:
	// nothing is probed, and a key without a trailing "/" gets one.
	Prefix bool
	// Object says the location names one object for sure: one that is
	// not there is an error, not an empty prefix.
	Object bool
	// Name maps a single object's key to its destination name (nil:
	// the key's base name).
	Name func(key string) string
	// FirstRange is the length of the first range, which resolves a
	// single object and is then served to the engine (-1: the whole
	// object; 0: the store's choice).
	FirstRange int64
	// Version is the single object's version ("": the current one).
	Version string
	// Verify asks for the objects' full-object checksums, for the
	// engine to verify.
	Verify bool
	// FanOut is how many sub-prefixes of a prefix are listed at once.
	FanOut int
	// StallTimeout bounds the wait for an answer (0: no bound but the
	// transport's).
	StallTimeout time.Duration
	// OnRetry, when set, is told of a listing request asked again.
	OnRetry func(attempt int, err error)
	// ServerSide makes the lanes name bytes instead of carrying them (a
	// server-side copy within the store): a single object is resolved
	// without fetching any byte. A store that cannot copy within itself
	// refuses it.
	ServerSide bool
}

// NameOf is the destination name of a single object of key.
func (o Options) NameOf(key string) string {
	if o.Name != nil {
		return o.Name(key)
	}
	return key[strings.LastIndexByte(key, '/')+1:]
}

// Opened is a location opened by its store: the lanes the engine reads
// it over and what the location turned out to name.
type Opened struct {
	// Lanes are the paths to the store (one per network card), each a
	// source over what the location names, in the engine's order.
	Lanes []transfer.Lane
	// Source is the first lane's source as the store made it (without
	// what the engine's lanes add): it lists, and it may implement
	// Stater and Checksummer.
	Source transfer.Source
	// Single says the location named one object, whose key is Key;
	// else Key is the prefix listed.
	Single bool
	Key    string
	// Guessed says the location could have named one object but named
	// none, and is read as the prefix Key: a run that finds nothing
	// under it has still failed to find the object.
	Guessed bool
	// OpaqueETags says the store's ETags are not MD5s of the bytes;
	// Unordered that it lists out of key order.
	OpaqueETags, Unordered bool
	// Rereadable says the bodies its lanes open can be read twice
	// (local files): a destination need not hold them in memory.
	Rereadable bool
	// StartWindow is the requests in flight the engine should start
	// with (0: its default), as the store's connections need.
	StartWindow int
	// Close releases what opening held (a first range the engine did
	// not take); nil: nothing.
	Close func() error
}

// Release calls Close, when set; a nil Opened releases nothing.
func (o *Opened) Release() error {
	if o == nil || o.Close == nil {
		return nil
	}
	return o.Close()
}

// Opener opens a location of its store: the URL string as given, with
// the generic options.
type Opener func(ctx context.Context, loc string, o Options) (*Opened, error)

// Entry is one store of a registry: the scheme its URLs begin with
// ("s3" for s3://...; "" for a location without a scheme, a local
// path), its opener, and its destination side when it takes writes.
type Entry struct {
	Scheme string
	// Name is what messages call the store ("S3"; "": its scheme).
	Name string
	Open Opener
	// Dest writes to the store's locations (nil: it takes no writes).
	Dest *Dest
}

// Registry finds a location's store by its scheme. It is a value, built
// where the program is wired, one entry per store.
type Registry []Entry

// ErrNoStore says no store of the registry takes a location's scheme.
var ErrNoStore = errors.New("no store takes this location")

// SchemeOf is loc's scheme: what comes before "://", or "" when loc has
// none (a local path).
func SchemeOf(loc string) string {
	s, _, ok := strings.Cut(loc, "://")
	if !ok || s == "" || strings.ContainsAny(s, "/.") {
		return ""
	}
	return strings.ToLower(s)
}

// Lookup is the opener of loc's store.
func (r Registry) Lookup(loc string) (Opener, error) {
	scheme := SchemeOf(loc)
	for _, e := range r {
		if e.Scheme == scheme {
			return e.Open, nil
		}
	}
	if scheme == "" {
		return nil, fmt.Errorf("%s: %w", loc, ErrNoStore)
	}
	return nil, fmt.Errorf("%s: %w (no %s:// store)", loc, ErrNoStore, scheme)
}

// Takes reports whether a store of the registry takes loc.
func (r Registry) Takes(loc string) bool {
	_, err := r.Lookup(loc)
	return err == nil
}

// Open opens loc with its store's opener.
func (r Registry) Open(ctx context.Context, loc string, o Options) (*Opened, error) {
	open, err := r.Lookup(loc)
	if err != nil {
		return nil, err
	}
	return open(ctx, loc, o)
}

// SetupError is a store that could not be set up to open a location
// (its clients, their configuration, the region of a bucket), before any
// request for what the location names.
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// Stater is a source that looks one object up by its key (a manifest's
// entries without a size, or gone stale).
type Stater interface {
	Stat(ctx context.Context, key string) (transfer.Object, error)
}

// Checksummer is a source that can vouch for an object's full-object
// checksum in alg (CRC64NVME, CRC32C), for a destination that sends it.
type Checksummer interface {
	Checksum(ctx context.Context, obj transfer.Object, alg string) (string, error)
}

// FromSource makes an opener of a store whose every location is one
// object behind a transfer.Source (an http(s) URL, say): newSource
// builds the source for loc, which lists that one object. The object is
// named by Options.Name; a prefix, a version or a server-side copy is
// refused.
func FromSource(newSource func(ctx context.Context, loc string) (transfer.Source, error)) Opener {
	return func(ctx context.Context, loc string, o Options) (*Opened, error) {
		switch {
		case o.Prefix:
			return nil, fmt.Errorf("%s names one object, not a prefix", loc)
		case o.Version != "":
			return nil, fmt.Errorf("%s: this store has no versions", loc)
		case o.ServerSide:
			return nil, fmt.Errorf("%s: this store does not copy within itself", loc)
		}
		src, err := newSource(ctx, loc)
		if err != nil {
			return nil, err
		}
		named := &namedSource{Source: src, name: o.NameOf}
		return &Opened{Lanes: []transfer.Lane{{Name: "default", Source: named}}, Source: named, Single: true, Key: loc}, nil
	}
}

// namedSource names the objects its source lists as Options.Name says.
type namedSource struct {
	transfer.Source
	name func(key string) string
}

func (s *namedSource) List(ctx context.Context, emit func(transfer.Object) error) error {
	return s.Source.List(ctx, func(o transfer.Object) error {
		o.Name = s.name(o.Key)
		return emit(o)
	})
}

// ReadAll opens the one object loc names through r, whole, for a
// reader of a small file (a manifest): what it returns closes the
// store with it.
func (r Registry) ReadAll(ctx context.Context, loc string) (io.ReadCloser, error) {
	st, err := r.Open(ctx, loc, Options{Object: true, FirstRange: -1})
	if err != nil {
		return nil, err
	}
	if !st.Single {
		st.Release()
		return nil, fmt.Errorf("%s names no object", loc)
	}
	var obj transfer.Object
	errFound := errors.New("found")
	err = st.Lanes[0].Source.List(ctx, func(o transfer.Object) error { obj = o; return errFound })
	if err == nil {
		err = fmt.Errorf("%s names no object", loc)
	}
	if !errors.Is(err, errFound) {
		st.Release()
		return nil, err
	}
	b, err := st.Lanes[0].Source.Open(ctx, &obj, 0, -1)
	if err != nil {
		st.Release()
		return nil, err
	}
	return readCloser{b, st}, nil
}

type readCloser struct {
	*transfer.Body
	st *Opened
}

func (r readCloser) Close() error { return errors.Join(r.Body.Close(), r.st.Release()) }
