//go:build amd64 && !purego

package checksum

import (
	"github.com/klauspost/cpuid/v2"

	"github.com/minio/crc64nvme"
	"golang.org/x/sys/cpu"
)

// foldWidth is the widest fold this CPU runs: 512 (AVX-512 with
// VPCLMULQDQ), 256 (AVX2 with VPCLMULQDQ, e.g. CPUs without AVX-512), or
// 0 (minio/crc64nvme's own code). The widest fold the CPU has is the
// fastest (BenchmarkUpdate compares them).
var foldWidth = func() int {
	switch {
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ:
		return 512
	case cpuid.CPU.Supports(cpuid.AVX2, cpuid.VPCLMULQDQ, cpuid.CLMUL):
		return 256
	}
	return 0
}()

// reduceNVME is the CRC register after the 16 bytes lo, hi (little
// endian) from a zero register: the CRC of the fold's remainder, by
// carry-less multiplication (three of them, no table: a table lookup per
// byte, 16 in a chain, cost a tenth of the fold in situ, its table cold
// after each 128 KiB of data). Implemented in nvme_amd64.s.
//
//go:noescape
func reduceNVME(lo, hi uint64) uint64

// foldNVME512 folds p (a non-zero multiple of 512 bytes) into a 128-bit
// remainder with eight 512-bit accumulators, starting from the CRC
// register crc (the inverted CRC value). Implemented in nvme_amd64.s.
//
//go:noescape
func foldNVME512(crc uint64, p []byte) (lo, hi uint64)

// foldNVME256 is foldNVME512 on 256-bit registers (AVX2 with VPCLMULQDQ):
// p must be a non-zero multiple of 256 bytes.
//
//go:noescape
func foldNVME256(crc uint64, p []byte) (lo, hi uint64)

// wideFrom is the length from which updateNVME takes the eight-way fold:
// below it the fold's fixed cost outweighs its speed.
const wideFrom = 4 << 10

// updateNVME extends the CRC-64/NVME crc with p. github.com/minio/crc64nvme
// folds 128 bytes per step with two accumulators, which bounds it by the
// carry-less multiplier's latency (about 50 GB/s here); eight accumulators
// over 512-byte steps keep the multiplier busy, which matters when the data
// arrives cold from a socket. The remainder of the fold is finished, with
// the bytes that follow the last whole 512-byte block, by crc64nvme.
func updateNVME(crc uint64, p []byte) uint64 {
	if foldWidth == 0 || len(p) < wideFrom {
		return crc64nvme.Update(crc, p)
	}
	var n int
	var lo, hi uint64
	if foldWidth == 512 {
		n = len(p) &^ 511
		lo, hi = foldNVME512(^crc, p[:n])
	} else {
		n = len(p) &^ 255
		lo, hi = foldNVME256(^crc, p[:n])
	}
	// The public CRC is the inverted register.
	return crc64nvme.Update(^reduceNVME(lo, hi), p[n:])
}
