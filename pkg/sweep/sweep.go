// Package sweep runs one short, time-bounded measurement per setting of a
// small grid of part sizes and concurrency, picks the best setting, and
// writes it as a preset. It measures through a function it is given and
// knows nothing of S3 or of the command line.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// Cell is one setting of the grid.
type Cell struct {
	PartSize int64
	// Requests is the bound on requests in flight (max_concurrent_requests).
	Requests int
}

// Result is what one cell measured.
type Result struct {
	Cell
	Summary transfer.Summary
	Gibps   float64
	// Err is set when the cell could not be measured.
	Err error
}

// Grid is every combination of parts and requests, parts outermost.
func Grid(parts []int64, requests []int) []Cell {
	var out []Cell
	for _, p := range parts {
		for _, r := range requests {
			out = append(out, Cell{PartSize: p, Requests: r})
		}
	}
	return out
}

// Measure runs one cell for per from the start of its transfer (its
// end then is its normal end, not an error), or until ctx ends or the
// work does, and returns the engine's summary. The time is the
// measure's to keep, so that a cell's start-up (its clients, a bucket's
// region) is not counted against it.
type Measure func(ctx context.Context, c Cell, per time.Duration) (transfer.Summary, error)

// Run measures every cell for per each, in order, calling done after
// each; the sweep as a whole takes len(cells)*per plus the cells'
// start-up. The end of ctx stops the sweep.
func Run(ctx context.Context, cells []Cell, per time.Duration, measure Measure, done func(Result)) ([]Result, error) {
	var out []Result
	for _, c := range cells {
		sum, err := measure(ctx, c, per)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			err = nil // the cell's time was up
		}
		r := Result{Cell: c, Summary: sum, Err: err}
		if sum.Elapsed > 0 {
			r.Gibps = float64(sum.Bytes) * 8 / (1 << 30) / sum.Elapsed.Seconds()
		}
		out = append(out, r)
		if done != nil {
			done(r)
		}
	}
	return out, nil
}

// CloseEnough is the share of the best throughput within which a
// cheaper setting (fewer requests, then smaller parts: less memory, fewer
// connections) is preferred: closer than the noise of one short cell.
const CloseEnough = 0.05

// Best is the setting to keep: among the cells without an error within
// CloseEnough of the highest throughput, the one with the fewest requests
// in flight, then the smallest parts. ok is false when no cell moved data.
func Best(results []Result) (best Result, ok bool) {
	top := 0.0
	for _, r := range results {
		if r.Err == nil {
			top = max(top, r.Gibps)
		}
	}
	if top <= 0 {
		return Result{}, false
	}
	var near []Result
	for _, r := range results {
		if r.Err == nil && r.Gibps >= (1-CloseEnough)*top {
			near = append(near, r)
		}
	}
	slices.SortStableFunc(near, func(a, b Result) int {
		if a.Requests != b.Requests {
			return a.Requests - b.Requests
		}
		return int(a.PartSize - b.PartSize)
	})
	return near[0], true
}

// Fastest is the cell without an error that moved the most, which Best
// gives up for a cheaper one within CloseEnough of it. ok is false when
// no cell moved data.
func Fastest(results []Result) (fastest Result, ok bool) {
	for _, r := range results {
		if r.Err == nil && r.Gibps > fastest.Gibps {
			fastest, ok = r, true
		}
	}
	return fastest, ok
}

// Preset is the YAML of a preset that runs with best's setting; comment
// says where it came from (one line per entry).
func Preset(best Result, comment []string) []byte {
	var b strings.Builder
	for _, c := range comment {
		fmt.Fprintf(&b, "# %s\n", c)
	}
	size := config.FormatSize(best.PartSize)
	fmt.Fprintf(&b, "multipart_chunksize: %s\n", size)
	fmt.Fprintf(&b, "multipart_threshold: %s\n", size)
	fmt.Fprintf(&b, "max_concurrent_requests: %d\n", best.Requests)
	return []byte(b.String())
}
