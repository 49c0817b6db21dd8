package local

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// DirectMode says whether a sink writes its files around the page cache
// (O_DIRECT).
type DirectMode int

const (
	// DirectOff writes through the page cache.
	DirectOff DirectMode = iota
	// DirectOn writes every object with O_DIRECT.
	DirectOn
	// DirectAuto writes objects of at least DirectAutoMin bytes with
	// O_DIRECT where the file system takes it and does not keep its
	// files in memory anyway (tmpfs).
	DirectAuto
)

// DirectAutoMin is the smallest object DirectAuto writes with O_DIRECT:
// below it the page cache costs little and small files are written in
// one request anyway.
const DirectAutoMin = 64 << 20

// DirectBudget bounds the staging buffers of direct I/O of one run:
// StageSize gives the requests in flight that much in all.
const DirectBudget = 64 << 20

// maxAlign bounds the alignment taken from the file system's block size.
const maxAlign = 1 << 20

// minStage is the smallest staging buffer StageSize gives.
const minStage = 64 << 10

// StageSize is the size of a direct I/O staging buffer for parts of
// partSize bytes with requests in flight: the part size, or less where
// requests of them would hold more than DirectBudget, never under 64
// KiB. Each range in flight holds one while it receives bytes.
func StageSize(partSize int64, requests int) int {
	return int(max(min(partSize, DirectBudget/int64(max(requests, 1))), minStage))
}

// Direct I/O states, as the summary and --json give them.
const (
	DirectStateOff      = "off"
	DirectStateOn       = "on"
	DirectStateFallback = "fallback"
)

// DirectStatus is what a sink did about direct I/O: State is one of the
// DirectState values; Reason says why it is off or fell back.
type DirectStatus struct {
	State, Reason string
}

// direct is a sink's direct I/O: how to align, and the staging buffers.
// Writes are aligned to align (the largest of the file system's direct
// I/O alignment, its block size and a page): whole blocks go through
// the O_DIRECT descriptor, and
// the bytes of a block a range only partly covers (a range that starts
// or ends off a block, the object's last block) through the buffered
// one. A page is so written one way only: a direct write never meets a
// dirty cached page of its own range, and one range's partial page
// never shares a block with another's direct write.
type direct struct {
	auto  bool
	align int64
	// memAlign is the alignment of a buffer's address.
	memAlign int
	size     int // a staging buffer, a multiple of align
	free     chan *stage
	// files counts the files written with O_DIRECT.
	files atomic.Int64
	// refused, once set, is why a write or open with O_DIRECT was refused
	// during the run: later ones go through the page cache.
	refused atomic.Pointer[string]
	warn    sync.Once
}

// startDirect decides the sink's direct I/O from its options and a
// probe of the work folder's file system: s.direct is set when it is to
// be used, s.directStatus says why not otherwise.
func (s *Sink) startDirect() {
	if s.opts.DirectIO == DirectOff || s.opts.DryRun {
		s.directStatus = DirectStatus{State: DirectStateOff}
		return
	}
	d, tmpfs, err := s.probeDirect()
	switch {
	case err != nil:
		s.directStatus = DirectStatus{State: DirectStateFallback, Reason: err.Error()}
		s.warn(fmt.Sprintf("direct I/O: %s: writing through the page cache", err))
	case tmpfs && s.opts.DirectIO == DirectAuto:
		s.directStatus = DirectStatus{State: DirectStateOff, Reason: "tmpfs keeps its files in memory: direct I/O would save nothing"}
	default:
		d.auto = s.opts.DirectIO == DirectAuto
		s.direct = d
	}
}

