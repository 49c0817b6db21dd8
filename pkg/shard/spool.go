package shard

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// spool keeps a listing on disk between the pass that sizes it and the
// pass that emits one shard of it, so a listing of any length runs in
// fixed memory and both passes see the same objects in the same order.
// The file is unlinked as soon as it is created. A record is its head
// (the object's entry hash, its key's fingerprint, its size) and the
// rest of the object behind its length, so that a pass reads in full
// only the objects it keeps.
type spool struct {
	f         *os.File
	w         *bufio.Writer
	r         *bufio.Reader
	buf, rest []byte
	pending   int // bytes of the record under the read head not yet read
}

// spoolBuffer is the spool's write and read buffer: large enough that
// its system calls cost little beside the records' coding.
const spoolBuffer = 256 << 10

func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, ".s3pd-shard-*")
	if err != nil {
		return nil, fmt.Errorf("spool the listing: %w", err)
	}
	os.Remove(f.Name())
	return &spool{f: f, w: bufio.NewWriterSize(f, spoolBuffer)}, nil
}

func (s *spool) Close() error { return s.f.Close() }

// head is the start of a spooled record.
type head struct {
	h    Hash   // the entry hash
	fp   uint64 // the key's fingerprint (repeats.fingerprint)
	size int64
}

// put appends one object, its entry hash and its key's fingerprint. The
// name is stored as a suffix length when it is the tail of the key, as
// it is for a prefix listing.
func (s *spool) put(o transfer.Object, h Hash, fp uint64) error {
	r := appendString(s.rest[:0], o.Key)
	if strings.HasSuffix(o.Key, o.Name) {
		r = binary.AppendUvarint(r, uint64(len(o.Name))<<1)
	} else {
		r = binary.AppendUvarint(r, uint64(len(o.Name))<<1|1)
		r = append(r, o.Name...)
	}
	r = appendString(r, o.ETag)
	r = appendString(r, o.VersionID)
	r = appendString(r, o.ChecksumAlgorithm)
	r = appendString(r, o.StorageClass)
	var mt int64
	if !o.ModTime.IsZero() {
		mt = o.ModTime.UnixNano()
	}
	r = binary.AppendVarint(r, mt)
	r = binary.AppendUvarint(r, uint64(len(o.Checksums)))
	for alg, v := range o.Checksums {
		r = appendString(r, alg)
		r = appendString(r, v)
	}
	b := binary.BigEndian.AppendUint64(s.buf[:0], h.hi)
	b = binary.BigEndian.AppendUint64(b, h.lo)
	b = binary.BigEndian.AppendUint64(b, fp)
	b = binary.AppendVarint(b, o.Size)
	b = binary.AppendUvarint(b, uint64(len(r)))
	s.buf, s.rest = b, r
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	_, err := s.w.Write(r)
	return err
}

// rewind ends writing, if it has not ended, and starts reading from the
// first object, again on a second call.
func (s *spool) rewind() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("spool the listing: %w", err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("spool the listing: %w", err)
	}
	if s.r == nil {
		s.r = bufio.NewReaderSize(s.f, spoolBuffer)
	} else {
		s.r.Reset(s.f)
	}
	s.pending = 0
	return nil
}

// headLen is a head's length at the most.
const headLen = 24 + 2*binary.MaxVarintLen64

// head reads the head of the next object, skipping what is left of the
// one before; io.EOF after the last. Then object reads the rest of it.
func (s *spool) head() (head, error) {
	if _, err := s.r.Discard(s.pending); err != nil {
		return head{}, corrupt(err)
	}
	s.pending = 0
	b, err := s.r.Peek(headLen)
	switch {
	case len(b) == 0 && errors.Is(err, io.EOF):
		return head{}, io.EOF // a clean end
	case len(b) < 24:
		return head{}, corrupt(cmp.Or(err, io.ErrUnexpectedEOF))
	}
	e := head{h: Hash{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:16])}, fp: binary.BigEndian.Uint64(b[16:24])}
	var m int
	e.size, m = binary.Varint(b[24:])
	if m <= 0 {
		return e, corrupt(io.ErrUnexpectedEOF)
	}
	n, m2 := binary.Uvarint(b[24+m:])
	if m2 <= 0 || n > 1<<30 {
		return e, corrupt(errors.New("a bad record length"))
	}
	s.r.Discard(24 + m + m2)
	s.pending = int(n)
	return e, nil
}

// get reads the next object and its head; io.EOF after the last.
func (s *spool) get() (transfer.Object, head, error) {
	e, err := s.head()
	if err != nil {
		return transfer.Object{}, e, err
	}
	o, err := s.object(e.size)
	return o, e, err
}

// object reads the rest of the object whose head was read last.
func (s *spool) object(size int64) (transfer.Object, error) {
	if cap(s.rest) < s.pending {
		s.rest = make([]byte, s.pending)
	}
	rec := recordReader{b: s.rest[:s.pending]}
	s.pending = 0
	if _, err := io.ReadFull(s.r, rec.b); err != nil {
		return transfer.Object{}, corrupt(err)
	}
	o := transfer.Object{Key: rec.string(), Size: size}
	n := rec.uvarint()
	if n&1 == 0 {
		if int(n>>1) > len(o.Key) {
			return o, corrupt(errors.New("name longer than key"))
		}
		o.Name = o.Key[len(o.Key)-int(n>>1):]
	} else {
		o.Name = rec.bytes(int(n >> 1))
	}
	o.ETag, o.VersionID, o.ChecksumAlgorithm, o.StorageClass = rec.string(), rec.string(), rec.string(), rec.string()
	if mt := rec.varint(); mt != 0 {
		o.ModTime = time.Unix(0, mt).UTC()
	}
	for range rec.uvarint() {
		if rec.err != nil {
			break
		}
		if o.Checksums == nil {
			o.Checksums = map[string]string{}
		}
		alg := rec.string()
		o.Checksums[alg] = rec.string()
	}
	if rec.err != nil || len(rec.b) != 0 {
		return o, corrupt(cmp.Or(rec.err, errors.New("record longer than its fields")))
	}
	return o, nil
}

// recordReader decodes the fields of one record; the first error sticks.
type recordReader struct {
	b   []byte
	err error
}

func (r *recordReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recordReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recordReader) string() string { return r.bytes(int(r.uvarint())) }

func (r *recordReader) bytes(n int) string {
	if r.err != nil || n == 0 {
		return ""
	}
	if n > len(r.b) {
		r.fail()
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *recordReader) fail() {
	if r.err == nil {
		r.err = io.ErrUnexpectedEOF
	}
	r.b = nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func corrupt(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read the spooled listing: %w", err)
}
