package s3emu

import (
	"encoding/hex"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/minio/crc64nvme"
)

// syntheticTime is the Last-Modified time of every synthetic object.
var syntheticTime = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// objectMeta is what a GET or HEAD answers with, before the body.
type objectMeta struct {
	Size         int64
	ETag         string // quoted
	LastModified time.Time
	Header       map[string]string // stored headers replayed on GET/HEAD
	Algorithm    string            // full-object checksum algorithm, "" if none
	checksum     func() string     // computes the checksum's base64 value
	ChecksumType string            // TypeFullObject ("" too) or TypeComposite
	PartSizes    []int64           // a multipart object's parts; nil if uploaded whole
	PartSums     []string
}

// listEntry is one object in a listing.
type listEntry struct {
	Key          string
	Size         int64
	ETag         string
	LastModified time.Time
	Algorithm    string
}

// entryIter walks a bucket's objects in key order.
type entryIter interface {
	seekGE(key string)
	next() (listEntry, bool)
}

// store is the emulator's view of one backend: the three reads that it
// serves itself rather than through gofakes3.
type store interface {
	stat(bucket, key string) (objectMeta, error)
	open(bucket, key string, off, n int64) (io.ReadCloser, error)
	list(bucket, prefix string) (entryIter, error)
}

// syntheticStore serves the dataset bucket of the synthetic backend.
type syntheticStore struct {
	ds      Dataset
	digests *syntheticDigests
	// version returns the current version of key (0 unless a fault
	// replaced the object).
	version func(key string) int
}

func (s *syntheticStore) ver(key string) int {
	if s.version == nil {
		return 0
	}
	return s.version(key)
}

func (s *syntheticStore) stat(bucket, key string) (objectMeta, error) {
	size, ok := s.ds.Lookup(key)
	if !ok {
		return objectMeta{}, gofakes3.KeyNotFound(key)
	}
	key = baseKey(key) // a pass's key serves its base key's object
	v := s.ver(key)
	seed := seedOf(key, v)
	return objectMeta{
		Size:         size,
		ETag:         s.digests.etag(key, v, seed, size),
		LastModified: syntheticTime,
		Header:       map[string]string{"Content-Type": "application/octet-stream"},
		Algorithm:    AlgCRC64NVME,
		checksum:     func() string { return crc64Value(s.digests.get(seed, size, false).crc) },
	}, nil
}

func (s *syntheticStore) open(bucket, key string, off, n int64) (io.ReadCloser, error) {
	if _, ok := s.ds.Lookup(key); !ok {
		return nil, gofakes3.KeyNotFound(key)
	}
	key = baseKey(key)
	return &syntheticReader{seed: seedOf(key, s.ver(key)), off: off, end: off + n}, nil
}

func (s *syntheticStore) list(bucket, prefix string) (entryIter, error) {
	return &syntheticIter{s: s, it: s.ds.iter()}, nil
}

type syntheticIter struct {
	s  *syntheticStore
	it *keyIter
}

func (i *syntheticIter) seekGE(key string) { i.it.seekGE(key) }

func (i *syntheticIter) next() (listEntry, bool) {
	key, g, ok := i.it.next()
	if !ok {
		return listEntry{}, false
	}
	v := i.s.ver(key)
	return listEntry{
		Key:          key,
		Size:         g.Size,
		ETag:         i.s.digests.etag(key, v, seedOf(key, v), g.Size),
		LastModified: syntheticTime,
		Algorithm:    AlgCRC64NVME,
	}, true
}

// sideEntry is what the emulator remembers of an object that gofakes3
// does not: its S3 ETag (multipart uploads) and its full-object checksum.
// It applies only while the stored MD5 is still hashHex.
type sideEntry struct {
	hashHex   string
	etag      string
	algorithm string
	value     string
	ctype     string // TypeComposite or TypeFullObject ("": full object)
	// partSizes and partSums are a multipart object's parts (nil for
	// an object uploaded whole), partSums in algorithm when it was the
	// upload's.
	partSizes []int64
	partSums  []string
}

// backendStore reads a gofakes3 backend (memory or discard) and overlays
// the side table the emulator keeps for it.
type backendStore struct {
	b    gofakes3.Backend
	side sync.Map // bucket + "/" + key -> *sideEntry
}

