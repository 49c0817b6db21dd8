//go:build amd64 && !purego

package checksum

import (
	"encoding/binary"
	"hash/crc64"

	"github.com/minio/crc64nvme"
	"golang.org/x/sys/cpu"
)

// wideNVME reports whether foldNVME512 can run here: AVX-512 with
// VPCLMULQDQ, enabled by the operating system.
var wideNVME = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ

// nvmeTable finishes the fold's 16-byte remainder (hash/crc64 does not
// make its argument escape, so the remainder stays on the stack).
var nvmeTable = crc64.MakeTable(0x9a6c9329ac4bc9b5)

// foldNVME512 folds p (a non-zero multiple of 512 bytes) into a 128-bit
// remainder with eight 512-bit accumulators, starting from the CRC
// register crc (the inverted CRC value). Implemented in nvme_amd64.s.
//
//go:noescape
func foldNVME512(crc uint64, p []byte) (lo, hi uint64)

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
	if !wideNVME || len(p) < wideFrom {
		return crc64nvme.Update(crc, p)
	}
	n := len(p) &^ 511
	lo, hi := foldNVME512(^crc, p[:n])
	var rem [16]byte
	binary.LittleEndian.PutUint64(rem[:8], lo)
	binary.LittleEndian.PutUint64(rem[8:], hi)
	// The remainder's CRC from a zero register: Update inverts on the way
	// in and out, so a start value of all ones is a zero register.
	crc = crc64.Update(^uint64(0), nvmeTable, rem[:])
	return crc64nvme.Update(crc, p[n:])
}
