package job

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Classes counts a run's objects by class, as warp's mixed report does
// (a benchmark's dataset by its groups, a bucket's objects by size): what
// each class moved, and the time to first byte of its requests, timed by
// a decorator of the lanes' sources. Its classes are fixed when it is
// made, so neither the observer nor the decorator takes a lock.
type Classes struct {
	rows  []classCount
	class func(transfer.Object) int
}

// classCount is one class's counts.
type classCount struct {
	name    string
	size    int64
	objects atomic.Int64
	bytes   atomic.Int64
	ttfb    transfer.LatencyRecorder
}

// Class names one class: its name and its objects' size (0: sizes vary).
type Class struct {
	Name string
	Size int64
}

// NewClasses counts by the classes given; class returns an object's
// index among them, -1 for none.
func NewClasses(classes []Class, class func(transfer.Object) int) *Classes {
	c := &Classes{rows: make([]classCount, len(classes)), class: class}
	for i, k := range classes {
		c.rows[i].name, c.rows[i].size = k.Name, k.Size
	}
	return c
}

// ClassRow is what one class moved over a run.
type ClassRow struct {
	Class
	// Objects transferred whole; Bytes moved, objects cut at the end
	// included.
	Objects, Bytes         int64
	TTFB50, TTFB90, TTFB99 time.Duration
}

// Rows are the classes that moved anything, in their order.
func (c *Classes) Rows() []ClassRow {
	if c == nil {
		return nil
	}
	var out []ClassRow
	for i := range c.rows {
		k := &c.rows[i]
		b, n := k.bytes.Load(), k.objects.Load()
		if b == 0 && n == 0 {
			continue
		}
		h := k.ttfb.Snapshot()
		out = append(out, ClassRow{Class: Class{k.name, k.size}, Objects: n, Bytes: b,
			TTFB50: h.Quantile(0.5), TTFB90: h.Quantile(0.9), TTFB99: h.Quantile(0.99)})
	}
	return out
}

// ObjectDone counts what each object moved, whole or cut at the end.
func (c *Classes) ObjectDone(r transfer.Result) {
	i := c.class(r.Object)
	if i < 0 || i >= len(c.rows) {
		return
	}
	c.rows[i].bytes.Add(r.Bytes)
	if r.Err == nil && r.Skipped == "" {
		c.rows[i].objects.Add(1)
	}
}

func (c *Classes) ObjectStarted(transfer.Object)          {}
func (c *Classes) Bytes(int64)                            {}
func (c *Classes) PartDone(transfer.Object, int64, int64) {}
func (c *Classes) Retry(transfer.Object, int64, error)    {}

// classSource times each request's first byte by its object's class:
// the time Open takes to return the response, less a new connection's
// dial and handshake, as the engine's own time to first byte.
type classSource struct {
	transfer.Source
	c *Classes
}

func (s classSource) Open(ctx context.Context, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	start := time.Now()
	b, err := s.Source.Open(ctx, obj, off, n)
	if err == nil {
		if i := s.c.class(*obj); i >= 0 && i < len(s.c.rows) {
			s.c.rows[i].ttfb.Add(time.Since(start) - b.Connect)
		}
	}
	return b, err
}

// Again reads a run's listing again until the run's context ends (a
// benchmark of a duration): Pass names each pass's objects (nil: the
// same keys again), and Mix reads a bounded listing as a steady mix of
// the hooks' Classes (Mixed) instead of in its order.
type Again struct {
	Pass func(pass int, o transfer.Object) transfer.Object
	Mix  bool
}
