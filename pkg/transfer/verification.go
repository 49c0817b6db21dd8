package transfer

import (
	"slices"
	"strings"
)

// Reasons an object's bytes could not be checked (Verification.Unverified).
const (
	// UnverifiedNoChecksum: the object declares no checksum s3pd can check.
	UnverifiedNoChecksum = "no-checksum"
	// UnverifiedMD5Only: the object's only checksum is an MD5 ETag, which
	// --verify full checks.
	UnverifiedMD5Only = "md5-only"
	// UnverifiedComposite: the checksum is a checksum of part checksums
	// (a multipart upload without a full-object checksum).
	UnverifiedComposite = "composite"
	// UnverifiedLookupFailed: the request for the object's checksum failed.
	UnverifiedLookupFailed = "lookup-failed"
	// UnverifiedEncrypted: the ETag of an SSE-KMS or SSE-C object is not
	// its MD5.
	UnverifiedEncrypted = "encrypted"
	// UnverifiedUnreadable: the destination cannot be read back for MD5.
	UnverifiedUnreadable = "unreadable"
	// UnverifiedUnsupported: the checksum is of an unsupported algorithm
	// or malformed.
	UnverifiedUnsupported = "unsupported"
	// UnverifiedEmpty: an empty object has nothing to check.
	UnverifiedEmpty = "empty"
	// UnverifiedPartsOnly: the destination checked each part's checksum
	// as it arrived (its answers echoed them) and its size matched, but it
	// keeps no checksum of the whole object to compare with.
	UnverifiedPartsOnly = "parts-only"
	// UnverifiedNoPartLayout: the object's only check is its ETag of
	// parts, and the server does not say how the object was cut.
	UnverifiedNoPartLayout = "no-part-layout"
	// UnverifiedDigestOnly: the object's only checksum is a digest its
	// source offered (Digest.Offered), which --verify full checks.
	UnverifiedDigestOnly = "digest-only"
)

// Verification says how one object's bytes were checked.
type Verification struct {
	// Off: verification was turned off.
	Off bool
	// Checksums are the algorithms whose values matched the bytes, in the
	// order checked: "crc64nvme", "crc32c", "crc32", "md5", or the name
	// of the object's Digest ("sha256").
	Checksums []string
	// Unverified is the reason (one of the Unverified* constants) a check
	// the object offers could not be made, "" when none was missed.
	Unverified string
	// Detail says the same in words, for people.
	Detail string
}

// Verified reports whether at least one checksum matched the bytes.
func (v Verification) Verified() bool { return len(v.Checksums) > 0 }

// Status is "off", "verified" or "unverified".
func (v Verification) Status() string {
	switch {
	case v.Off:
		return "off"
	case v.Verified():
		return "verified"
	}
	return "unverified"
}

// String is the verification in words: "crc64nvme", "unverified: ...".
func (v Verification) String() string {
	if v.Off {
		return "off"
	}
	s := strings.Join(v.Checksums, ", ")
	if v.Unverified != "" {
		if s != "" {
			s += ", "
		}
		s += "unverified " + v.Unverified + ": " + v.Detail
	}
	return s
}

// unverified records a check that could not be made; the first reason wins.
func (v *Verification) unverified(reason, detail string) {
	if v.Unverified == "" {
		v.Unverified, v.Detail = reason, detail
	}
}

// landed is v once the destination checked what it stored (d, from a
// Lander): the object is verified when the destination's checksum of
// what it stored matched the bytes written, and otherwise unverified
// for the destination's reason, whatever the read matched.
func (v Verification) landed(d Verification) Verification {
	if v.Off {
		return v
	}
	if d.Verified() {
		for _, a := range d.Checksums {
			if !slices.Contains(v.Checksums, a) {
				v.Checksums = append(v.Checksums, a)
			}
		}
		v.Unverified, v.Detail = "", ""
		return v
	}
	out := Verification{Unverified: d.Unverified, Detail: d.Detail}
	if v.Verified() {
		out.Detail += "; the bytes read matched the source's " + strings.Join(v.Checksums, ", ")
	}
	return out
}