func (s *backendStore) remember(bucket, key string, e *sideEntry) {
	s.side.Store(bucket+"/"+key, e)
}

func (s *backendStore) entry(bucket, key, hashHex string) *sideEntry {
	if v, ok := s.side.Load(bucket + "/" + key); ok {
		if e := v.(*sideEntry); e.hashHex == hashHex {
			return e
		}
	}
	return nil
}

func (s *backendStore) stat(bucket, key string) (objectMeta, error) {
	obj, err := s.b.HeadObject(bucket, key)
	if err != nil {
		return objectMeta{}, err
	}
	obj.Contents.Close()
	hh := hex.EncodeToString(obj.Hash)
	m := objectMeta{Size: obj.Size, ETag: `"` + hh + `"`, Header: map[string]string{}}
	for k, v := range obj.Metadata {
		if v == tombstone {
			continue
		}
		if name, ok := strings.CutPrefix(k, storedPrefix); ok {
			m.Header[name] = v
		} else if replayedHeader(k) {
			m.Header[k] = v
		}
	}
	m.LastModified, _ = time.Parse(http.TimeFormat, obj.Metadata["Last-Modified"])
	if e := s.entry(bucket, key, hh); e != nil {
		m.ETag, m.Algorithm = e.etag, e.algorithm
		m.checksum = func() string { return e.value }
		m.ChecksumType, m.PartSizes, m.PartSums = e.ctype, e.partSizes, e.partSums
		return m, nil
	}
	// An object that reached the backend without passing the emulator's
	// upload path (CopyObject) gets the CRC64NVME S3 would give it.
	m.Algorithm = AlgCRC64NVME
	m.checksum = func() string {
		e := &sideEntry{hashHex: hh, etag: m.ETag, algorithm: AlgCRC64NVME}
		obj, err := s.b.GetObject(bucket, key, nil)
		if err != nil {
			return ""
		}
		defer obj.Contents.Close()
		h := crc64nvme.New()
		if _, err := io.Copy(h, obj.Contents); err != nil {
			return ""
		}
		e.value = crc64Value(h.Sum64())
		s.remember(bucket, key, e)
		return e.value
	}
	return m, nil
}

// replayedHeader reports whether a stored metadata header is sent back on
// GET and HEAD (gofakes3 stores every X-Amz-* request header).
func replayedHeader(k string) bool {
	switch k {
	case "Content-Type", "Content-Disposition", "Content-Encoding", "Content-Language", "Cache-Control", "Expires":
		return true
	}
	return strings.HasPrefix(k, "X-Amz-Meta-")
}

func (s *backendStore) open(bucket, key string, off, n int64) (io.ReadCloser, error) {
	var rng *gofakes3.ObjectRangeRequest
	if n > 0 {
		rng = &gofakes3.ObjectRangeRequest{Start: off, End: off + n - 1}
	}
	obj, err := s.b.GetObject(bucket, key, rng)
	if err != nil {
		return nil, err
	}
	return obj.Contents, nil
}

func (s *backendStore) list(bucket, prefix string) (entryIter, error) {
	p := gofakes3.Prefix{HasPrefix: prefix != "", Prefix: prefix}
	ol, err := s.b.ListBucket(bucket, &p, gofakes3.ListBucketPage{})
	if err != nil {
		return nil, err
	}
	es := make([]listEntry, 0, len(ol.Contents))
	for _, c := range ol.Contents {
		e := listEntry{Key: c.Key, Size: c.Size, ETag: c.ETag, LastModified: c.LastModified.Time, Algorithm: AlgCRC64NVME}
		if se := s.entry(bucket, c.Key, strings.Trim(c.ETag, `"`)); se != nil {
			e.ETag, e.Algorithm = se.etag, se.algorithm
		}
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Key < es[j].Key })
	return &sliceIter{es: es}, nil
}

type sliceIter struct {
	es []listEntry
	i  int
}

func (it *sliceIter) seekGE(key string) {
	it.i = sort.Search(len(it.es), func(i int) bool { return it.es[i].Key >= key })
}

func (it *sliceIter) next() (listEntry, bool) {
	if it.i >= len(it.es) {
		return listEntry{}, false
	}
	it.i++
	return it.es[it.i-1], true
}
