// Package httpstore is s3pd's source of files served over HTTP(S): a
// presigned S3 URL, a model hub's file, any web server. Over a fixed list
// of URLs it probes each file (its size, its validator, whether it takes
// Range), lists them for the engine and opens ranges of them, each pinned
// to the version probed (If-Match or If-Unmodified-Since, and If-Range),
// so a file that changes mid-run fails instead of mixing versions. A
// server that ignores Range is read as one stream. Every URL this package
// prints goes through Redact: presigned query strings are credentials.
package httpstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Item is one file to fetch.
type Item struct {
	// URL is the file's http:// or https:// URL, credentials included.
	URL string
	// Name is where it lands, relative to the destination ("": the last
	// segment of the URL's path).
	Name string
	// Checksum, when set, is the digest the file must have.
	Checksum *transfer.Digest
}

// Lane is one path to the servers: a client bound to one network card.
type Lane struct {
	Name   string
	Client *http.Client
}

// Options say what to fetch and how.
type Options struct {
	// Items are the files, in the order they are listed.
	Items []Item
	// Client sends the probes, and is the one lane when Lanes is empty
	// (nil: http.DefaultClient).
	Client *http.Client
	// Lanes are the paths the ranges are spread over (default: one, over
	// Client).
	Lanes []Lane
	// FirstRange is the length of the probe's ranged GET when there is
	// one item (default 256 KiB): its body is then the engine's first
	// range, so its bytes are fetched once. With several items each
	// probe asks for one byte.
	FirstRange int64
	// Probes bounds the probes in flight (default 8).
	Probes int
	// Backoff paces a probe's retries (default: the range reads budget, transfer.BudgetFor(transfer.RangeRead)).
	Backoff transfer.Backoff
	// UserAgent is sent with every request (default "s3pd").
	UserAgent string
}

// Store is a list of files probed and ready for the engine: a
// transfer.Lister of their objects, and through Lanes one
// transfer.Source per lane. Its objects are fixed once Open returns.
// A web server's ETag is no MD5 of the bytes, whatever it looks like:
// run the engine over a store with Options.OpaqueETags.
type Store struct {
	opts     Options
	objects  []transfer.Object
	urls     map[string]string // an object's Key (its URL redacted) to its URL
	first    *transfer.Body    // the single item's probe, served once (nil: none)
	prefetch *transfer.Prefetch
}

// Open checks every item's URL and name and probes each file with a
// ranged GET, which gives its size, its validator (a strong ETag, else
// Last-Modified) and whether the server takes Range (206) or sends the
// whole file (200). An item that cannot be probed fails Open, naming it.
// With a single item the probe's body is kept for the engine's first
// range: ctx must last as long as the run, and Close releases the body
// if the run did not take it.
func Open(ctx context.Context, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	s := &Store{opts: opts, urls: map[string]string{}}
	if len(opts.Items) == 0 {
		return nil, errors.New("no URL to fetch")
	}
	names := map[string]string{}
	for i, it := range opts.Items {
		if err := checkURL(it.URL); err != nil {
			return nil, err
		}
		name, err := nameOf(it)
		if err != nil {
			return nil, err
		}
		key := Redact(it.URL)
		if other, dup := names[name]; dup {
			return nil, fmt.Errorf("%s and %s both land at %s: give one another name", other, key, name)
		}
		if _, dup := s.urls[key]; dup {
			key = fmt.Sprintf("%s#%d", key, i+1) // the same URL once redacted: keys stay apart
		}
		names[name], s.urls[key] = key, it.URL
		s.objects = append(s.objects, transfer.Object{Key: key, Name: name, Size: -1, Digest: it.Checksum})
	}
	if err := s.probeAll(ctx); err != nil {
		return nil, err
	}
	if s.first != nil {
		s.prefetch = transfer.NewPrefetch(s.objects[0].Key, s.first)
	}
	return s, nil
}

func (o Options) withDefaults() Options {
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	if len(o.Lanes) == 0 {
		o.Lanes = []Lane{{Name: "default", Client: o.Client}}
	}
	if o.FirstRange <= 0 {
		o.FirstRange = 256 << 10
	}
	if o.Probes <= 0 {
		o.Probes = 8
	}
	if o.Backoff.MaxAttempts <= 0 {
		o.Backoff = transfer.BudgetFor(transfer.RangeRead)
	}
	if o.UserAgent == "" {
		o.UserAgent = "s3pd"
	}
	return o
}

// nameOf is where it lands: its Name, else its URL's last path segment.
func nameOf(it Item) (string, error) {
	name := it.Name
	if name == "" {
		u, _ := url.Parse(it.URL)            // checked by checkURL
		if !strings.HasSuffix(u.Path, "/") { // a folder's URL names no file
			name = path.Base(u.Path)
		}
	}
	if name == "" {
		return "", fmt.Errorf("%s: no file name in the URL: give one", Redact(it.URL))
	}
	if strings.HasPrefix(name, "/") || slices.Contains(strings.Split(name, "/"), "..") || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%s: name %q is not a path inside the destination", Redact(it.URL), name)
	}
	return path.Clean(name), nil
}

// probeAll probes every object, Probes at a time; the first error wins
// and no probe starts after it. The probes run under ctx itself, not a
// context that ends with probeAll: a single item's probe body is read
// by the run.
func (s *Store) probeAll(ctx context.Context) error {
	slots := make(chan struct{}, s.opts.Probes)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	keep := len(s.objects) == 1
	for i := range s.objects {
		slots <- struct{}{}
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			<-slots
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			b, err := s.probe(ctx, &s.objects[i], keep)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			if keep {
				s.first = b
			}
		}()
	}
	wg.Wait()
	if first != nil && s.first != nil {
		s.first.Close()
		s.first = nil
	}
	return first
}

// Objects are the files probed, in the order of the items.
func (s *Store) Objects() []transfer.Object { return s.objects }

// List implements transfer.Lister.
func (s *Store) List(ctx context.Context, emit func(transfer.Object) error) error {
	for _, o := range s.objects {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(o); err != nil {
			return err
		}
	}
	return nil
}

// Lanes are the engine's lanes: one source per lane of the options, which
// serve the single item's probed range once.
func (s *Store) Lanes() []transfer.Lane {
	lanes := make([]transfer.Lane, len(s.opts.Lanes))
	for i, l := range s.opts.Lanes {
		lanes[i] = transfer.Lane{Name: l.Name, Source: &Source{store: s, client: l.Client}}
	}
	if s.prefetch != nil {
		lanes = s.prefetch.Lanes(lanes)
	}
	return lanes
}

// Source returns the store's source over client (not serving the
// probe's range).
func (s *Store) Source(client *http.Client) *Source { return &Source{store: s, client: client} }

// Close closes the probe's range if the engine did not take it.
func (s *Store) Close() error {
	if s.prefetch == nil {
		return nil
	}
	return s.prefetch.Close()
}
