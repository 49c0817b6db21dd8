//go:build amd64 && !purego

package checksum

import (
	"encoding/binary"
	"hash/crc64"
	"math/rand/v2"
	"testing"
)

// TestUpdateNVMEMatchesReference checks the eight-way fold against
// hash/crc64 for lengths around every boundary it has (the 4 KiB start,
// whole 512-byte blocks, tails), at every alignment, and in pieces.
func TestUpdateNVMEMatchesReference(t *testing.T) {
	table := crc64.MakeTable(0x9a6c9329ac4bc9b5)
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 300<<10)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	native := foldWidth
	defer func() { foldWidth = native }()
	for _, w := range []int{512, 256, 0} {
		if w > native {
			continue // this CPU cannot run it
		}
		foldWidth = w
		checkLengths(t, table, buf)
	}
}

func checkLengths(t *testing.T, table *crc64.Table, buf []byte) {
	t.Helper()
	lengths := []int{0, 1, 511, 512, 4095, 4096, 4097, 4096 + 511, 4096 + 512, 8192, 64<<10 + 13, 128 << 10, 256<<10 + 511}
	for _, n := range lengths {
		for _, align := range []int{0, 1, 7, 8, 63} {
			p := buf[align : align+n]
			want := crc64.Update(0, table, p)
			if got := updateNVME(0, p); got != want {
				t.Fatalf("len %d align %d: %#x, want %#x", n, align, got, want)
			}
			// The same bytes in two pieces, with a non-zero start.
			cut := n / 3
			got := updateNVME(updateNVME(0, p[:cut]), p[cut:])
			if got != want {
				t.Fatalf("len %d align %d in pieces at %d: %#x, want %#x", n, align, cut, got, want)
			}
		}
	}
}

// TestReduceNVME checks the carry-less reduction of a 128-bit remainder
// against the CRC of its 16 bytes, byte at a time.
func TestReduceNVME(t *testing.T) {
	table := crc64.MakeTable(0x9a6c9329ac4bc9b5)
	rng := rand.New(rand.NewPCG(3, 4))
	cases := [][2]uint64{{0, 0}, {1, 0}, {0, 1}, {^uint64(0), ^uint64(0)}, {1 << 63, 1 << 63}}
	for range 10000 {
		cases = append(cases, [2]uint64{rng.Uint64(), rng.Uint64()})
	}
	for _, c := range cases {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], c[0])
		binary.LittleEndian.PutUint64(b[8:], c[1])
		// hash/crc64 takes and returns the inverted register.
		want := ^crc64.Update(^uint64(0), table, b[:])
		if got := reduceNVME(c[0], c[1]); got != want {
			t.Fatalf("reduceNVME(%#x, %#x) = %#x, want %#x", c[0], c[1], got, want)
		}
	}
}
