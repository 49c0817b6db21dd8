package transfer_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/s3pd/s3pd/pkg/checksum"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestNoAllocationPerChunk: the per-chunk path, end to end (a read from
// the body, the checksum's update, the write or the stage's buffer, the
// counts), allocates nothing. Two runs through the engine differ only
// in how many chunks their ranges read: 16 ranges of 64 KiB (2 reads of
// 32 KiB each) and 16 ranges of 1 MiB (32 reads each). What a run,
// its ranges and its object allocate is the same in both, so the
// difference is what 480 more chunks cost: less than one allocation in
// ten chunks (a per-chunk allocation would add 480).
func TestNoAllocationPerChunk(t *testing.T) {
	const ranges, buffer = 16, 32 << 10
	for _, verify := range []transfer.Verify{transfer.VerifyAuto, transfer.VerifyOff} {
		for _, stage := range []bool{false, true} {
			name := fmt.Sprintf("verify=%s/stage=%v", map[transfer.Verify]string{transfer.VerifyAuto: "auto", transfer.VerifyOff: "off"}[verify], stage)
			perRun := func(part int) float64 {
				data := make([]byte, ranges*part)
				for i := range data {
					data[i] = byte(i * 7)
				}
				r := checksum.Start(checksum.CRC64NVME)
				r.Update(data)
				src := &benchSource{data: data, obj: transfer.Object{
					Key: "k", Name: "k", Size: int64(len(data)), ETag: `"e"`, ChecksumAlgorithm: "CRC64NVME",
					Checksums: map[string]string{"CRC64NVME": checksum.Encode(checksum.CRC64NVME, r.Sum())},
				}}
				opts := transfer.Options{PartSize: int64(part), BufferSize: buffer, Workers: 1, MaxRequests: 1, Verify: verify} // one range at a time: the fake stage lends one buffer
				return testing.AllocsPerRun(5, func() {
					e, err := transfer.New([]transfer.Lane{{Name: "l", Source: src}}, benchSink{stage: stage}, opts)
					if err != nil {
						t.Fatal(err)
					}
					s, err := e.Run(context.Background())
					if err != nil || s.Objects != 1 || s.Bytes != int64(len(data)) {
						t.Fatalf("%s: moved %d objects, %d bytes (%v), want 1, %d", name, s.Objects, s.Bytes, err, len(data))
					}
				})
			}
			few, many := perRun(64<<10), perRun(1<<20)
			chunks := ranges * ((1<<20)/buffer - (64<<10)/buffer)
			if extra := many - few; extra >= float64(chunks)/10 {
				t.Errorf("%s: %d more chunks cost %.0f more allocations (%.0f against %.0f a run), want none per chunk", name, chunks, extra, many, few)
			} else {
				t.Logf("%s: %.0f allocations a run with 2 chunks a range, %.0f with 32", name, few, many)
			}
		}
	}
}
