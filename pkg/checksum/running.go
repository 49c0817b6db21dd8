package checksum

import (
	"hash/crc32"
	"sync"
)

// CastagnoliTable returns hash/crc32's Castagnoli table; passing this
// pointer to crc32.Update selects the SSE4.2 / ARM64 CRC32C instructions.
// It is made on first use: building it (and hash/crc32's tables behind
// it) takes 0.3-0.4 ms, which a start that never sums a CRC32C should not
// pay. Every package of s3pd but the standalone emulator takes it from
// here.
var CastagnoliTable = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// Running is the running CRC of one contiguous byte range. It is a small
// value (24 bytes) that a worker keeps on its stack or in its part state;
// Update never allocates. The zero value is not usable: make one with Start,
// or with Restore for a range whose CRC was saved earlier.
type Running struct {
	crc uint64
	n   int64
	k   kind
}

// Start returns the Running CRC of an empty range for alg. It panics if alg
// is not supported; check with Algorithm.Supported or ParseAlgorithm first.
func Start(alg Algorithm) Running {
	k := kindOf(alg)
	if k == kindNone {
		panic("checksum: Start with unsupported algorithm " + string(alg))
	}
	return Running{k: k}
}

// Restore returns a Running for a range of n bytes whose CRC is sum, for
// example one read back from a resume journal, so that it can be handed to
// Parts.Set or extended with Update. It panics if alg is not supported.
func Restore(alg Algorithm, sum uint64, n int64) Running {
	r := Start(alg)
	r.crc, r.n = sum&params[r.k].mask, n
	return r
}

// Update adds p, the bytes that follow the range so far, to the CRC. It is
// the hot path: no allocation, and hardware-accelerated for all three
// algorithms on amd64 and arm64 (github.com/minio/crc64nvme for CRC64NVME,
// hash/crc32 for CRC32C and CRC32). Update on a zero Running panics.
func (r *Running) Update(p []byte) {
	switch r.k {
	case kindCRC64NVME:
		r.crc = updateNVME(r.crc, p)
	case kindCRC32C:
		r.crc = uint64(crc32.Update(uint32(r.crc), CastagnoliTable(), p))
	case kindCRC32:
		r.crc = uint64(crc32.Update(uint32(r.crc), crc32.IEEETable, p))
	default:
		panic("checksum: Update on a Running not made by Start")
	}
	r.n += int64(len(p))
}

// Write adds p to the CRC like Update and always returns len(p), nil, so a
// *Running can sit in an io.MultiWriter or io.TeeReader.
func (r *Running) Write(p []byte) (int, error) {
	r.Update(p)
	return len(p), nil
}

// Sum returns the CRC of the bytes added so far (0 for none), in the low 32
// bits for CRC32C and CRC32.
func (r Running) Sum() uint64 { return r.crc }

// Len returns the number of bytes added so far (plus the length given to
// Restore).
func (r Running) Len() int64 { return r.n }

// Algorithm returns the algorithm r computes, "" for the zero Running.
func (r Running) Algorithm() Algorithm { return params[r.k].alg }

// Join returns the Running of r's range followed directly by next's, as if
// next's bytes had been passed to r.Update. Both must use the same
// algorithm; Join panics otherwise.
func (r Running) Join(next Running) Running {
	if r.k != next.k || r.k == kindNone {
		panic("checksum: Join of " + string(r.Algorithm()) + " with " + string(next.Algorithm()))
	}
	return Running{
		crc: params[r.k].combine(r.crc, next.crc, uint64(next.n)),
		n:   r.n + next.n,
		k:   r.k,
	}
}
