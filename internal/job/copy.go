package job

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/sink"
	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// CopySpec is a copy between local files and S3 as a command was given
// it: local to local, local to S3, or S3 to S3 (S3 to local is a Get).
type CopySpec struct {
	// Src and Dst are local paths or s3:// URLs as written (Dst "" with
	// Benchmark).
	Src, Dst string
	// Source is Src as its store reads it, when it is an S3 URL: its
	// key's wildcards already turned into rules ("": Src).
	Source string
	// Benchmark keeps nothing: the bytes are counted and dropped.
	Benchmark bool
	// Sink is how a local Dst is written; its LockID is set here.
	Sink local.Options
	// Upload is what an S3 Dst's objects get; its Prefix, PartSize,
	// Threshold, Trailer and SourceChecksum are set here.
	Upload s3store.UploadOptions
	// Client reaches an S3 Dst; its Transport carries every request of
	// the copy (uploads and server-side copies take each part over the
	// next lane in turn).
	Client s3store.ClientOptions
	// Stores open Src: local files (their links followed or not, their
	// unreadable entries reported as the store was built), or an S3 URL;
	// CrossStore says they reach it on another
	// store than Dst (or with other credentials): the bytes stream
	// through this process.
	Stores     store.Registry
	CrossStore bool
	// Read is how an S3 Src is read (verification, stall timeout,
	// retries); its Prefix, Name, first range and fan-out are decided
	// here.
	Read store.Options
	// PartSize and Threshold are the run's part size and multipart
	// threshold. A server-side copy uses CopyThreshold instead of
	// Threshold, and 1 GiB parts unless PartSizeSet.
	PartSize, Threshold, CopyThreshold int64
	PartSizeSet                        bool
	// FanOut is how many sub-prefixes of an S3 Src are listed at once.
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
	// LocalTo is "local" or "s3" when Src is local files, "" from S3.
	LocalTo string
	// ServerSide says the bytes move inside S3, not through s3pd.
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
	prune   func(ctx context.Context, keep func(string) bool, dryRun bool, report func(string, int64)) error
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
	from, to := StoreOf(spec.Src), StoreOf(spec.Dst)
	if spec.Benchmark {
		to = None
	}
	open, ok := copyRoutes[[2]Store{from, to}]
	if !ok {
		return nil, specErrorf("copy %s to %s: s3pd does not copy from %s to %s", spec.Src, spec.Dst, storeName(from), storeName(to))
	}
	if err := open(c, ctx, spec); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// copyRoutes are the copies s3pd makes, by the stores of their source
// and destination (S3 to local files is a Get). A local DEST "-" is the
// local path "-".
var copyRoutes = map[[2]Store]func(c *Copy, ctx context.Context, spec CopySpec) error{
	{S3, S3}:       (*Copy).fromS3,
	{Local, S3}:    (*Copy).localToS3,
	{Local, Local}: (*Copy).localToLocal,
	{Local, Stdio}: (*Copy).localToLocal,
	{Local, None}:  (*Copy).localToLocal,
	{Stdio, S3}:    (*Copy).fromStdin,
}

// storeName names a store in messages.
func storeName(s Store) string {
	switch s {
	case S3:
		return "S3"
	case Stdio:
		return "standard input or output"
	case Local:
		return "local files"
	}
	return "nowhere"
}

// localSource opens a local Src through the stores; name, when set,
// names a single file (else its base name).
func localSource(ctx context.Context, spec CopySpec, name func(key string) string) (*store.Opened, error) {
	src, err := openSource(ctx, spec.Stores, spec.Src, store.Options{Name: name}, true)
	if err != nil {
		var se *SpecError
		if !errors.As(err, &se) {
			err = &SpecError{Err: err}
		}
		return nil, err
	}
	return src, nil
}

// landLocal opens a local Src and decides where it lands under dest
// (destIsDir: dest names a directory or prefix).
func (c *Copy) landLocal(ctx context.Context, spec CopySpec, dest string, destIsDir bool) (src *store.Opened, root string, err error) {
	src, err = localSource(ctx, spec, func(key string) string {
		_, name := Land(true, key, dest, destIsDir)
		return name
	})
	if err != nil {
		return nil, "", err
	}
	if err := c.refuseSingleDelete(spec, src.Single); err != nil {
		return nil, "", err
	}
	root, _ = Land(src.Single, spec.Src, dest, destIsDir)
	c.Lanes = src.Lanes
	c.Scaled = spec.Scale.scale(src.Source, "", "", nil)
	return src, root, nil
}

// refuseSingleDelete refuses --delete when Src is one file or object.
func (c *Copy) refuseSingleDelete(spec CopySpec, single bool) error {
	if c.Listed != nil && single {
		return specErrorf("--delete needs a directory or a prefix as SRC; %s is a single file or object", spec.Src)
	}
	return nil
}

func (c *Copy) localToLocal(ctx context.Context, spec CopySpec) error {
	c.LocalTo = "local"
	if spec.Benchmark {
		src, err := localSource(ctx, spec, nil)
		if err != nil {
			return err
		}
		if err := c.refuseSingleDelete(spec, src.Single); err != nil {
			return err
		}
		c.Lanes, c.Sink = src.Lanes, sink.Discard{}
		c.Scaled = spec.Scale.scale(src.Source, "", "", nil)
		return nil
	}
	src, root, err := c.landLocal(ctx, spec, spec.Dst, IsDir(spec.Dst))
	if err != nil {
		return err
	}
	if err := checkOverlap(filepath.Clean(spec.Src), spec.Dst, src.Single); err != nil {
		return &SpecError{Err: err}
	}
	if err := CheckWritable(spec.Dst); err != nil {
		return &SpecError{Err: err}
	}
	opts := spec.Sink
	opts.LockID = ShardLockID(spec.Scale.Shard)
	ls, err := local.NewSink(root, opts)
	if err != nil {
		return &SpecError{Err: err}
	}
	c.closers = append(c.closers, func() { ls.Close() })
	c.Sink = local.NewCopySink(ls)
	c.prune = func(_ context.Context, keep func(string) bool, dryRun bool, report func(string, int64)) error {
		return c.Listed.PruneLocal(ls, keep, dryRun, report)
	}
	return nil
}

func (c *Copy) localToS3(ctx context.Context, spec CopySpec) error {
	u, err := s3store.ParseRawURL(spec.Dst)
	if err != nil {
		return &SpecError{Err: err}
	}
	c.LocalTo = "s3"
	c.StartWindow = tlsWindow(spec.Client.EndpointURL)
	src, root, err := c.landLocal(ctx, spec, u.Key, u.Prefix)
	if err != nil {
		return err
	}
	client, err := s3store.NewClient(ctx, u.Bucket, spec.Client)
	if err != nil {
		return err
	}
	opts := c.uploadOptions(spec, KeyPrefix(root))
	opts.SourceChecksum = func(ctx context.Context, o transfer.Object, alg string) (string, error) {
		return s3store.ChecksumOf(ctx, src.Source, o, alg)
	}
	opts.SourceIdentity = fileIdentity
	up := s3store.NewUploadSink(client, u.Bucket, opts)
	c.Sink = up
	c.pruneWith(up)
	return nil
}

// uploadOptions are what objects written under prefix get.
func (c *Copy) uploadOptions(spec CopySpec, prefix string) s3store.UploadOptions {
	o := spec.Upload
	o.Prefix, o.PartSize, o.Threshold = prefix, c.PartSize, c.Threshold
	// The SDK sends a trailing checksum over HTTPS only.
	o.Trailer = overTLS(spec.Client.EndpointURL)
	return o
}

// pruneWith makes Delete remove what dst holds and the listing did not
// give.
func (c *Copy) pruneWith(dst Pruner) {
	c.prune = func(ctx context.Context, keep func(string) bool, dryRun bool, report func(string, int64)) error {
		return c.Listed.PruneWith(ctx, dst, keep, dryRun, report)
	}
}

// fromS3 copies S3 to S3: server-side on one store, streamed through
// this process between stores.
func (c *Copy) fromS3(ctx context.Context, spec CopySpec) error {
	su, err := s3store.ParseRawURL(cmp.Or(spec.Source, spec.Src))
	if err != nil {
		return &SpecError{Err: err}
	}
	du, err := s3store.ParseRawURL(spec.Dst)
	if err != nil {
		return &SpecError{Err: err}
	}
	crossStore := spec.CrossStore
	if !crossStore && su.Bucket == du.Bucket {
		switch {
		case strings.TrimSuffix(su.Key, "/") == strings.TrimSuffix(du.Key, "/"):
			return specErrorf("source and destination are the same: %s", spec.Src)
		case su.Prefix && strings.HasPrefix(du.Key, su.Key):
			return specErrorf("destination %s is inside source %s", spec.Dst, spec.Src)
		}
	}
	dstClient, err := s3store.NewClient(ctx, du.Bucket, spec.Client)
	if err != nil {
		return err
	}
	read := spec.Read
	c.ServerSide = !crossStore
	if c.ServerSide {
		// A server-side copy moves no byte through s3pd: nothing to verify.
		read.Verify = false
		c.Threshold = spec.CopyThreshold
		if !spec.PartSizeSet {
			c.PartSize = copyPartSize
		}
	}
	if spec.Scale.Manifest != "" {
		su.Key, su.Prefix = ManifestPrefix(su.Key), true
	}
	// One source lane per lane of the transport (network card): ranged
	// GETs of a stream, and the parts of a server-side copy, spread over
	// them.
	read.Prefix, read.FirstRange, read.FanOut, read.ServerSide = su.Prefix, c.PartSize, spec.FanOut, c.ServerSide
	read.Name = func(key string) string {
		_, name := Land(true, key, du.Key, du.Prefix)
		return name
	}
	res, err := openSource(ctx, spec.Stores, "s3://"+su.Bucket+"/"+su.Key, read, false)
	if err != nil {
		return err
	}
	c.closers = append(c.closers, func() { res.Release() })
	c.StartWindow, c.OpaqueETags, c.Unordered = res.StartWindow, res.OpaqueETags, res.Unordered
	if res.Single && spec.Scale.Shard != nil {
		return specErrorf("--shard splits a prefix; %s is a single object", spec.Src)
	}
	if err := c.refuseSingleDelete(spec, res.Single); err != nil {
		return err
	}
	root, _ := Land(res.Single, su.Key, du.Key, du.Prefix)
	c.Lanes = res.Lanes
	c.Scaled = spec.Scale.scale(c.Lanes[0].Source, su.Bucket, su.Key, res.Source)
	opts := c.uploadOptions(spec, KeyPrefix(root))
	if c.ServerSide {
		cs := s3store.NewCopySink(dstClient, su.Bucket, du.Bucket, opts)
		c.Sink = cs
		c.pruneWith(cs)
		return nil
	}
	if !opts.Trailer {
		c.MaxRequests = max(1, int(streamBuffer/c.PartSize))
	}
	if cs, ok := res.Source.(store.Checksummer); ok {
		opts.SourceChecksum = cs.Checksum
	}
	opts.SourceIdentity = objectIdentity
	up := s3store.NewUploadSink(dstClient, du.Bucket, opts)
	c.Sink = up
	c.pruneWith(up)
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
	return c.prune(ctx, keep, dryRun, report)
}

// Close releases the destination's lock and the first range if unused;
// a second Close does nothing.
func (c *Copy) Close() {
	for _, fn := range c.closers {
		fn()
	}
	c.closers = nil
}

// fileIdentity identifies a local file's bytes for an upload's journal:
// its device, inode, size and modification time, as the file is now
// ("" when it cannot be read, which resumes nothing of its upload).
func fileIdentity(o transfer.Object) string {
	st, err := os.Stat(o.Key)
	if err != nil {
		return ""
	}
	id := fmt.Sprintf("file %d %d", st.Size(), st.ModTime().UnixNano())
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id += fmt.Sprintf(" %d:%d", uint64(sys.Dev), sys.Ino)
	}
	return id
}

// objectIdentity identifies an object's bytes at another store for an
// upload's journal: its ETag, version and size.
func objectIdentity(o transfer.Object) string {
	return fmt.Sprintf("object %s %s %d", o.ETag, o.VersionID, o.Size)
}
