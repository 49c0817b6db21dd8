package cmd

import (
	"strings"

	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/report"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// datasetClasses are the classes of the emulator's dataset: one per
// group, named after it (model, shards, small by default).
func datasetClasses(ds s3emu.Dataset) *job.Classes {
	classes := make([]job.Class, len(ds.Groups))
	byName := map[string]int{}
	for i, g := range ds.Groups {
		classes[i] = job.Class{Name: g.Name, Size: g.Size}
		byName[g.Name] = i
	}
	return job.NewClasses(classes, func(o transfer.Object) int {
		slash := strings.LastIndexByte(o.Key, '/')
		if slash < 0 {
			return -1
		}
		if i, ok := byName[o.Key[:slash]]; ok {
			return i
		}
		return -1
	})
}

// sizeBands bound the classes of a bucket's objects: small below 1 MiB,
// medium below 64 MiB, large from there.
var sizeBands = []struct {
	name  string
	below int64
}{{"small (< 1 MiB)", 1 << 20}, {"medium (1-64 MiB)", 64 << 20}, {"large (>= 64 MiB)", 1 << 62}}

// sizeClasses are the classes of a bucket's objects, by size.
func sizeClasses() *job.Classes {
	classes := make([]job.Class, len(sizeBands))
	for i, b := range sizeBands {
		classes[i].Name = b.name
	}
	return job.NewClasses(classes, func(o transfer.Object) int {
		for i, b := range sizeBands {
			if o.Size < b.below {
				return i
			}
		}
		return len(sizeBands) - 1
	})
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

// classTable is the classes that moved bytes, with their rates over
// secs.
func classTable(c *job.Classes, secs float64) []classRow {
	var out []classRow
	for _, r := range c.Rows() {
		out = append(out, classRow{Name: r.Name, SizeBytes: r.Size, Objects: r.Objects, Bytes: r.Bytes,
			BytesPerSecond: perSecond(r.Bytes, secs), ObjectsPerSecond: perSecond(r.Objects, secs),
			TTFB50ms: ms(r.TTFB50), TTFB90ms: ms(r.TTFB90), TTFB99ms: ms(r.TTFB99)})
	}
	return out
}

// reportClasses are the classes' rows as the report reads them.
func reportClasses(c *job.Classes) []report.Class {
	var out []report.Class
	for _, r := range c.Rows() {
		out = append(out, report.Class{Name: r.Name, Size: r.Size, Objects: r.Objects, Bytes: r.Bytes,
			TTFB50: r.TTFB50, TTFB90: r.TTFB90, TTFB99: r.TTFB99})
	}
	return out
}
