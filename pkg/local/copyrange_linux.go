package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// CopySink is the sink of a local-to-local copy. It adds to Sink what a
// copy between files needs: each file takes whole parts (transfer
// PartWriter), moved by the kernel with copy_file_range where the pair of
// filesystems allows it and with pread/pwrite through pooled buffers
// otherwise, and keeps the source file's permission bits.
//
// Skipping files already identical at the destination (size and mtime)
// is Sink's Check; its Overwrite option turns it off.
type CopySink struct {
	*Sink
	// noKernel is set once copy_file_range is refused for this pair of
	// filesystems, so later parts go straight to pread/pwrite.
	noKernel atomic.Bool
	bufs     sync.Pool
}

// copyBuffer is the size of the pooled buffers of the pread/pwrite path.
const copyBuffer = 1 << 20

// copyChunk is the most one copy_file_range call is asked to move: large
// enough to amortise the call, small enough to report progress often.
const copyChunk = 16 << 20

// NewCopySink wraps a sink for local-to-local copies.
func NewCopySink(s *Sink) *CopySink {
	// The kernel moves a local copy's bytes (copy_file_range): direct
	// I/O is for downloads.
	s.direct, s.directStatus = nil, DirectStatus{State: DirectStateOff}
	c := &CopySink{Sink: s}
	c.bufs.New = func() any { b := make([]byte, copyBuffer); return &b }
	return c
}

// Create implements transfer.Sink. obj.Key is the source file's path; its
// permission bits are given to the new file.
func (c *CopySink) Create(ctx context.Context, obj transfer.Object) (transfer.File, error) {
	tf, err := c.Sink.Create(ctx, obj)
	if err != nil {
		return nil, err
	}
	f := tf.(*file)
	// transfer.Object carries no mode: read it from the source. It is
	// applied to the open file, so a read-only mode does not stop writes.
	if st, serr := os.Stat(obj.Key); serr == nil {
		if err := f.File.Chmod(st.Mode() & (os.ModePerm | os.ModeSticky)); err != nil { // never setuid or setgid
			f.Abort()
			return nil, transfer.Permanent(fmt.Errorf("chmod %s: %w", f.rel, unwrapPath(err)))
		}
	}
	return &copyFile{file: f, sink: c, kernel: make(chan struct{}, 1)}, nil
}

// copyFile is a destination file that takes whole parts.
type copyFile struct {
	*file
	sink *CopySink
	// kernel admits one copy_file_range into the file at a time. Every
	// file system here takes the inode's lock for a write into a file
	// (tmpfs, ext4, xfs and btrfs for buffered writes, xfs and btrfs for
	// a reflink), so parts copied at once into one file do not run at
	// once: they spin on that lock in the kernel, which on tmpfs doubles
	// the CPU of a large file's copy. Parts waiting here sleep instead;
	// different files still copy in parallel.
	kernel chan struct{}
}

// WritePart implements transfer.PartWriter: it writes bytes [off, off+n)
// of the object from body. A body over a local file (FileBody) is moved
// in the kernel; any other body is streamed through a pooled buffer.
func (f *copyFile) WritePart(ctx context.Context, off, n int64, body *transfer.Body, progress func(int64)) (int64, error) {
	fb, ok := body.ReadCloser.(*FileBody)
	if !ok || body.Off != off {
		return f.stream(ctx, off, n, body, progress)
	}
	src, soff := fb.File()
	return f.sparse(ctx, src, soff, off, n, progress)
}

// sparse copies bytes [soff, soff+n) of src to the file at doff, data
// segment by data segment (SEEK_DATA, SEEK_HOLE): holes are not written,
// so a sparse source stays sparse where the file systems allow. Holes
// count as moved for progress.
//
// A file with a block for every byte has no holes to look for: it is
// copied as one segment, as cp decides. The search is not free: on tmpfs
// SEEK_HOLE walks the page cache from the offset to the next hole, the
// end of a dense file, so a search per part of a large file costs time
// in proportion to the file times its parts.
func (f *copyFile) sparse(ctx context.Context, src *os.File, soff, doff, n int64, progress func(int64)) (int64, error) {
	fd := int(src.Fd())
	end := soff + n
	holes := !dense(fd)
	var done int64
	for pos := soff; pos < end; {
		data, hole := pos, end
		if holes {
			data, hole = segment(fd, pos, end)
		}
		if data > pos {
			progress(data - pos)
			done += data - pos
		}
		if hole > data {
			k, err := f.copyData(ctx, src, data, doff+(data-soff), hole-data, progress)
			done += k
			if err != nil {
				return done, err
			}
		}
		pos = hole
	}
	if !holes {
		return done, nil
	}
	// A hole "to the end" of a file that shrank meanwhile is no hole.
	if st, err := src.Stat(); err != nil || st.Size() < end {
		return done, transfer.Permanent(fmt.Errorf("%s ended before %d: %w", src.Name(), end, transfer.ErrModified))
	}
	// A file written in one part was not sized first: a trailing hole
	// must still count in its size.
	if st, err := f.File.Stat(); err == nil && st.Size() < doff+n {
		if err := f.File.Truncate(doff + n); err != nil {
			return done, transfer.Permanent(fmt.Errorf("size %s: %w", f.rel, unwrapPath(err)))
		}
	}
	return done, nil
}

