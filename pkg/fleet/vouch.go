package fleet

import (
	"context"
	"encoding/base64"
	"io"
	"strconv"
	"strings"

	"github.com/s3pd/s3pd/pkg/checksum"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// vouched reports whether the engine can check a peer's bytes of obj
// against something S3 gave (or, with TrustPeers, may take them with
// nothing to check), and what to hand it with the body. whole: the
// range is the whole object. What S3 gives, in the order looked for:
//
//   - a full-object CRC (CRC64NVME, CRC32C, CRC32): for a range, of
//     the algorithm its listing names (the engine sums ranges only
//     then); for the whole object, any the lookup gave;
//   - a checksum of part checksums ("...-N") of such an algorithm,
//     checked by the object's part layout;
//   - an MD5 ETag, or an ETag of parts ("HEX-N") by the part layout,
//     unless S3 keeps the object with SSE-KMS or SSE-C (the checksum
//     lookup's HEAD says, else one byte of it is asked of S3): that
//     ETag is no MD5 of the bytes.
//
// The engine makes the check whatever --verify says (Vouching), and
// fetches the object again from S3 when it could not.
func (s *Source) vouched(ctx context.Context, st *objState, obj *transfer.Object, whole bool) (handOver, bool) {
	sums, _ := s.sums(ctx, st, obj)
	hand := handOver{sums: sums}
	alg := crcAlgorithm(obj, sums, whole)
	_, layout := s.Source.(transfer.PartLayout)
	switch {
	case fullValue(alg, sums[alg]):
		return hand, true
	case compositeValue(alg, sums[alg]) && layout:
		return hand, true
	}
	_, _, multi := checksum.ParseMultipartETag(obj.ETag)
	if checksum.IsMD5ETag(obj.ETag) || multi && layout {
		enc, err := s.encrypted(ctx, st, obj)
		if err != nil {
			return handOver{}, false // this range from S3; the next asks again
		}
		if !enc {
			return hand, true
		}
		hand.encrypted = true
	}
	sh := s.sh
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.opts.TrustPeers {
		st.trusted = true
		return hand, true
	}
	st.s3only = true
	return handOver{}, false
}

// crcAlgorithm is the CRC the engine checks a peer's bytes of obj by:
// for a range, the algorithm its listing names; for the whole object,
// any the lookup gave (handed over with the body).
func crcAlgorithm(obj *transfer.Object, sums map[string]string, whole bool) string {
	alg := strings.ToUpper(obj.ChecksumAlgorithm)
	if alg == "" && len(obj.Checksums) > 0 {
		alg = pick(obj.Checksums)
	}
	if alg == "" && whole {
		alg = pick(sums)
	}
	return alg
}

// pick is the algorithm the engine computes of those in sums.
func pick(sums map[string]string) string {
	for _, a := range []string{"CRC64NVME", "CRC32C", "CRC32"} {
		if _, ok := sums[a]; ok {
			return a
		}
	}
	return ""
}

// crcSize is the bytes of a value of each CRC the engine computes.
var crcSize = map[string]int{"CRC64NVME": 8, "CRC32C": 4, "CRC32": 4}

// fullValue reports whether v is a full-object value of alg (not a
// checksum of part checksums, "...-N").
func fullValue(alg, v string) bool {
	raw, err := base64.StdEncoding.DecodeString(v)
	return crcSize[alg] > 0 && err == nil && len(raw) == crcSize[alg]
}

// compositeValue reports whether v is a checksum of part checksums of
// alg: a value of alg, "-", the part count.
func compositeValue(alg, v string) bool {
	i := strings.LastIndexByte(v, '-')
	if i < 0 {
		return false
	}
	n, err := strconv.Atoi(v[i+1:])
	return err == nil && n > 0 && fullValue(alg, v[:i])
}

// encrypted reports whether S3 keeps obj with SSE-KMS or SSE-C: what
// the checksum lookup's HEAD said, when it was made and said it
// (checksumsEncrypted); else one byte of it asked of the wrapped
// source, once per object, whose answer says (a listing does not).
func (s *Source) encrypted(ctx context.Context, st *objState, obj *transfer.Object) (bool, error) {
	s.sh.mu.Lock()
	look := st.look
	s.sh.mu.Unlock()
	if look != nil {
		select {
		case <-look.done:
			if look.told {
				return look.encrypted, nil
			}
		default:
		}
	}
	l, err := s.sh.once(ctx, &st.probe, func(l *lookup) {
		var b *transfer.Body
		if b, l.err = s.fromSource(ctx, obj, 0, 1); l.err != nil {
			return
		}
		defer b.Close()
		_, l.err = io.Copy(io.Discard, b)
		l.encrypted = b.Encrypted
	})
	if err != nil {
		return false, err
	}
	return l.encrypted, nil
}

// once runs do into the lookup at *slot, once for whoever asks
// meanwhile, and returns it when done. A lookup that failed is not
// kept: the range that asked may have been cancelled (a takeover), and
// the next must not inherit that.
func (sh *shared) once(ctx context.Context, slot **lookup, do func(*lookup)) (*lookup, error) {
	sh.mu.Lock()
	l := *slot
	first := l == nil
	if first {
		l = &lookup{done: make(chan struct{})}
		*slot = l
	}
	sh.mu.Unlock()
	if first {
		do(l)
		if l.err != nil {
			sh.mu.Lock()
			*slot = nil
			sh.mu.Unlock()
		}
		close(l.done)
	}
	select {
	case <-l.done:
		return l, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
