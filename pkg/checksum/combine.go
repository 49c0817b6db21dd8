package checksum

// How combining works. For the three CRCs here (reflected, with an initial
// value and a final xor that are both all ones), the CRC of A||B is
//
//	crc(A||B) = crc(A) * x^(8*len(B)) mod P  xor  crc(B)
//
// in GF(2)[x], the same identity zlib's crc32_combine uses. x^(8n) mod P is
// assembled from a table of x^(2^k) mod P by repeated squaring: one
// polynomial multiplication per non-zero hexadecimal digit of n (tables of
// x^(8j*16^d) mod P), each at most w shift-and-xor steps for a w-bit CRC,
// plus one to multiply crc(A). A combine of an arbitrary 64-bit length is at
// most 17 multiplications; a power-of-two part size costs one.

import "math/bits"

// kind is the compact form of a supported Algorithm that Running carries.
type kind uint8

const (
	kindNone kind = iota
	kindCRC64NVME
	kindCRC32C
	kindCRC32
)

// crcParams describes one reflected CRC: its width, polynomial, and the
// powers x^(2^k) mod P for k = 0..len(x2n)-1.
type crcParams struct {
	alg   Algorithm
	size  int    // bytes in a value
	top   uint64 // x^0 in the reflected representation: 1 << (width-1)
	poly  uint64 // the reflected polynomial
	mask  uint64 // the low width bits
	shift uint   // width - 1
	x2n   [67]uint64
	// x8n16[d][j] is x^(8 * j * 16^d) mod P, so x^(8n) is a product of at
	// most 16 entries, one per hexadecimal digit of n.
	x8n16 [16][16]uint64
}

// params holds the parameters of each kind, indexed by kind. Computed once
// at package initialisation (a few thousand shifts), never mutated after.
var params = [...]crcParams{
	kindNone:      {},
	kindCRC64NVME: makeParams(CRC64NVME, 64, 0x9a6c9329ac4bc9b5),
	kindCRC32C:    makeParams(CRC32C, 32, 0x82f63b78),
	kindCRC32:     makeParams(CRC32, 32, 0xedb88320),
}

// kindOf maps an Algorithm to its kind, kindNone if it is not supported.
func kindOf(a Algorithm) kind {
	switch a {
	case CRC64NVME:
		return kindCRC64NVME
	case CRC32C:
		return kindCRC32C
	case CRC32:
		return kindCRC32
	}
	return kindNone
}

// makeParams builds the parameters of a reflected CRC of the given width.
// x2n has 67 entries so that x^(8n) for any n < 2^64 needs no wrap-around:
// k runs from 3 to 66.
func makeParams(alg Algorithm, width uint, poly uint64) crcParams {
	p := crcParams{alg: alg, size: int(width / 8), top: 1 << (width - 1), shift: width - 1, poly: poly}
	p.mask = p.top<<1 - 1 // wraps to all ones for width 64
	x := p.top >> 1       // x^1
	for k := range p.x2n {
		p.x2n[k] = x
		x = p.mulmod(x, x)
	}
	for d := range p.x8n16 {
		p.x8n16[d][0] = p.top
		for j := 1; j < 16; j++ {
			p.x8n16[d][j] = p.mulmod(p.x8n16[d][j-1], p.x2n[3+4*d])
		}
	}
	return p
}

// mulmod returns a*b mod P, both operands in the reflected representation.
// It is branch-free inside the loop (a data-dependent branch mispredicts on
// half the bits) and stops when the remaining coefficients of a are zero.
func (p *crcParams) mulmod(a, b uint64) uint64 {
	var prod uint64
	for ; a != 0; a = a << 1 & p.mask {
		prod ^= b & -(a >> p.shift & 1) // the coefficient of the next power of x
		// b *= x: in reflected form a right shift, reducing by P when the
		// x^(width-1) coefficient falls off the low end.
		b = b>>1 ^ p.poly&-(b&1)
	}
	return prod
}

// x8nmod returns x^(8n) mod P for n >= 0, one multiplication per non-zero
// hexadecimal digit of n (at most 16).
func (p *crcParams) x8nmod(n uint64) uint64 {
	r := p.top // x^0
	for d := 0; n != 0; d++ {
		if n&15 != 0 {
			r = p.mulmod(p.x8n16[d][n&15], r)
		}
		n >>= 4
	}
	return r
}

// combine returns crc(A||B) given crc(A), crc(B) and len(B) in bytes.
func (p *crcParams) combine(crcA, crcB uint64, lenB uint64) uint64 {
	if lenB == 0 {
		return crcA ^ crcB
	}
	// A single set bit (power-of-two length, the usual part size) needs no
	// multiplication chain: the table entry is the answer.
	var shift uint64
	if bits.OnesCount64(lenB) == 1 {
		shift = p.x2n[3+bits.TrailingZeros64(lenB)]
	} else {
		shift = p.x8nmod(lenB)
	}
	return (p.mulmod(shift, crcA) ^ crcB) & p.mask
}

// Combine returns the CRC of A||B from crc(A), crc(B) and len(B), the length
// of B in bytes, for a supported algorithm (the generalisation of zlib's
// crc32_combine to each reflected CRC here). It costs O(log lenB)
// polynomial multiplications and never touches the data. A lenB <= 0 means B
// is empty, whose CRC is 0, so the result is crcA ^ crcB. Combine panics if
// alg is not supported.
func Combine(alg Algorithm, crcA, crcB uint64, lenB int64) uint64 {
	k := kindOf(alg)
	if k == kindNone {
		panic("checksum: Combine with unsupported algorithm " + string(alg))
	}
	if lenB < 0 {
		lenB = 0
	}
	return params[k].combine(crcA, crcB, uint64(lenB))
}
