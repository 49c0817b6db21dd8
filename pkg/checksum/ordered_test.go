package checksum

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// Parts set in a random order, concurrently, combine to the CRC of the
// whole, and at no time are more parts held than have completed out of
// order.
func TestOrderedMatchesWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<20+123)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, partSize := range []int{1, 7, 4096, 100_000, len(data)} {
		o := NewOrdered(CRC64NVME, int64(len(data)))
		var offs []int
		for off := 0; off < len(data); off += partSize {
			offs = append(offs, off)
		}
		rng.Shuffle(len(offs), func(i, j int) { offs[i], offs[j] = offs[j], offs[i] })
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(offs); i += 4 {
					off := offs[i]
					r := Start(CRC64NVME)
					r.Update(data[off:min(off+partSize, len(data))])
					o.Set(int64(off), r)
				}
			}()
		}
		wg.Wait()
		got, err := o.Sum()
		if err != nil {
			t.Fatalf("part size %d: %v", partSize, err)
		}
		whole := Start(CRC64NVME)
		whole.Update(data)
		if got != whole.Sum() {
			t.Errorf("part size %d: sum %x, want %x", partSize, got, whole.Sum())
		}
	}
}

func TestOrderedRefusesGapsAndOverlaps(t *testing.T) {
	part := func(n int) Running { r := Start(CRC32C); r.Update(make([]byte, n)); return r }
	gap := NewOrdered(CRC32C, 30)
	gap.Set(0, part(10))
	gap.Set(20, part(10))
	if _, err := gap.Sum(); err == nil {
		t.Error("a gap: no error")
	}
	twice := NewOrdered(CRC32C, 20)
	twice.Set(0, part(10))
	twice.Set(0, part(10))
	twice.Set(10, part(10))
	if _, err := twice.Sum(); err == nil {
		t.Error("a part set twice: no error")
	}
	past := NewOrdered(CRC32C, 10)
	past.Set(0, part(11))
	if _, err := past.Sum(); err == nil {
		t.Error("a part past the end: no error")
	}
	empty := NewOrdered(CRC32C, 0)
	if got, err := empty.Sum(); err != nil || got != Start(CRC32C).Sum() {
		t.Errorf("empty: %x, %v", got, err)
	}
}