// probeDirect opens a file of the work folder with O_DIRECT, learns the
// alignment and writes one block, so a file system that refuses direct
// I/O is found before any data is fetched.
func (s *Sink) probeDirect() (*direct, bool, error) {
	name := fmt.Sprintf("direct-probe-%d", os.Getpid())
	defer unix.Unlinkat(s.workFd, name, 0)
	fd, err := unix.Openat(s.workFd, name, unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("create %s: %w", path.Join(WorkDir, name), err)
	}
	defer unix.Close(fd)
	var fs unix.Statfs_t
	statfs := unix.Fstatfs(fd, &fs) == nil
	tmpfs := statfs && fs.Type == unix.TMPFS_MAGIC
	dfd, err := s.openDirect(name)
	if err != nil {
		return nil, tmpfs, err
	}
	defer unix.Close(dfd)
	// Blocks of at least a page and of the file system's block: a direct
	// write never covers part of a page or block that another range
	// writes through the cache (xfs zeroes around a write that covers
	// part of a block).
	page := int64(os.Getpagesize())
	align, memAlign := page, page
	if statfs && fs.Bsize > 0 && fs.Bsize <= maxAlign && fs.Bsize&(fs.Bsize-1) == 0 {
		align = max(align, fs.Bsize)
	}
	var stx unix.Statx_t
	if unix.Statx(dfd, "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &stx) == nil && stx.Mask&unix.STATX_DIOALIGN != 0 {
		if stx.Dio_offset_align == 0 {
			return nil, tmpfs, errors.New("the file system does not support O_DIRECT on this file")
		}
		align, memAlign = max(align, int64(stx.Dio_offset_align)), max(memAlign, int64(stx.Dio_mem_align))
	}
	if align > maxAlign || align&(align-1) != 0 || memAlign&(memAlign-1) != 0 {
		return nil, tmpfs, fmt.Errorf("direct I/O alignment %d (memory %d) is not a power of two up to 1 MiB", align, memAlign)
	}
	d := &direct{align: align, memAlign: int(memAlign)}
	d.size = int(roundUp(int64(max(s.opts.StageSize, minStage)), align))
	d.free = make(chan *stage, max(DirectBudget/d.size, 1))
	st := d.get()
	defer d.put(st)
	if err := unix.Fallocate(dfd, 0, 0, align); err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
		return nil, tmpfs, fmt.Errorf("preallocate %s: %w", path.Join(WorkDir, name), err)
	}
	if err := pwriteAll(dfd, st.buf[:align], 0); err != nil {
		return nil, tmpfs, fmt.Errorf("write %d bytes with O_DIRECT: %w", align, err)
	}
	return d, tmpfs, nil
}

// openDirect opens name in the work folder with O_DIRECT.
func (s *Sink) openDirect(name string) (int, error) {
	if s.opts.RefuseDirect {
		return -1, fmt.Errorf("open with O_DIRECT: %w (refused by S3PD_TEST_REFUSE_DIRECT_IO)", unix.EINVAL)
	}
	fd, err := unix.Openat(s.workFd, name, unix.O_RDWR|unix.O_DIRECT|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1, fmt.Errorf("open with O_DIRECT: %w", err)
	}
	return fd, nil
}

// DirectIO reports what the sink did about direct I/O.
func (s *Sink) DirectIO() DirectStatus {
	d := s.direct
	switch {
	case d == nil:
		return s.directStatus
	case d.refused.Load() != nil:
		return DirectStatus{State: DirectStateFallback, Reason: *d.refused.Load()}
	case d.files.Load() == 0 && d.auto:
		return DirectStatus{State: DirectStateOff, Reason: fmt.Sprintf("auto: no object of %d MiB or more", DirectAutoMin>>20)}
	}
	return DirectStatus{State: DirectStateOn}
}

// refuse records that the file system refused direct I/O during the run,
// and warns of it once.
func (s *Sink) refuse(err error) {
	why := err.Error()
	if s.direct.refused.CompareAndSwap(nil, &why) {
		s.direct.warn.Do(func() { s.warn(fmt.Sprintf("direct I/O: %s: writing through the page cache", why)) })
	}
}

// wantsDirect says whether obj is written with O_DIRECT.
func (s *Sink) wantsDirect(obj transfer.Object) bool {
	d := s.direct
	return d != nil && d.refused.Load() == nil && obj.Size > 0 && (!d.auto || obj.Size >= DirectAutoMin)
}

// makeDirect gives f its O_DIRECT descriptor, or leaves it buffered
// (and the sink falling back) when the file system refuses it.
func (s *Sink) makeDirect(f *file) transfer.File {
	dfd, err := s.openDirect(f.tmpBase)
	if err != nil {
		s.refuse(err)
		return f
	}
	f.direct = dfd
	s.direct.files.Add(1)
	return &directFile{file: f, d: s.direct}
}

// preallocate sizes a new file to obj's size with fallocate, so that
// its blocks are reserved before parts land anywhere in it, or with a
// truncate where the file system cannot.
func preallocate(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return f.Truncate(size)
	}
	return err
}

// directFile is a file written with O_DIRECT: it lends aligned stages
// (transfer.Stager) and reads back through aligned buffers.
type directFile struct {
	*file
	d *direct
}

// Stage implements transfer.Stager.
func (f *directFile) Stage(off, _ int64) (transfer.Stage, error) {
	st := f.d.get()
	st.f = f
	st.base = off &^ (f.d.align - 1)
	st.from = int(off - st.base)
	st.fill = st.from
	return st, nil
}

// Align implements transfer.Aligner: the engine plans the tail's ranges
// on whole blocks.
func (f *directFile) Align() int64 { return f.d.align }

