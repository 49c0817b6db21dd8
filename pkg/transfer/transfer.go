// Package transfer is s3pd's engine: it plans objects into parts, schedules
// them over a bounded pool of workers, dispatches each range over one of
// several lanes (one per NIC), retries what can be retried, and reports
// progress to an Observer. It declares the small interfaces it consumes —
// Source, Sink and Observer — and knows nothing of the command line, of S3
// or of the local filesystem.
package transfer

import (
	"context"
	"hash"
	"io"
	"time"
)

// Object is one object to transfer.
type Object struct {
	// Key names the object at the source (an S3 key, a local path).
	Key string
	// Name is the object's slash-separated path relative to the
	// destination root; the sink maps it to a place.
	Name string
	// Size is the object's size in bytes. A lister gives every object its
	// size; -1 (unknown) is only a step between a lister and a decorator
	// that looks it up, and the engine fails an object that still has it.
	Size int64
	// ETag pins the object's version for every later range (If-Match).
	ETag string
	// VersionID pins a version explicitly.
	VersionID string
	// ModTime is the object's last-modified time, when known.
	ModTime time.Time
	// ChecksumAlgorithm is the full-object checksum the listing says the
	// object has (CRC64NVME, CRC32C, CRC32, ...), if any.
	ChecksumAlgorithm string
	// StorageClass is the object's storage class, when listed.
	StorageClass string
	// Checksums are the object's full-object checksums by algorithm
	// ("CRC64NVME": base64 value), when known before the transfer.
	Checksums map[string]string
	// NoRanges says the source serves the object only whole (a server
	// that ignores Range): it is fetched in one request, in order,
	// whatever its size, and not in parallel parts.
	NoRanges bool
	// Digest, when set, is a full-object digest that whoever named the
	// object vouches for (a checksum given beside a URL): the bytes are
	// read back in order and hashed before the file is committed.
	Digest *Digest
	// Err, when set, is what the source could not read of this object
	// (a listed field it could not parse): the engine fails the object
	// with it, without a request.
	Err error
}

// Digest is a full-object digest of any hash (SHA-256, MD5, CRC32C),
// checked by hashing the whole object once its bytes are written.
type Digest struct {
	// Name is the algorithm in lower case ("sha256", "md5", "crc32c"),
	// as Verification.Checksums names it once it matched.
	Name string
	// New returns a fresh hash of the algorithm.
	New func() hash.Hash
	// Sum is what the bytes must hash to.
	Sum []byte
	// Offered says the source offered the digest (a server's header),
	// where the caller did not ask for it: like an MD5 ETag, which also
	// costs a read back, it is checked under VerifyFull only.
	Offered bool
}

// Body is the open body of one range of an object.
type Body struct {
	io.ReadCloser
	// Off and Len are the bytes the body carries, as the response
	// declared them (Content-Range, or the whole object).
	Off, Len int64
	// Size is the object's total size as the response declared it.
	Size int64
	// ETag is the object's ETag as the response declared it.
	ETag string
	// ModTime is the object's last-modified time, when declared.
	ModTime time.Time
	// Checksums are full-object checksums the response carried, by
	// algorithm name (only on whole-object responses).
	Checksums map[string]string
	// Encrypted says the object is stored with SSE-KMS or SSE-C, whose
	// ETag is not the MD5 of its bytes.
	Encrypted bool
	// Connect is how long the request waited for a new connection of its
	// own (the dial and the TLS handshake), 0 when it reused one: the
	// window leaves it out of the time to first byte it reads the
	// server's queue by.
	Connect time.Duration
}

// Lister lists the objects to transfer.
type Lister interface {
	// List calls emit for every object to transfer, in order, streaming:
	// emit may block, and List must not gather the whole listing first.
	List(ctx context.Context, emit func(Object) error) error
}

// Refresher is implemented by listers whose metadata may be stale (an
// inventory written hours ago): Refresh looks obj up again at the source
// and updates its size, ETag and modification time.
type Refresher interface {
	Refresh(ctx context.Context, obj *Object) error
}

// Source lists objects and opens ranges of them.
type Source interface {
	Lister
	// Open opens bytes [off, off+n) of obj; n < 0 means to the end. The
	// body must carry exactly those bytes; the engine checks Off and Len.
	Open(ctx context.Context, obj *Object, off, n int64) (*Body, error)
}

// Sink creates the destination of each object.
type Sink interface {
	// Create prepares the destination of obj, whose Size is known.
	Create(ctx context.Context, obj Object) (File, error)
}

