package checksum

import (
	"errors"
	"fmt"
)

// Verdict is the outcome of comparing a computed CRC with the value S3 sent.
type Verdict int

const (
	// Unverified means the sent value cannot be checked against a CRC of
	// the data: it is composite, unreadable, or of an unsupported
	// algorithm. It is recorded, never treated as a failure.
	Unverified Verdict = iota
	// Match means the sent value equals the computed CRC.
	Match
	// Mismatch means the sent value is a full-object CRC that differs from
	// the computed one: the data is corrupt or not the object S3 described.
	Mismatch
)

// String returns "unverified", "match" or "mismatch".
func (v Verdict) String() string {
	switch v {
	case Match:
		return "match"
	case Mismatch:
		return "mismatch"
	}
	return "unverified"
}

// ErrComposite is wrapped by Compare's error for a composite value ("-N"),
// a checksum of part checksums rather than of the object's bytes.
var ErrComposite = errors.New("composite checksum of parts")

// Compare checks got, the CRC computed over the whole object, against sent,
// the value of the object's x-amz-checksum-<alg> header. It returns Match
// with a nil error, Mismatch with an error that names both values, or
// Unverified with an error saying why (wrapping ErrComposite for a composite
// value). Only Mismatch may fail a download.
func Compare(alg Algorithm, sent string, got uint64) (Verdict, error) {
	if !alg.Supported() {
		return Unverified, fmt.Errorf("compare %s checksum: unsupported algorithm", alg)
	}
	want, composite, err := Decode(alg, sent)
	switch {
	case composite:
		return Unverified, fmt.Errorf("compare %s checksum %q: %w", alg, sent, ErrComposite)
	case err != nil:
		return Unverified, err
	case want != got:
		return Mismatch, fmt.Errorf("%s checksum mismatch: object has %s, data has %s", alg, sent, Encode(alg, got))
	}
	return Match, nil
}