// dense reports whether the file at fd has a block for every byte (so no
// holes), false if it cannot tell.
func dense(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	return st.Blocks*512 >= st.Size
}

// segment returns the first data segment [data, hole) of the file at fd
// at or after pos, both at most end; data is end when only a hole is
// left. A file system without SEEK_DATA is all data.
func segment(fd int, pos, end int64) (data, hole int64) {
	data, err := unix.Seek(fd, pos, unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) {
		data = end // a hole to the end of the file
	} else if err != nil {
		data = pos // no SEEK_DATA here: all data
	}
	data = min(data, end)
	hole = end
	if data < end {
		if h, err := unix.Seek(fd, data, unix.SEEK_HOLE); err == nil {
			hole = min(h, end)
		}
	}
	return data, hole
}

// copyData copies n bytes of data from src at soff to the file at doff:
// in the kernel while it accepts, else through a buffer.
func (f *copyFile) copyData(ctx context.Context, src *os.File, soff, doff, n int64, progress func(int64)) (int64, error) {
	var done int64
	if !f.sink.noKernel.Load() {
		select {
		case f.kernel <- struct{}{}:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		k, err := kernelCopy(ctx, src, soff, f.File, doff, n, progress)
		<-f.kernel
		done += k
		switch {
		case err == nil:
			return done, nil
		case errors.Is(err, errNoKernelCopy):
			f.sink.noKernel.Store(true)
		default:
			return done, err
		}
	}
	k, err := f.pcopy(ctx, src, soff+done, doff+done, n-done, progress)
	return done + k, err
}

// errNoKernelCopy reports that copy_file_range cannot serve this pair of
// files; the copy falls back to pread/pwrite.
var errNoKernelCopy = errors.New("copy_file_range not supported")

// kernelCopy moves n bytes from src at soff to dst at doff with
// copy_file_range, in chunks, calling progress after each.
func kernelCopy(ctx context.Context, src *os.File, soff int64, dst *os.File, doff, n int64, progress func(int64)) (int64, error) {
	sfd, dfd := int(src.Fd()), int(dst.Fd())
	var done int64
	for done < n {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		k, err := unix.CopyFileRange(sfd, &soff, dfd, &doff, int(min(n-done, copyChunk)), 0)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EXDEV), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS),
			errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EPERM) && done == 0:
			return done, errNoKernelCopy
		case err != nil:
			return done, transfer.Permanent(fmt.Errorf("copy_file_range %s at %d: %w", src.Name(), soff, err))
		case k == 0:
			return done, transfer.Permanent(fmt.Errorf("%s ended at %d: %w", src.Name(), soff, transfer.ErrModified))
		}
		done += int64(k)
		progress(int64(k))
	}
	return done, nil
}

// pcopy moves n bytes from src at soff to the file at doff with pread and
// pwrite through a pooled buffer.
func (f *copyFile) pcopy(ctx context.Context, src *os.File, soff, doff, n int64, progress func(int64)) (int64, error) {
	bp := f.sink.bufs.Get().(*[]byte)
	defer f.sink.bufs.Put(bp)
	buf := *bp
	var done int64
	for done < n {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		want := min(int64(len(buf)), n-done)
		k, err := src.ReadAt(buf[:want], soff+done)
		if k > 0 {
			if _, werr := f.File.WriteAt(buf[:k], doff+done); werr != nil {
				return done, transfer.Permanent(fmt.Errorf("write %s at %d: %w", f.rel, doff+done, unwrapPath(werr)))
			}
			done += int64(k)
			progress(int64(k))
		}
		if err != nil && int64(k) < want {
			if errors.Is(err, io.EOF) {
				return done, transfer.Permanent(fmt.Errorf("%s ended at %d: %w", src.Name(), soff+done, transfer.ErrModified))
			}
			return done, fmt.Errorf("read %s at %d: %w", src.Name(), soff+done, unwrapPath(err))
		}
	}
	return done, nil
}

// stream copies a body that is not a local file through a pooled buffer.
func (f *copyFile) stream(ctx context.Context, off, n int64, body *transfer.Body, progress func(int64)) (int64, error) {
	bp := f.sink.bufs.Get().(*[]byte)
	defer f.sink.bufs.Put(bp)
	buf := *bp
	if skip := off - body.Off; skip > 0 {
		if _, err := io.CopyN(io.Discard, body, skip); err != nil {
			return 0, fmt.Errorf("skip to range start: %w", err)
		}
	}
	var done int64
	for done < n {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		k, err := io.ReadFull(body, buf[:min(int64(len(buf)), n-done)])
		if k > 0 {
			if _, werr := f.File.WriteAt(buf[:k], off+done); werr != nil {
				return done, transfer.Permanent(fmt.Errorf("write %s at %d: %w", f.rel, off+done, unwrapPath(werr)))
			}
			done += int64(k)
			progress(int64(k))
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return done, &transfer.ShortBodyError{Got: done, Want: n}
			}
			return done, err
		}
	}
	return done, nil
}
