package transfertest

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/s3pd/s3pd/pkg/checksum"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// Source is an in-memory source for tests of the engine: objects listed
// in the order they were added, ranges opened from byte slices. Its
// fields, set before a run, inject what a real store does.
type Source struct {
	// Fault, when set, is asked before each Open; a non-nil error fails
	// it. attempt counts the Opens of key at off, from 1.
	Fault func(key string, off, n int64, attempt int) error
	// Break, when set, makes a body end early: after Break(...) bytes
	// when that is below the bytes asked (a connection that breaks).
	Break func(key string, off int64, attempt int) int64
	// WholeChecksums, when set, gives the checksums a whole-object
	// response carries, as S3's GetObject does; ranged responses carry
	// none.
	WholeChecksums func(key string) map[string]string
	// Encrypted marks every response as an SSE-KMS or SSE-C object's.
	Encrypted bool

	mu       sync.Mutex
	objs     []transfer.Object
	data     map[string][]byte
	attempts map[string]int
	opens    []Range
}

// Range is one request a Source answered.
type Range struct {
	Key    string
	Off, N int64 // N < 0: the whole object
}

// NewSource returns an empty source.
func NewSource() *Source {
	return &Source{data: map[string][]byte{}, attempts: map[string]int{}}
}

// Add adds an object named name holding data, with an MD5 ETag and a
// full-object CRC64NVME checksum (in Checksums and ChecksumAlgorithm),
// as S3 lists an object uploaded with one, and returns it.
func (s *Source) Add(name string, data []byte) transfer.Object {
	o := transfer.Object{Key: name, Name: name, Size: int64(len(data)), ETag: fmt.Sprintf(`"%x"`, md5.Sum(data)),
		ChecksumAlgorithm: string(checksum.CRC64NVME), Checksums: map[string]string{string(checksum.CRC64NVME): CRC64NVME(data)}}
	s.Put(o, data)
	return o
}

// Put adds (or replaces) an object as given, holding data.
func (s *Source) Put(o transfer.Object, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[o.Key] = data
	if i := slices.IndexFunc(s.objs, func(x transfer.Object) bool { return x.Key == o.Key }); i >= 0 {
		s.objs[i] = o
		return
	}
	s.objs = append(s.objs, o)
}

// Object returns the object listed under key.
func (s *Source) Object(key string) transfer.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.objs, func(x transfer.Object) bool { return x.Key == key })
	if i < 0 {
		return transfer.Object{}
	}
	return s.objs[i]
}

// Data returns what the source holds under key.
func (s *Source) Data(key string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data[key]
}

// CRC64NVME is data's full-object checksum as S3 writes it.
func CRC64NVME(data []byte) string {
	r := checksum.Start(checksum.CRC64NVME)
	r.Update(data)
	return checksum.Encode(checksum.CRC64NVME, r.Sum())
}

// Opens returns the requests answered so far, in order.
func (s *Source) Opens() []Range {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.opens)
}

// List implements transfer.Lister.
func (s *Source) List(ctx context.Context, emit func(transfer.Object) error) error {
	s.mu.Lock()
	objs := slices.Clone(s.objs)
	s.mu.Unlock()
	for _, o := range objs {
		if err := emit(o); err != nil {
			return err
		}
	}
	return nil
}

