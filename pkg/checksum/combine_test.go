package checksum

import (
	"math/rand/v2"
	"testing"
)

func TestCombineRandomSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 200<<10)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for _, alg := range algorithms {
		for range 300 {
			p := buf[:rng.IntN(len(buf))]
			cut := rng.IntN(len(p) + 1)
			a, b := p[:cut], p[cut:]
			want := crcOf(alg, p)
			if got := Combine(alg, crcOf(alg, a), crcOf(alg, b), int64(len(b))); got != want {
				t.Fatalf("%s: Combine at %d of %d bytes: got %#x, want %#x", alg, cut, len(p), got, want)
			}
			ra, rb := Start(alg), Start(alg)
			ra.Update(a)
			rb.Update(b)
			if j := ra.Join(rb); j.Sum() != want || j.Len() != int64(len(p)) {
				t.Fatalf("%s: Join at %d of %d bytes: got %#x (%d bytes), want %#x", alg, cut, len(p), j.Sum(), j.Len(), want)
			}
		}
	}
}

// TestCombineManyPieces cuts data into many pieces at random points and
// folds them back together left to right, as Parts does.
func TestCombineManyPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	p := make([]byte, 3<<20+12345)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	for _, alg := range algorithms {
		want := crcOf(alg, p)
		var crc uint64
		for rest := p; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(300<<10))
			crc = Combine(alg, crc, crcOf(alg, rest[:n]), int64(n))
			rest = rest[n:]
		}
		if crc != want {
			t.Errorf("%s: folded pieces: got %#x, want %#x", alg, crc, want)
		}
	}
}

// TestCombineHugeLengths checks lengths far beyond any test buffer: the
// shift by x^(8(n+m)) must equal the shift by x^(8n) then x^(8m)
// (associativity of concatenation), and x^(8n) must match repeated
// multiplication by x^8 for small n.
func TestCombineHugeLengths(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, alg := range algorithms {
		cp := &params[kindOf(alg)]
		x8 := cp.x2n[3]
		pow := cp.top
		for n := range uint64(300) {
			if got := cp.x8nmod(n); got != pow {
				t.Fatalf("%s: x^(8*%d) mod P: got %#x, want %#x", alg, n, got, pow)
			}
			pow = cp.mulmod(pow, x8)
		}
		for range 200 {
			a, b, c := rng.Uint64()&cp.mask, rng.Uint64()&cp.mask, rng.Uint64()&cp.mask
			n := rng.Int64N(1 << 50)
			m := rng.Int64N(1 << 50)
			left := Combine(alg, Combine(alg, a, b, n), c, m)
			right := Combine(alg, a, Combine(alg, b, c, m), n+m)
			if left != right {
				t.Fatalf("%s: (a.b).c != a.(b.c) for lengths %d, %d: %#x vs %#x", alg, n, m, left, right)
			}
		}
		// The power-of-two shortcut agrees with the general chain.
		for k := range 60 {
			n := uint64(1) << k
			if got, want := cp.combine(0x1234, 0, n), cp.mulmod(cp.x8nmod(n), 0x1234); got != want {
				t.Fatalf("%s: power-of-two shortcut at 2^%d: got %#x, want %#x", alg, k, got, want)
			}
		}
	}
}

func TestCombineEmpty(t *testing.T) {
	for _, alg := range algorithms {
		a := crcOf(alg, []byte("123456789"))
		if got := Combine(alg, a, 0, 0); got != a {
			t.Errorf("%s: Combine with empty B: got %#x, want %#x", alg, got, a)
		}
		if got := Combine(alg, 0, a, 9); got != a {
			t.Errorf("%s: Combine with empty A: got %#x, want %#x", alg, got, a)
		}
	}
}

// FuzzCombine checks Combine and Join against a sequential CRC for every
// algorithm and a cut anywhere in the data. Seeds are in testdata/fuzz.
func FuzzCombine(f *testing.F) {
	f.Add([]byte("123456789"), uint(4))
	f.Add([]byte{}, uint(0))
	f.Fuzz(func(t *testing.T, data []byte, cut uint) {
		c := int(cut % uint(len(data)+1))
		a, b := data[:c], data[c:]
		for _, alg := range algorithms {
			want := refCRC(alg, data)
			if got := crcOf(alg, data); got != want {
				t.Fatalf("%s over %d bytes: got %#x, want reference %#x", alg, len(data), got, want)
			}
			if got := Combine(alg, crcOf(alg, a), crcOf(alg, b), int64(len(b))); got != want {
				t.Fatalf("%s: Combine at %d of %d: got %#x, want %#x", alg, c, len(data), got, want)
			}
			ra, rb := Start(alg), Start(alg)
			ra.Update(a)
			rb.Update(b)
			if got := ra.Join(rb).Sum(); got != want {
				t.Fatalf("%s: Join at %d of %d: got %#x, want %#x", alg, c, len(data), got, want)
			}
		}
	})
}
