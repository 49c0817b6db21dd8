package shard

import (
	"bufio"
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
// The file is unlinked as soon as it is created.
type spool struct {
	f   *os.File
	w   *bufio.Writer
	r   *bufio.Reader
	buf []byte
}

func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, ".s3pd-shard-*")
	if err != nil {
		return nil, fmt.Errorf("spool the listing: %w", err)
	}
	os.Remove(f.Name())
	return &spool{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (s *spool) Close() error { return s.f.Close() }

// put appends one object and its entry hash. The name is stored as a
// suffix length when it is the tail of the key, as it is for a prefix
// listing.
func (s *spool) put(o transfer.Object, h Hash) error {
	b := binary.BigEndian.AppendUint64(s.buf[:0], h.hi)
	b = binary.BigEndian.AppendUint64(b, h.lo)
	b = appendString(b, o.Key)
	if strings.HasSuffix(o.Key, o.Name) {
		b = binary.AppendUvarint(b, uint64(len(o.Name))<<1)
	} else {
		b = binary.AppendUvarint(b, uint64(len(o.Name))<<1|1)
		b = append(b, o.Name...)
	}
	b = binary.AppendVarint(b, o.Size)
	b = appendString(b, o.ETag)
	b = appendString(b, o.VersionID)
	b = appendString(b, o.ChecksumAlgorithm)
	b = appendString(b, o.StorageClass)
	var mt int64
	if !o.ModTime.IsZero() {
		mt = o.ModTime.UnixNano()
	}
	b = binary.AppendVarint(b, mt)
	b = binary.AppendUvarint(b, uint64(len(o.Checksums)))
	for alg, v := range o.Checksums {
		b = appendString(b, alg)
		b = appendString(b, v)
	}
	s.buf = b
	_, err := s.w.Write(b)
	return err
}

// rewind ends writing and starts reading from the first object.
func (s *spool) rewind() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("spool the listing: %w", err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("spool the listing: %w", err)
	}
	s.r = bufio.NewReaderSize(s.f, 1<<20)
	return nil
}

// get reads the next object and its entry hash; io.EOF after the last.
func (s *spool) get() (transfer.Object, Hash, error) {
	var hb [16]byte
	if _, err := io.ReadFull(s.r, hb[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return transfer.Object{}, Hash{}, io.EOF // a clean end
		}
		return transfer.Object{}, Hash{}, corrupt(err)
	}
	h := Hash{binary.BigEndian.Uint64(hb[:8]), binary.BigEndian.Uint64(hb[8:])}
	o, err := s.object()
	return o, h, err
}

// object reads the rest of a record: the object.
func (s *spool) object() (transfer.Object, error) {
	var o transfer.Object
	key, err := s.string()
	if err != nil {
		return o, corrupt(err)
	}
	o.Key = key
	n, err := binary.ReadUvarint(s.r)
	if err != nil {
		return o, corrupt(err)
	}
	if n&1 == 0 {
		if int(n>>1) > len(key) {
			return o, corrupt(errors.New("name longer than key"))
		}
		o.Name = key[len(key)-int(n>>1):]
	} else if o.Name, err = s.bytes(int(n >> 1)); err != nil {
		return o, corrupt(err)
	}
	if o.Size, err = binary.ReadVarint(s.r); err != nil {
		return o, corrupt(err)
	}
	for _, f := range []*string{&o.ETag, &o.VersionID, &o.ChecksumAlgorithm, &o.StorageClass} {
		if *f, err = s.string(); err != nil {
			return o, corrupt(err)
		}
	}
	mt, err := binary.ReadVarint(s.r)
	if err != nil {
		return o, corrupt(err)
	}
	if mt != 0 {
		o.ModTime = time.Unix(0, mt).UTC()
	}
	sums, err := binary.ReadUvarint(s.r)
	if err != nil {
		return o, corrupt(err)
	}
	for range sums {
		alg, err := s.string()
		if err != nil {
			return o, corrupt(err)
		}
		v, err := s.string()
		if err != nil {
			return o, corrupt(err)
		}
		if o.Checksums == nil {
			o.Checksums = map[string]string{}
		}
		o.Checksums[alg] = v
	}
	return o, nil
}

func (s *spool) string() (string, error) {
	n, err := binary.ReadUvarint(s.r)
	if err != nil {
		return "", err
	}
	return s.bytes(int(n))
}

func (s *spool) bytes(n int) (string, error) {
	if n == 0 {
		return "", nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(s.r, b); err != nil {
		return "", err
	}
	return string(b), nil
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
