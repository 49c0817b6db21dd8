package cmd

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// classTally counts a bench's objects by class, as warp's mixed report
// does: the emulator's dataset by its groups (model, shards, small), a
// bucket's objects by size. It observes the objects' outcomes and times
// each request's first byte as a decorator of the lanes' sources; its
// classes are fixed when it is made, so neither path takes a lock.
type classTally struct {
	rows  []classCount
	class func(transfer.Object) int // index into rows, -1 for none
}

// classCount is one class's counts.
type classCount struct {
	name    string
	size    int64 // its objects' size (0: sizes vary)
	objects atomic.Int64
	bytes   atomic.Int64
	ttfb    transfer.LatencyRecorder
}

// datasetClasses are the classes of the emulator's dataset: one per
// group, named after it.
func datasetClasses(ds s3emu.Dataset) *classTally {
	t := &classTally{rows: make([]classCount, len(ds.Groups))}
	byName := map[string]int{}
	for i, g := range ds.Groups {
		t.rows[i].name, t.rows[i].size = g.Name, g.Size
		byName[g.Name] = i
	}
	t.class = func(o transfer.Object) int {
		slash := strings.LastIndexByte(o.Key, '/')
		if slash < 0 {
			return -1
		}
		if i, ok := byName[o.Key[:slash]]; ok {
			return i
		}
		return -1
	}
	return t
}

// sizeBands bound the classes of a bucket's objects: small below 1 MiB,
// medium below 64 MiB, large from there.
var sizeBands = []struct {
	name  string
	below int64
}{{"small (< 1 MiB)", 1 << 20}, {"medium (1-64 MiB)", 64 << 20}, {"large (>= 64 MiB)", 1 << 62}}

// sizeClasses are the classes of a bucket's objects, by size.
func sizeClasses() *classTally {
	t := &classTally{rows: make([]classCount, len(sizeBands))}
	for i, b := range sizeBands {
		t.rows[i].name = b.name
	}
	t.class = func(o transfer.Object) int {
		for i, b := range sizeBands {
			if o.Size < b.below {
				return i
			}
		}
		return len(sizeBands) - 1
	}
	return t
}

// ObjectDone counts what each object moved, whole or cut at the end.
func (t *classTally) ObjectDone(r transfer.Result) {
	i := t.class(r.Object)
	if i < 0 {
		return
	}
	t.rows[i].bytes.Add(r.Bytes)
	if r.Err == nil && r.Skipped == "" {
		t.rows[i].objects.Add(1)
	}
}

func (t *classTally) ObjectStarted(transfer.Object)          {}
func (t *classTally) Bytes(int64)                            {}
func (t *classTally) PartDone(transfer.Object, int64, int64) {}
func (t *classTally) Retry(transfer.Object, int64, error)    {}

// source decorates a lane's source with the classes' clock.
func (t *classTally) source(s transfer.Source) transfer.Source { return classSource{s, t} }

// classSource times each request's first byte, by the object's class:
// the time Open takes to return the response, less a new connection's
// dial and handshake, as the engine's own time to first byte.
type classSource struct {
	transfer.Source
	t *classTally
}

func (s classSource) Open(ctx context.Context, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	start := time.Now()
	b, err := s.Source.Open(ctx, obj, off, n)
	if err == nil {
		if i := s.t.class(*obj); i >= 0 {
			s.t.rows[i].ttfb.Add(time.Since(start) - b.Connect)
		}
	}
	return b, err
}

// classRow is one class's line of the summary (--json "classes").
type classRow struct {
	Name             string  `json:"name"`
	SizeBytes        int64   `json:"size_bytes,omitempty"`
	Objects          int64   `json:"objects"`
	Bytes            int64   `json:"bytes"`
	BytesPerSecond   float64 `json:"bytes_per_second"`
	ObjectsPerSecond float64 `json:"objects_per_second"`
	TTFB50ms         float64 `json:"ttfb_p50_ms"`
	TTFB90ms         float64 `json:"ttfb_p90_ms"`
	TTFB99ms         float64 `json:"ttfb_p99_ms"`
}

// table is the classes that moved bytes, with their rates over secs.
func (t *classTally) table(secs float64) []classRow {
	if t == nil {
		return nil
	}
	var out []classRow
	for i := range t.rows {
		c := &t.rows[i]
		b, n := c.bytes.Load(), c.objects.Load()
		if b == 0 && n == 0 {
			continue
		}
		h := c.ttfb.Snapshot()
		out = append(out, classRow{Name: c.name, SizeBytes: c.size, Objects: n, Bytes: b,
			BytesPerSecond: perSecond(b, secs), ObjectsPerSecond: perSecond(n, secs),
			TTFB50ms: ms(h.Quantile(0.5)), TTFB90ms: ms(h.Quantile(0.9)), TTFB99ms: ms(h.Quantile(0.99))})
	}
	return out
}
