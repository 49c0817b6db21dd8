package sweep

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

func TestRunMeasuresEachCellAndPicksTheCheapestOfTheBest(t *testing.T) {
	cells := Grid([]int64{8 << 20, 16 << 20}, []int{16, 64, 256})
	if len(cells) != 6 || cells[1] != (Cell{8 << 20, 64}) {
		t.Fatalf("grid %v, want 6 cells, parts outermost", cells)
	}
	// Throughput grows with requests up to 64, then stays flat; 16 MiB
	// parts are a little faster, within noise.
	rate := map[Cell]int64{
		{8 << 20, 16}: 100, {8 << 20, 64}: 390, {8 << 20, 256}: 400,
		{16 << 20, 16}: 110, {16 << 20, 64}: 395, {16 << 20, 256}: 401,
	}
	const per = 20 * time.Millisecond
	measure := func(ctx context.Context, c Cell, d time.Duration) (transfer.Summary, error) {
		if d != per {
			t.Errorf("cell %+v measured for %s, want %s", c, d, per)
		}
		return transfer.Summary{Bytes: rate[c] << 20, Elapsed: time.Second}, nil
	}
	var seen int
	res, err := Run(context.Background(), cells, per, measure, func(Result) { seen++ })
	if err != nil || len(res) != 6 || seen != 6 {
		t.Fatalf("Run: %d results, %d reported, %v", len(res), seen, err)
	}
	best, ok := Best(res)
	if !ok || best.Cell != (Cell{8 << 20, 64}) {
		t.Fatalf("best %+v, want 8 MiB parts and 64 requests (within 5%% of the top, fewest requests, smallest parts)", best.Cell)
	}
	y := string(Preset(best, []string{"from a test"}))
	for _, want := range []string{"# from a test\n", "multipart_chunksize: 8MiB\n", "max_concurrent_requests: 64\n"} {
		if !strings.Contains(y, want) {
			t.Errorf("preset lacks %q:\n%s", want, y)
		}
	}
}

func TestFastestIsTheTopCleanCell(t *testing.T) {
	res := []Result{
		{Cell: Cell{1, 1}, Gibps: 9, Err: errors.New("boom")},
		{Cell: Cell{2, 2}, Gibps: 8},
		{Cell: Cell{3, 3}, Gibps: 7.9},
	}
	if f, ok := Fastest(res); !ok || f.Cell != (Cell{2, 2}) {
		t.Fatalf("fastest %+v, want the top clean cell", f.Cell)
	}
	if best, _ := Best(res); best.Cell != (Cell{2, 2}) {
		// 7.9 is within 5% of 8 but has more requests: not cheaper.
		t.Fatalf("best %+v, want 2/2", best.Cell)
	}
	if _, ok := Fastest(res[:1]); ok {
		t.Fatal("a fastest among failed cells")
	}
}

func TestBestSkipsFailedCells(t *testing.T) {
	res := []Result{
		{Cell: Cell{1, 1}, Gibps: 9, Err: errors.New("boom")},
		{Cell: Cell{2, 2}, Gibps: 8, Err: errors.New("1 object failed")},
		{Cell: Cell{3, 3}, Gibps: 5},
	}
	if best, ok := Best(res); !ok || best.Cell != (Cell{3, 3}) {
		t.Fatalf("best %+v, want the only clean cell", best.Cell)
	}
	if _, ok := Best(res[:2]); ok {
		t.Fatal("a best among failed cells")
	}
}

func TestRunStopsWhenInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	measure := func(cctx context.Context, c Cell, _ time.Duration) (transfer.Summary, error) {
		cancel()
		return transfer.Summary{}, cctx.Err()
	}
	res, err := Run(ctx, Grid([]int64{1, 2}, []int{1}), time.Second, measure, nil)
	if !errors.Is(err, context.Canceled) || len(res) != 0 {
		t.Fatalf("Run after interruption: %d results, %v; want none and context.Canceled", len(res), err)
	}
}
