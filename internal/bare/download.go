package bare

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/s3pd/s3pd/pkg/checksum"
)

// part is one request: bytes [off, off+n) of object obj (n < 0: the whole
// object without Range).
type part struct {
	obj    int
	off, n int64
}

// plan splits objects into parts, in order, as s3pd's engine does: one
// GET without Range below the threshold, ranges of PartSize otherwise.
func (c *Client) plan(objs []Object) []part {
	var parts []part
	for i, o := range objs {
		if o.Size < c.opts.Threshold {
			if o.Size > 0 {
				parts = append(parts, part{obj: i, n: -1})
			}
			continue
		}
		for off := int64(0); off < o.Size; off += c.opts.PartSize {
			parts = append(parts, part{obj: i, off: off, n: min(c.opts.PartSize, o.Size-off)})
		}
	}
	return parts
}

// run sends every part with Concurrency goroutines, each owning one copy
// buffer, and hands each open body to land, with the part's running sum
// when Options.Sum is set (nil otherwise). It returns the bytes landed.
func (c *Client) run(ctx context.Context, objs []Object, land func(p part, body io.Reader, buf []byte, sum *checksum.Running) (int64, error)) (int64, error) {
	parts := c.plan(objs)
	urls := make([]string, len(objs))
	for i, o := range objs {
		urls[i] = c.objectURL(o.Key)
	}
	var next atomic.Int64
	var total atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range c.opts.Concurrency {
		g.Go(func() error {
			buf := make([]byte, c.opts.BufferSize)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(parts) || gctx.Err() != nil {
					return gctx.Err()
				}
				p := parts[i]
				body, err := c.get(gctx, urls[p.obj], &objs[p.obj], p.off, p.n)
				if err != nil {
					return err
				}
				var sum *checksum.Running
				if c.opts.Sum != nil {
					s := checksum.Start(checksum.CRC64NVME)
					sum = &s
				}
				got, err := land(p, body, buf, sum)
				body.Close()
				total.Add(got)
				if err != nil {
					return fmt.Errorf("get %s at %d: %w", objs[p.obj].Key, p.off, err)
				}
				if sum != nil {
					c.opts.Sum(p.obj, p.off, *sum)
				}
			}
		})
	}
	err := g.Wait()
	return total.Load(), err
}

// Discard fetches objs and drops the bytes, like `s3pd get --benchmark`.
func (c *Client) Discard(ctx context.Context, objs []Object) (int64, error) {
	return c.run(ctx, objs, func(p part, body io.Reader, buf []byte, sum *checksum.Running) (int64, error) {
		var got int64
		for {
			k, err := body.Read(buf)
			if sum != nil {
				sum.Update(buf[:k])
			}
			got += int64(k)
			if err == io.EOF {
				return got, checkLen(p, &objs[p.obj], got)
			}
			if err != nil {
				return got, err
			}
		}
	})
}

// file is one destination, opened and sized by the first part to reach
// it and closed by the last.
type file struct {
	once sync.Once
	f    *os.File
	err  error
	left atomic.Int64
}

// Download fetches objs into dir, each at dir/<key without prefix>: the
// first part of an object to arrive creates and sizes its file, every
// part writes its body at its offset, the last one closes the file. No
// temporary names, no sync: the least any client must do to land bytes.
func (c *Client) Download(ctx context.Context, dir, prefix string, objs []Object) (int64, error) {
	files := make([]file, len(objs))
	parts := c.plan(objs)
	for _, p := range parts {
		files[p.obj].left.Add(1)
	}
	for i, o := range objs {
		if o.Size == 0 {
			if err := create(filepath.Join(dir, strings.TrimPrefix(o.Key, prefix)), &files[i], 0); err != nil {
				return 0, err
			}
			files[i].f.Close()
		}
	}
	n, err := c.run(ctx, objs, func(p part, body io.Reader, buf []byte, sum *checksum.Running) (int64, error) {
		o, fl := &objs[p.obj], &files[p.obj]
		fl.once.Do(func() { fl.err = create(filepath.Join(dir, strings.TrimPrefix(o.Key, prefix)), fl, o.Size) })
		if fl.err != nil {
			return 0, fl.err
		}
		var got int64
		for {
			k, err := io.ReadFull(body, buf)
			if k > 0 {
				if _, werr := fl.f.WriteAt(buf[:k], p.off+got); werr != nil {
					return got, werr
				}
				if sum != nil {
					sum.Update(buf[:k])
				}
				got += int64(k)
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				return got, err
			}
		}
		if err := checkLen(p, o, got); err != nil {
			return got, err
		}
		if fl.left.Add(-1) == 0 {
			return got, fl.f.Close()
		}
		return got, nil
	})
	if err != nil {
		for i := range files {
			if f := files[i].f; f != nil && files[i].left.Load() > 0 {
				f.Close()
			}
		}
	}
	return n, err
}

// create opens path (making its directory) and sizes it.
func create(path string, fl *file, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if os.IsNotExist(err) {
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		}
	}
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	fl.f = f
	return nil
}

// checkLen reports a body shorter than its part.
func checkLen(p part, o *Object, got int64) error {
	want := p.n
	if want < 0 {
		want = o.Size
	}
	if got != want {
		return fmt.Errorf("body of %d bytes, want %d", got, want)
	}
	return nil
}