// ReadAt implements io.ReaderAt with aligned reads through the O_DIRECT
// descriptor, so that reading a part back (a resumed part, the MD5 of
// --verify full) does not fill the page cache either.
func (f *directFile) ReadAt(p []byte, off int64) (int, error) {
	if f.d.refused.Load() != nil {
		return f.File.ReadAt(p, off)
	}
	st := f.d.get()
	defer f.d.put(st)
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		base := pos &^ (f.d.align - 1)
		k := min(int64(len(st.buf)), roundUp(pos+int64(len(p)-n), f.d.align)-base)
		r, err := preadFull(f.direct, st.buf[:k], base)
		if errors.Is(err, unix.EINVAL) {
			m, err := f.File.ReadAt(p[n:], pos)
			return n + m, err
		}
		if err != nil {
			return n, fmt.Errorf("read %s at %d: %w", f.rel, base, err)
		}
		if r <= int(pos-base) {
			return n, io.EOF
		}
		n += copy(p[n:], st.buf[pos-base:r])
		if int64(r) < k && n < len(p) {
			return n, io.EOF
		}
	}
	return n, nil
}

// stage is one attempt's staging buffer: buf[0] is the byte at base (a
// multiple of the alignment); the attempt's bytes are buf[from:fill].
type stage struct {
	f          *directFile
	buf        []byte
	base       int64
	from, fill int
}

// Next implements transfer.Stage.
func (st *stage) Next() []byte { return st.buf[st.fill:] }

// Wrote implements transfer.Stage: a full buffer is written out.
func (st *stage) Wrote(k int) error {
	st.fill += k
	if st.fill < len(st.buf) {
		return nil
	}
	err := st.flush()
	st.base += int64(len(st.buf))
	st.from, st.fill = 0, 0
	return err
}

// Close implements transfer.Stage.
func (st *stage) Close() error {
	err := st.flush()
	st.f.d.put(st)
	return err
}

// flush writes buf[from:fill]: its whole blocks with O_DIRECT, a block
// it covers only in part (at either end) through the buffered descriptor.
func (st *stage) flush() error {
	f, align := st.f, int(st.f.d.align)
	lo := st.from
	if lo == st.fill {
		return nil
	}
	if head := roundUp(int64(lo), int64(align)); int(head) != lo {
		hi := min(int(head), st.fill)
		if err := f.buffered(st.buf[lo:hi], st.base+int64(lo)); err != nil {
			return err
		}
		lo = hi
	}
	if hi := st.fill &^ (align - 1); hi > lo {
		if err := f.writeDirect(st.buf[lo:hi], st.base+int64(lo)); err != nil {
			return err
		}
		lo = hi
	}
	if st.fill > lo {
		return f.buffered(st.buf[lo:st.fill], st.base+int64(lo))
	}
	return nil
}

// writeDirect writes aligned p at off with O_DIRECT; where the file
// system refuses it, through the page cache from then on.
func (f *directFile) writeDirect(p []byte, off int64) error {
	if f.d.refused.Load() == nil {
		err := pwriteAll(f.direct, p, off)
		if !errors.Is(err, unix.EINVAL) {
			if err != nil {
				return fmt.Errorf("write %s at %d: %w", f.rel, off, err)
			}
			return nil
		}
		f.sink.refuse(fmt.Errorf("write with O_DIRECT: %w", err))
	}
	return f.buffered(p, off)
}

// buffered writes p at off through the page cache.
func (f *directFile) buffered(p []byte, off int64) error {
	if _, err := f.File.WriteAt(p, off); err != nil {
		return fmt.Errorf("write %s at %d: %w", f.rel, off, unwrapPath(err))
	}
	return nil
}

// get lends a staging buffer: a returned one, or a new one.
func (d *direct) get() *stage {
	select {
	case st := <-d.free:
		return st
	default:
		return &stage{buf: alignedBuffer(d.size, d.memAlign)}
	}
}

// put returns st; beyond the pool's bound it is left to the collector.
func (d *direct) put(st *stage) {
	st.f = nil
	select {
	case d.free <- st:
	default:
	}
}

// alignedBuffer returns size bytes whose address is a multiple of align
// (a power of two).
func alignedBuffer(size, align int) []byte {
	b := make([]byte, size+align)
	skip := (align - int(uintptr(unsafe.Pointer(&b[0]))&uintptr(align-1))) & (align - 1)
	return b[skip : skip+size : skip+size]
}

// roundUp rounds n up to a multiple of align (a power of two).
func roundUp(n, align int64) int64 { return (n + align - 1) &^ (align - 1) }

// pwriteAll writes all of p at off on fd.
func pwriteAll(fd int, p []byte, off int64) error {
	for len(p) > 0 {
		n, err := unix.Pwrite(fd, p, off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		p, off = p[n:], off+int64(n)
	}
	return nil
}

// preadFull reads into p at off on fd: all of p, or fewer bytes where
// the file ends (a direct read is short only there).
func preadFull(fd int, p []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(fd, p, off)
		if !errors.Is(err, unix.EINTR) {
			return max(n, 0), err
		}
	}
}
