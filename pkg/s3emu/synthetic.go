package s3emu

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"io"
	"strconv"
	"sync"

	"github.com/minio/crc64nvme"
)

// Synthetic content. Byte off of object key is
//
//	block[(off + seed) mod 1 MiB]
//
// where block is a fixed 1 MiB pseudo-random block and seed is the FNV-1a
// 64-bit hash of the key (mixed with the object's version, see Faults),
// except that every 512-byte-aligned offset s starts with an 8-byte stamp,
// little-endian uint64(s) XOR seed. The stamps make every 512-byte piece of
// every object unique, so bytes landed at the wrong offset or taken from
// another object are caught by a byte comparison; the block makes the rest
// incompressible. Generating it costs one memcpy plus a store per 512 bytes.
const (
	blockSize  = 1 << 20
	stampEvery = 512
	stampSize  = 8
)

// md5Limit is the largest synthetic object with a real MD5 ETag; larger ones
// get multipart-style ETags, as if uploaded in etagPartSize parts.
const (
	md5Limit     = 64 << 20
	etagPartSize = 8 << 20
	// cacheMin is the smallest object whose digests are cached: smaller ones
	// are cheaper to hash again than to remember.
	cacheMin = 4 << 10
)

var (
	blockOnce sync.Once
	block     []byte
)

func theBlock() []byte {
	blockOnce.Do(func() {
		block = make([]byte, blockSize)
		x := uint64(0x9e3779b97f4a7c15)
		for i := 0; i < blockSize; i += 8 {
			// splitmix64
			x += 0x9e3779b97f4a7c15
			z := x
			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
			z = (z ^ (z >> 27)) * 0x94d049bb133111eb
			binary.LittleEndian.PutUint64(block[i:], z^(z>>31))
		}
	})
	return block
}

// seedOf returns the content seed of version v of object key.
func seedOf(key string, v int) uint64 {
	// FNV-1a, 64 bits (hash/fnv's), without a hash.Hash to allocate.
	s := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		s ^= uint64(key[i])
		s *= 1099511628211
	}
	if v != 0 {
		s ^= uint64(v) * 0x9e3779b97f4a7c15
	}
	return s
}

// SyntheticBytes fills p with the content of synthetic object key at offset
// off, as the synthetic backend serves it (for an object never replaced by a
// fault). It is O(len(p)) and needs no state, so a test can check any byte
// of any object.
func SyntheticBytes(key string, off int64, p []byte) {
	fillSynthetic(seedOf(key, 0), off, p)
}

func fillSynthetic(seed uint64, off int64, p []byte) {
	b := theBlock()
	pos := (uint64(off) + seed) & (blockSize - 1)
	for n := 0; n < len(p); {
		c := copy(p[n:], b[pos:])
		n += c
		pos = 0
	}
	end := off + int64(len(p))
	s := off &^ (stampEvery - 1)
	for ; s < end; s += stampEvery {
		v := uint64(s) ^ seed
		if s >= off && s+stampSize <= end {
			binary.LittleEndian.PutUint64(p[s-off:], v)
			continue
		}
		for j := int64(0); j < stampSize; j++ {
			if a := s + j; a >= off && a < end {
				p[a-off] = byte(v >> (8 * j))
			}
		}
	}
}

// syntheticReader reads a byte range of a synthetic object.
type syntheticReader struct {
	seed     uint64
	off, end int64
}

func (r *syntheticReader) Read(p []byte) (int, error) {
	if r.off >= r.end {
		return 0, io.EOF
	}
	if int64(len(p)) > r.end-r.off {
		p = p[:r.end-r.off]
	}
	fillSynthetic(r.seed, r.off, p)
	r.off += int64(len(p))
	return len(p), nil
}

func (r *syntheticReader) Close() error { return nil }

// digests are an object's MD5 (only up to md5Limit) and CRC64NVME.
type digests struct {
	md5 [16]byte
	crc uint64
}

// syntheticDigests computes and caches the digests of synthetic objects.
type syntheticDigests struct {
	cache sync.Map // seed -> *digestEntry
}

type digestEntry struct {
	md5Once, crcOnce sync.Once
	d                digests
}

// get returns the digests of an object of size bytes and seed, computing
// the MD5 only when withMD5 (and size <= md5Limit).
func (sd *syntheticDigests) get(seed uint64, size int64, withMD5 bool) digests {
	withMD5 = withMD5 && size <= md5Limit
	if size < cacheMin {
		return computeDigests(seed, size, withMD5)
	}
	v, ok := sd.cache.Load(seed)
	if !ok {
		v, _ = sd.cache.LoadOrStore(seed, &digestEntry{})
	}
	e := v.(*digestEntry)
	if withMD5 {
		// MD5 and CRC are computed in one pass.
		e.md5Once.Do(func() {
			d := computeDigests(seed, size, true)
			e.d.md5 = d.md5
			e.crcOnce.Do(func() { e.d.crc = d.crc })
		})
	}
	e.crcOnce.Do(func() { e.d.crc = computeDigests(seed, size, false).crc })
	return e.d
}

func computeDigests(seed uint64, size int64, withMD5 bool) digests {
	var small [cacheMin]byte
	buf := small[:]
	if size > cacheMin {
		b := getBuf()
		defer putBuf(b)
		buf = *b
	}
	h := md5.New()
	var crc uint64
	for off := int64(0); off < size; {
		n := min(int64(len(buf)), size-off)
		p := buf[:n]
		fillSynthetic(seed, off, p)
		crc = crc64nvme.Update(crc, p)
		if withMD5 {
			h.Write(p)
		}
		off += n
	}
	var d digests
	d.crc = crc
	if withMD5 {
		h.Sum(d.md5[:0])
	}
	return d
}

// syntheticETag returns the quoted ETag of a synthetic object: its MD5 up
// to md5Limit, else "<md5 of key, version and size>-<parts>", the shape of
// an ETag of an object uploaded in etagPartSize parts.
func (sd *syntheticDigests) etag(key string, v int, seed uint64, size int64) string {
	if size < cacheMin {
		// A listing asks for the ETag of every object: a small one's MD5
		// is cheaper to compute alone, without its CRC or a heap buffer.
		var buf [cacheMin]byte
		p := buf[:size]
		fillSynthetic(seed, 0, p)
		return quotedHex(md5.Sum(p))
	}
	if size <= md5Limit {
		return quotedHex(sd.get(seed, size, true).md5)
	}
	sum := md5.Sum([]byte(key + "\x00" + strconv.Itoa(v) + "\x00" + strconv.FormatInt(size, 10)))
	parts := (size + etagPartSize - 1) / etagPartSize
	return `"` + hex.EncodeToString(sum[:]) + "-" + strconv.FormatInt(parts, 10) + `"`
}

// quotedHex is sum as a quoted ETag, built with one allocation.
func quotedHex(sum [16]byte) string {
	var b [34]byte
	b[0], b[33] = '"', '"'
	hex.Encode(b[1:33], sum[:])
	return string(b[:])
}

// bufSize is the size of the pooled buffers bodies are copied through.
const bufSize = 256 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

func getBuf() *[]byte  { return bufPool.Get().(*[]byte) }
func putBuf(b *[]byte) { bufPool.Put(b) }
