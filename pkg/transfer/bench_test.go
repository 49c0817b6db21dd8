package transfer_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/s3pd/s3pd/pkg/checksum"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// benchSource serves one object from memory: each Open allocates its
// body and nothing else, so what a run allocates beyond that is the
// engine's.
type benchSource struct {
	obj  transfer.Object
	data []byte
}

func (s *benchSource) List(_ context.Context, emit func(transfer.Object) error) error {
	return emit(s.obj)
}

func (s *benchSource) Open(_ context.Context, o *transfer.Object, off, n int64) (*transfer.Body, error) {
	if n < 0 {
		off, n = 0, int64(len(s.data))
	}
	return &transfer.Body{ReadCloser: io.NopCloser(bytes.NewReader(s.data[off : off+n])), Off: off, Len: n, Size: int64(len(s.data)), ETag: s.obj.ETag}, nil
}

// benchSink's files drop what they are given (a stage, when stage is
// set, lends one buffer of its own).
type benchSink struct{ stage bool }

type benchFile struct{}

func (benchFile) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (benchFile) Commit() error                          { return nil }
func (benchFile) Abort() error                           { return nil }

type stagedFile struct {
	benchFile
	buf []byte
}

func (f *stagedFile) Stage(int64, int64) (transfer.Stage, error) { return (*benchStage)(f), nil }

type benchStage stagedFile

func (s *benchStage) Next() []byte    { return s.buf }
func (s *benchStage) Wrote(int) error { return nil }
func (s *benchStage) Close() error    { return nil }

func (s benchSink) Create(context.Context, transfer.Object) (transfer.File, error) {
	if s.stage {
		return &stagedFile{buf: make([]byte, 32<<10)}, nil
	}
	return benchFile{}, nil
}

// BenchmarkRanges runs the engine over one 16 MiB object in 1 MiB
// ranges read 32 KiB at a time (512 reads a run), with its CRC64NVME
// verified or not, into a file that takes WriteAt or lends a stage. Its
// allocs/op count what a run, its 16 ranges and its object cost: a
// per-read allocation would add 512.
func BenchmarkRanges(b *testing.B) {
	data := make([]byte, 16<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	r := checksum.Start(checksum.CRC64NVME)
	r.Update(data)
	sum := checksum.Encode(checksum.CRC64NVME, r.Sum())
	for _, verify := range []transfer.Verify{transfer.VerifyAuto, transfer.VerifyOff} {
		for _, stage := range []bool{false, true} {
			name := map[transfer.Verify]string{transfer.VerifyAuto: "verify=auto", transfer.VerifyOff: "verify=off"}[verify]
			name += map[bool]string{false: "/file=writeat", true: "/file=stage"}[stage]
			b.Run(name, func(b *testing.B) {
				src := &benchSource{data: data, obj: transfer.Object{
					Key: "k", Name: "k", Size: int64(len(data)), ETag: `"e"`,
					ChecksumAlgorithm: "CRC64NVME", Checksums: map[string]string{"CRC64NVME": sum},
				}}
				opts := transfer.Options{PartSize: 1 << 20, BufferSize: 32 << 10, Workers: 1, MaxRequests: 4, Verify: verify}
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					e, err := transfer.New([]transfer.Lane{{Name: "l", Source: src}}, benchSink{stage: stage}, opts)
					if err != nil {
						b.Fatal(err)
					}
					s, err := e.Run(context.Background())
					if err != nil || s.Objects != 1 || s.Bytes != int64(len(data)) {
						b.Fatalf("moved %d objects, %d bytes (%v), want 1, %d", s.Objects, s.Bytes, err, len(data))
					}
				}
			})
		}
	}
}
