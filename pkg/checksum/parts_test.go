package checksum

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// randomBytes returns n reproducible pseudo-random bytes.
func randomBytes(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	return p
}

// setAll computes each part's CRC from data and sets them concurrently, in
// shuffled order, one goroutine per part.
func setAll(t *testing.T, p *Parts, alg Algorithm, data []byte, offsets []int64) {
	t.Helper()
	order := rand.Perm(len(offsets))
	var wg sync.WaitGroup
	for _, i := range order {
		end := int64(len(data))
		if i+1 < len(offsets) {
			end = offsets[i+1]
		}
		wg.Go(func() {
			r := Start(alg)
			chunk := data[offsets[i]:end]
			for len(chunk) > 0 { // stream in 32 KiB reads, as a body arrives
				n := min(len(chunk), 32<<10)
				r.Update(chunk[:n])
				chunk = chunk[n:]
			}
			p.Set(offsets[i], r)
		})
	}
	wg.Wait()
}

// evenOffsets returns the starts of parts of partSize bytes over size bytes.
func evenOffsets(size, partSize int64) []int64 {
	var offs []int64
	for off := int64(0); off < size; off += partSize {
		offs = append(offs, off)
	}
	return offs
}

func TestPartsUniform(t *testing.T) {
	data := randomBytes(11, 1<<20+77)
	size := int64(len(data))
	for _, alg := range algorithms {
		for _, partSize := range []int64{64 << 10, 1 << 20, 100_003, size, 2 * size} {
			p := NewParts(alg, size, partSize)
			if p.Algorithm() != alg {
				t.Fatalf("Parts.Algorithm: got %q, want %q", p.Algorithm(), alg)
			}
			setAll(t, p, alg, data, evenOffsets(size, min(partSize, size)))
			got, err := p.Sum()
			if want := crcOf(alg, data); err != nil || got != want {
				t.Errorf("%s part size %d: got %#x, %v, want %#x", alg, partSize, got, err, want)
			}
		}
	}
}

func TestPartsAt(t *testing.T) {
	data := randomBytes(12, 700_000)
	size := int64(len(data))
	// A short first part, then even parts, then a short tail.
	offsets := []int64{0, 1234}
	for off := int64(1234 + 65536); off < size; off += 65536 {
		offsets = append(offsets, off)
	}
	for _, alg := range algorithms {
		p, err := NewPartsAt(alg, offsets, size)
		if err != nil {
			t.Fatal(err)
		}
		setAll(t, p, alg, data, offsets)
		got, err := p.Sum()
		if want := crcOf(alg, data); err != nil || got != want {
			t.Errorf("%s: got %#x, %v, want %#x", alg, got, err, want)
		}
	}
}

func TestPartsEmptyObject(t *testing.T) {
	p := NewParts(CRC64NVME, 0, 8<<20)
	got, err := p.Sum()
	if err != nil || Encode(CRC64NVME, got) != "AAAAAAAAAAA=" {
		t.Errorf("empty object: got %#x, %v, want 0 (AAAAAAAAAAA=)", got, err)
	}
	pa, err := NewPartsAt(CRC32C, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := pa.Sum(); err != nil || got != 0 {
		t.Errorf("empty object, NewPartsAt: got %#x, %v, want 0, nil", got, err)
	}
}

// TestPartsResetOnRetry checks that a part Set again (a retry from scratch)
// replaces the earlier value, and that Restore round-trips a saved part.
func TestPartsResetOnRetry(t *testing.T) {
	data := randomBytes(13, 1000)
	p := NewParts(CRC32C, 1000, 600)
	bad := Start(CRC32C)
	bad.Update(make([]byte, 600))
	p.Set(0, bad)
	p.Set(0, Restore(CRC32C, crcOf(CRC32C, data[:600]), 600))
	p.Set(600, Restore(CRC32C, crcOf(CRC32C, data[600:]), 400))
	if got, err := p.Sum(); err != nil || got != crcOf(CRC32C, data) {
		t.Errorf("got %#x, %v, want %#x", got, err, crcOf(CRC32C, data))
	}
}

func TestPartsErrors(t *testing.T) {
	part := func(alg Algorithm, n int) Running {
		r := Start(alg)
		r.Update(make([]byte, n))
		return r
	}
	tests := []struct {
		name    string
		setup   func(p *Parts)
		wantErr string
	}{
		{"missing part", func(p *Parts) { p.Set(0, part(CRC32, 100)) }, "offset 100 (100 bytes) missing"},
		{"short part", func(p *Parts) {
			p.Set(0, part(CRC32, 100))
			p.Set(100, part(CRC32, 99))
			p.Set(200, part(CRC32, 50))
		}, "offset 100 has 99 bytes, want 100"},
		{"long tail", func(p *Parts) {
			p.Set(0, part(CRC32, 100))
			p.Set(100, part(CRC32, 100))
			p.Set(200, part(CRC32, 100))
		}, "offset 200 has 100 bytes, want 50"},
		{"not a boundary", func(p *Parts) { p.Set(50, part(CRC32, 100)) }, "offset 50, which is not the start"},
		{"beyond the end", func(p *Parts) { p.Set(250, part(CRC32, 1)) }, "offset 250"},
		{"negative offset", func(p *Parts) { p.Set(-100, part(CRC32, 1)) }, "offset -100"},
		{"other algorithm", func(p *Parts) { p.Set(0, part(CRC32C, 100)) }, `"CRC32C" CRC, want CRC32`},
		{"zero Running", func(p *Parts) { p.Set(0, Running{}) }, `"" CRC, want CRC32`},
	}
	for _, tt := range tests {
		p := NewParts(CRC32, 250, 100)
		tt.setup(p)
		_, err := p.Sum()
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: got error %v, want one containing %q", tt.name, err, tt.wantErr)
		}
	}
	if _, err := NewParts(CRC32, -1, 100).Sum(); err == nil {
		t.Error("negative size: got no error from Sum")
	}
}

func TestNewPartsAtRejects(t *testing.T) {
	tests := []struct {
		name    string
		offsets []int64
		size    int64
	}{
		{"no parts", nil, 10},
		{"not from zero", []int64{1, 5}, 10},
		{"descending", []int64{0, 6, 5}, 10},
		{"duplicate", []int64{0, 5, 5}, 10},
		{"at size", []int64{0, 10}, 10},
		{"parts of empty object", []int64{0}, 0},
		{"negative size", nil, -1},
	}
	for _, tt := range tests {
		if _, err := NewPartsAt(CRC32, tt.offsets, tt.size); err == nil {
			t.Errorf("%s: NewPartsAt(%v, %d): got no error", tt.name, tt.offsets, tt.size)
		}
	}
}

func TestPartsSetDoesNotAllocate(t *testing.T) {
	p := NewParts(CRC64NVME, 1<<30, 8<<20)
	r := Restore(CRC64NVME, 1, 8<<20)
	if n := testing.AllocsPerRun(100, func() { p.Set(16<<20, r) }); n != 0 {
		t.Errorf("Set: got %v allocations per call, want 0", n)
	}
}