// Open implements transfer.Source.
func (s *Source) Open(ctx context.Context, o *transfer.Object, off, n int64) (*transfer.Body, error) {
	s.mu.Lock()
	data, ok := s.data[o.Key]
	id := fmt.Sprint(o.Key, " ", off)
	s.attempts[id]++
	attempt := s.attempts[id]
	i := slices.IndexFunc(s.objs, func(x transfer.Object) bool { return x.Key == o.Key })
	var cur transfer.Object
	if i >= 0 {
		cur = s.objs[i]
	}
	s.mu.Unlock()
	if s.Fault != nil {
		if err := s.Fault(o.Key, off, n, attempt); err != nil {
			return nil, err
		}
	}
	if !ok {
		return nil, transfer.Permanent(fmt.Errorf("open %s: %w", o.Key, transfer.ErrNotFound))
	}
	s.mu.Lock()
	s.opens = append(s.opens, Range{Key: o.Key, Off: off, N: n})
	s.mu.Unlock()
	b := &transfer.Body{Off: off, Len: n, Size: int64(len(data)), ETag: cur.ETag, ModTime: cur.ModTime, Encrypted: s.Encrypted}
	if n < 0 {
		b.Off, b.Len = 0, int64(len(data))
		if s.WholeChecksums != nil {
			b.Checksums = s.WholeChecksums(o.Key)
		}
	}
	if b.Off > int64(len(data)) {
		return nil, transfer.Permanent(fmt.Errorf("open %s bytes %d-%d of %d: range not satisfiable", o.Key, off, off+n-1, len(data)))
	}
	b.Len = min(b.Len, int64(len(data))-b.Off) // a range past the end is cut, as S3 does
	part := data[b.Off : b.Off+b.Len]
	if s.Break != nil {
		if k := s.Break(o.Key, off, attempt); k >= 0 && k < int64(len(part)) {
			part = part[:k]
		}
	}
	b.ReadCloser = io.NopCloser(bytes.NewReader(part))
	return b, nil
}

var (
	_ transfer.Source      = (*Source)(nil)
	_ transfer.Checksummer = (*ChecksumSource)(nil)
	_ transfer.Dataless    = (*Ref)(nil)
	_ transfer.Refresher   = (*Lister)(nil)
)

// ChecksumSource is a Source that is also a transfer.Checksummer: it
// looks an object's checksums up (S3's HeadObject with checksum mode).
type ChecksumSource struct {
	*Source
	// Lookup, when set, answers instead of the object's Checksums.
	Lookup  func(key string) (map[string]string, error)
	lookups atomic.Int64
}

// Checksums implements transfer.Checksummer.
func (c *ChecksumSource) Checksums(_ context.Context, o *transfer.Object) (map[string]string, error) {
	c.lookups.Add(1)
	if c.Lookup != nil {
		return c.Lookup(o.Key)
	}
	return c.Object(o.Key).Checksums, nil
}

// Lookups is how many times Checksums was called.
func (c *ChecksumSource) Lookups() int64 { return c.lookups.Load() }

// RefSource is a Source whose bodies carry no data, only a reference
// (transfer.Dataless), as a server-side copy's: a PartSink copies the
// bytes from the source itself.
type RefSource struct{ *Source }

// Open implements transfer.Source with a reference body.
func (r RefSource) Open(ctx context.Context, o *transfer.Object, off, n int64) (*transfer.Body, error) {
	b, err := r.Source.Open(ctx, o, off, n)
	if err != nil {
		return nil, err
	}
	b.ReadCloser.Close()
	b.ReadCloser = &Ref{Source: r.Source, Key: o.Key}
	return b, nil
}

// Ref names an object of a Source; reading it is an error.
type Ref struct {
	Source *Source
	Key    string
	reads  atomic.Int64
}

// ErrRefRead is what reading a Ref returns.
var ErrRefRead = errors.New("transfertest: a reference body was read")

func (r *Ref) Read([]byte) (int, error) { r.reads.Add(1); return 0, ErrRefRead }

// Close implements io.Closer.
func (r *Ref) Close() error { return nil }

// Dataless implements transfer.Dataless.
func (r *Ref) Dataless() {}

// Lister lists objects for Options.Lister as a listing made earlier (an
// inventory) would; it is a transfer.Refresher that looks each object up
// again at its Source.
type Lister struct {
	Objects []transfer.Object
	Source  *Source
	refresh atomic.Int64
}

// List implements transfer.Lister.
func (l *Lister) List(ctx context.Context, emit func(transfer.Object) error) error {
	for _, o := range l.Objects {
		if err := emit(o); err != nil {
			return err
		}
	}
	return nil
}

// Refresh implements transfer.Refresher.
func (l *Lister) Refresh(_ context.Context, o *transfer.Object) error {
	l.refresh.Add(1)
	cur := l.Source.Object(o.Key)
	if cur.Key == "" {
		return transfer.ErrNotFound
	}
	*o = cur
	return nil
}

// Refreshes is how many objects were looked up again.
func (l *Lister) Refreshes() int64 { return l.refresh.Load() }
