package checksum

import (
	"crypto/md5"
	"fmt"
	"testing"
)

// BenchmarkUpdate measures Update throughput per algorithm for the buffer
// sizes a body reader hands over; MD5 is there for comparison (--verify full).
func BenchmarkUpdate(b *testing.B) {
	for _, size := range []int{32 << 10, 1 << 20} {
		p := randomBytes(21, size)
		for _, alg := range algorithms {
			b.Run(fmt.Sprintf("%s/%dKiB", alg, size>>10), func(b *testing.B) {
				r := Start(alg)
				b.SetBytes(int64(size))
				for b.Loop() {
					r.Update(p)
				}
			})
		}
		b.Run(fmt.Sprintf("MD5/%dKiB", size>>10), func(b *testing.B) {
			h := md5.New()
			b.SetBytes(int64(size))
			for b.Loop() {
				h.Write(p)
			}
		})
	}
}

// BenchmarkCombine measures one Combine for a power-of-two length (one
// table lookup and one multiplication) and for a length with many set bits.
func BenchmarkCombine(b *testing.B) {
	for _, alg := range algorithms {
		for _, n := range []int64{8 << 20, 1<<40 - 1} {
			b.Run(fmt.Sprintf("%s/len=%#x", alg, n), func(b *testing.B) {
				crc := uint64(0x0123456789abcdef)
				for b.Loop() {
					crc = Combine(alg, crc, 0x5555, n)
				}
			})
		}
	}
}

// BenchmarkPartsSum combines 10,000 parts (an 80 GiB object in 8 MiB parts)
// with an odd-sized tail.
func BenchmarkPartsSum(b *testing.B) {
	const parts, partSize = 10000, 8 << 20
	size := int64(parts-1)*partSize + 12345
	for _, alg := range algorithms {
		b.Run(string(alg), func(b *testing.B) {
			p := NewParts(alg, size, partSize)
			for i := range int64(parts) {
				off := i * partSize
				p.Set(off, Restore(alg, uint64(i)*0x9e3779b97f4a7c15, min(partSize, size-off)))
			}
			for b.Loop() {
				if _, err := p.Sum(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