// File is the destination of one object while it is written. Parallel
// WriteAt calls on non-overlapping ranges are allowed, as in io.WriterAt.
type File interface {
	io.WriterAt
	// Commit makes the complete object visible at its final name.
	Commit() error
	// Abort discards whatever was written.
	Abort() error
}

// Lane is one path to the source, such as an HTTP client bound to one
// network card. Parts are spread over lanes by outstanding bytes.
type Lane struct {
	Name   string
	Source Source
}

// PartWriter is implemented by files that take a whole part at once
// instead of a stream of WriteAt calls: an upload part, or a local copy
// that lets the kernel move the bytes (copy_file_range). The engine hands
// such a file the open body of each part; a part that fails is retried
// from its start, since a part is written whole or not at all.
type PartWriter interface {
	// WritePart writes bytes [off, off+n) of the object, read from body,
	// calls progress as bytes move (it counts them and keeps the stall
	// watch quiet), and returns how many bytes it moved.
	WritePart(ctx context.Context, off, n int64, body *Body, progress func(int64)) (int64, error)
}

// Stager is implemented by files that lend the buffers a range is read
// into and write them out themselves, so that no byte is copied between
// the network and the write: direct I/O writes whole aligned blocks from
// aligned buffers of its own. The engine then writes through a Stage per
// attempt of a range instead of WriteAt.
type Stager interface {
	// Stage begins an attempt that writes bytes in order from off, at
	// most n of them (fewer when the range is split or fails).
	Stage(off, n int64) (Stage, error)
}

// Stage is one attempt's run of bytes, written in order.
type Stage interface {
	// Next returns where the next bytes go: at least one byte of room.
	Next() []byte
	// Wrote says the first k bytes of what Next returned hold data; the
	// stage may write them out now (a full buffer).
	Wrote(k int) error
	// Close writes out every byte Wrote was told of and releases the
	// stage's buffer; once it returns nil they are all in the file, as
	// WriteAt would have put them. It is called once, even after an
	// error.
	Close() error
}

// Checker is implemented by sinks that can tell, before any request,
// that an object needs no transfer (it is already complete and
// unchanged, or must not be replaced): Check then returns an error with
// a skip reason, such as a *SkipError.
type Checker interface {
	Check(obj Object) error
}

// Journal is implemented by files that remember durable parts across
// runs, so an interrupted transfer resumes where it stopped.
type Journal interface {
	// Completed reports how many leading bytes of the part [off, off+n)
	// an earlier run of the same object version made durable, with the
	// sum given to PartDone for them: n for the whole part, fewer for a
	// part that run was interrupted in, 0 for none. When the object's
	// checksum is verified, the engine reads those bytes back (the file
	// must be an io.ReaderAt) and takes them only if their checksum still
	// equals sum; otherwise it fetches them again.
	Completed(off, n int64) (have int64, sum string)
	// PartDone records that bytes [off, off+n) are written, with sum, an
	// opaque token of their checksum ("" when none was computed); the
	// file makes the data durable before it journals them. A part
	// interrupted in progress records the prefix it wrote the same way;
	// a later PartDone at the same off (the whole part) replaces it.
	PartDone(off, n int64, sum string) error
	Suspender
}

// Suspender is implemented by files that can keep what was written for
// a later run (a Journal; an upload whose parts stay in the store).
type Suspender interface {
	// Suspend keeps what was written for a later run, instead of
	// Abort's removal; the engine calls it when the run is interrupted.
	// It reports whether anything was kept: at least one durable part
	// that the next run will look up (so "kept for resume" counts what
	// a rerun resumes).
	Suspend() (kept bool, err error)
}

// Reuser is implemented by part writers that keep, inside WritePart,
// parts an earlier run wrote (an upload's parts the store already holds,
// checked against the bytes read now) instead of writing them again.
// Reused, after Commit, is how many bytes that kept: the object's
// resumed bytes.
type Reuser interface {
	Reused() int64
}

// Lander is implemented by files whose Commit checks what the
// destination stored against the bytes written: an upload compares the
// size and checksum the store reports for the object with those of the
// bytes it sent. Commit (or WritePart, for an object sent in one
// request) fails with an error that wraps ErrChecksum when they differ.
// After a Commit that returned nil, Landed says how the destination was
// checked; it then decides the object's verification, since bytes read
// right but stored wrong are not verified.
type Lander interface {
	Landed() Verification
}

// Dataless is implemented by body readers that carry no data, only a
// reference that a PartWriter acts on (a server-side copy): the engine
// neither reads nor sums them.
type Dataless interface {
	Dataless()
}
