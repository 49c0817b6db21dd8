package shard

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Hash identifies a multiset of objects whatever order they come in:
// the sum, modulo 2^128, of the entry hash of each object (the first 16
// bytes of the SHA-256 of its key and size). ETags are left out: a
// listing, an Inventory and a manifest with sizes name the same objects
// alike, and so split them alike. The hash of a union
// of parts is the sum of the parts' hashes, so a fleet proves that its
// shards together make one listing, each object once, by adding the
// shards' hashes: an object in two shards or in none changes the sum.
// The zero Hash is the empty set's.
type Hash struct{ hi, lo uint64 }

// entryHash is one object's Hash: SHA-256 over the uvarint length and
// bytes of its key and its size as a varint (-1 when the listing gives
// none). buf is scratch space, returned for reuse.
func entryHash(o transfer.Object, buf []byte) (Hash, []byte) {
	b := binary.AppendUvarint(buf[:0], uint64(len(o.Key)))
	b = append(b, o.Key...)
	b = binary.AppendVarint(b, o.Size)
	sum := sha256.Sum256(b)
	return Hash{binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:16])}, b
}

// Plus is the hash of the union of the sets h and o hash.
func (h Hash) Plus(o Hash) Hash {
	lo, carry := bits.Add64(h.lo, o.lo, 0)
	return Hash{h.hi + o.hi + carry, lo}
}

// less orders entry hashes.
func (h Hash) less(o Hash) bool { return h.hi < o.hi || h.hi == o.hi && h.lo < o.lo }

// String writes the 32 hex digits of the hash.
func (h Hash) String() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], h.hi)
	binary.BigEndian.PutUint64(b[8:], h.lo)
	return hex.EncodeToString(b[:])
}

// MarshalText writes the 32 hex digits.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText reads 32 hex digits.
func (h *Hash) UnmarshalText(t []byte) error {
	var b [16]byte
	if len(t) != 32 {
		return fmt.Errorf("set hash %q: want 32 hex digits", t)
	}
	if _, err := hex.Decode(b[:], t); err != nil {
		return fmt.Errorf("set hash %q: %w", t, err)
	}
	*h = Hash{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
	return nil
}
