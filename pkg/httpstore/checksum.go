package httpstore

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/crc32"
	"strings"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// digests are the algorithms ParseChecksum takes, by the names it takes
// them under (aria2 spells them "sha-256").
var digests = map[string]struct {
	name string
	new  func() hash.Hash
	size int
}{
	"sha256":  {"sha256", sha256.New, sha256.Size},
	"sha-256": {"sha256", sha256.New, sha256.Size},
	"sha512":  {"sha512", sha512.New, sha512.Size},
	"sha-512": {"sha512", sha512.New, sha512.Size},
	"sha1":    {"sha1", sha1.New, sha1.Size},
	"sha-1":   {"sha1", sha1.New, sha1.Size},
	"md5":     {"md5", md5.New, md5.Size},
	"crc32c":  {"crc32c", newCRC32C, crc32.Size},
}

func newCRC32C() hash.Hash { return crc32.New(crc32.MakeTable(crc32.Castagnoli)) }

// ParseChecksum parses a checksum given beside a URL, ALG:HEX (or
// ALG=HEX, as aria2 writes it): sha256, md5, crc32c (big-endian, as it is
// printed), sha1 or sha512. The engine checks the digest it returns
// against the whole object before the file is committed.
func ParseChecksum(s string) (*transfer.Digest, error) {
	i := strings.IndexAny(s, ":=")
	if i < 0 {
		return nil, fmt.Errorf("checksum %q: want ALG:HEX, such as sha256:<64 hex digits>", s)
	}
	alg, value := strings.ToLower(s[:i]), s[i+1:]
	d, ok := digests[alg]
	if !ok {
		return nil, fmt.Errorf("checksum %q: unknown algorithm %q (sha256, sha512, sha1, md5, crc32c)", s, alg)
	}
	sum, err := hex.DecodeString(value)
	if err != nil {
		return nil, fmt.Errorf("checksum %q: the value is not hex", s)
	}
	if len(sum) != d.size {
		return nil, fmt.Errorf("checksum %q: %s takes %d hex digits, not %d", s, d.name, 2*d.size, len(value))
	}
	return &transfer.Digest{Name: d.name, New: d.new, Sum: sum}, nil
}
