// Package diskbench measures how fast a directory takes s3pd's write
// pattern: several pre-sized files, each written in parts by parallel
// writers with positioned writes (pwrite) of one buffer at a time, then
// made durable with fsync. It compares buffered writes with O_DIRECT and
// ftruncate with fallocate, so the landing path of a pull can be sized
// against the network.
package diskbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// Options shape one measurement. Zero values take the defaults noted.
type Options struct {
	// Files is the number of files written at once (default 4).
	Files int
	// FileSize is each file's size (default 256 MiB).
	FileSize int64
	// PartSize is the size of one part, as a range of a download
	// (default 8 MiB).
	PartSize int64
	// Writers is the number of parts written at once (default 16).
	Writers int
	// BufferSize is the size of one write, as the engine's buffer
	// (default 128 KiB; a multiple of 4 KiB for O_DIRECT).
	BufferSize int
}

func (o Options) withDefaults() Options {
	if o.Files <= 0 {
		o.Files = 4
	}
	if o.FileSize <= 0 {
		o.FileSize = 256 << 20
	}
	if o.PartSize <= 0 {
		o.PartSize = 8 << 20
	}
	if o.Writers <= 0 {
		o.Writers = 16
	}
	if o.BufferSize <= 0 {
		o.BufferSize = 128 << 10
	}
	return o
}

// Mode is one way of writing.
type Mode struct {
	// Direct opens the files with O_DIRECT (no page cache).
	Direct bool
	// Fallocate reserves each file's blocks before writing; without it
	// the file is sized with ftruncate (sparse), as s3pd does where
	// fallocate is not supported.
	Fallocate bool
}

func (m Mode) String() string {
	s := "buffered"
	if m.Direct {
		s = "O_DIRECT"
	}
	if m.Fallocate {
		return s + " + fallocate"
	}
	return s + " + ftruncate"
}

// Modes are the ways Run measures, in order.
var Modes = []Mode{{false, false}, {false, true}, {true, true}}

// Result is one mode's measurement.
type Result struct {
	Mode
	Bytes int64
	// Write is the time the parallel writes took; Sync the fsync that
	// followed. Elapsed is both: the time to durable data.
	Write, Sync, Elapsed time.Duration
	// Unsupported says why the file system refused the mode (O_DIRECT on
	// tmpfs, fallocate on some network file systems); nothing was
	// measured then.
	Unsupported string
}

// BytesPerSecond is the rate to durable data.
func (r Result) BytesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / r.Elapsed.Seconds()
}

// Run measures each mode in dir, one after the other, and removes its
// files. A mode the file system does not support is reported, not
// failed.
func Run(ctx context.Context, dir string, opts Options, modes []Mode) ([]Result, error) {
	opts = opts.withDefaults()
	if opts.BufferSize%4096 != 0 {
		return nil, fmt.Errorf("disk bench: buffer size %d is not a multiple of 4096", opts.BufferSize)
	}
	var out []Result
	for _, m := range modes {
		r, err := runMode(ctx, dir, opts, m)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// runMode writes opts.Files files in mode m.
func runMode(ctx context.Context, dir string, opts Options, m Mode) (Result, error) {
	res := Result{Mode: m}
	flags := os.O_RDWR | os.O_CREATE | os.O_EXCL
	if m.Direct {
		flags |= unix.O_DIRECT
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	for i := range opts.Files {
		name := filepath.Join(dir, fmt.Sprintf(".s3pd-disk-bench-%d-%d", os.Getpid(), i))
		f, err := os.OpenFile(name, flags, 0o600)
		if err != nil {
			if m.Direct && errors.Is(err, unix.EINVAL) {
				res.Unsupported = "the file system does not support O_DIRECT"
				return res, nil
			}
			return res, fmt.Errorf("disk bench: create %s: %w", name, err)
		}
		files = append(files, f)
		if m.Fallocate {
			if err := unix.Fallocate(int(f.Fd()), 0, 0, opts.FileSize); err != nil {
				if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
					res.Unsupported = "the file system does not support fallocate"
					return res, nil
				}
				return res, fmt.Errorf("disk bench: fallocate %s: %w", name, err)
			}
		} else if err := f.Truncate(opts.FileSize); err != nil {
			return res, fmt.Errorf("disk bench: size %s: %w", name, err)
		}
	}
	type part struct {
		f   *os.File
		off int64
	}
	parts := make(chan part)
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(parts)
		// Parts of all files interleave, as the ranges of objects in
		// flight do.
		for off := int64(0); off < opts.FileSize; off += opts.PartSize {
			for _, f := range files {
				select {
				case parts <- part{f, off}:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
		}
		return nil
	})
	for range opts.Writers {
		g.Go(func() error {
			buf := alignedBuffer(opts.BufferSize) // one per writer, for the whole run
			for p := range parts {
				end := min(p.off+opts.PartSize, opts.FileSize)
				for off := p.off; off < end; off += int64(len(buf)) {
					n := min(int64(len(buf)), end-off)
					if _, err := p.f.WriteAt(buf[:n], off); err != nil {
						return fmt.Errorf("disk bench: write %s at %d: %w", p.f.Name(), off, err)
					}
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	res.Write = time.Since(start)
	syncStart := time.Now()
	for _, f := range files {
		if err := f.Sync(); err != nil {
			return res, fmt.Errorf("disk bench: fsync %s: %w", f.Name(), err)
		}
	}
	res.Sync = time.Since(syncStart)
	res.Elapsed = time.Since(start)
	res.Bytes = int64(opts.Files) * opts.FileSize
	return res, nil
}

// alignedBuffer returns n bytes aligned to 4096, as O_DIRECT wants,
// filled with a pattern that does not compress.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+4096)
	off := 0
	if r := int(uintptrOf(b) % 4096); r != 0 {
		off = 4096 - r
	}
	b = b[off : off+n]
	x := uint64(0x9e3779b97f4a7c15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}
