package s3emu

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"golang.org/x/sync/errgroup"
)

// Backends.
const (
	BackendSynthetic = "synthetic"
	BackendMemory    = "memory"
	BackendDiscard   = "discard"
)

// DefaultLogLimit bounds the request log when Options.LogLimit is 0.
const DefaultLogLimit = 100_000

// Options configure an emulator.
type Options struct {
	// Backend is BackendSynthetic (the default), BackendMemory or
	// BackendDiscard. With the synthetic backend, bucket "bench" serves the
	// dataset read-only and every other bucket lives in memory.
	Backend string
	// Dataset is the synthetic backend's spec (see ParseDataset).
	Dataset string
	// Buckets are created besides "bench", which always exists.
	Buckets []string
	// Regions places buckets in a region: a signed request for such a
	// bucket whose signature names another region is answered as S3
	// answers it, as WrongRegion says.
	Regions map[string]string
	// WrongRegion is how such a request is answered: WrongRegionMoved
	// (the default), WrongRegionMalformed or WrongRegionMalformedBodyOnly.
	WrongRegion string
	// TTFB is slept before each response's headers.
	TTFB time.Duration
	// ConnRate caps each accepted TCP connection at this many bytes/s with
	// SO_MAX_PACING_RATE (0: no cap). It needs Start; Handler has no sockets.
	ConnRate int64
	// Faults, when set, are injected into matching requests.
	Faults *Faults
	// NoChecksums serves objects as a store that keeps no full-object
	// checksum (moto, older S3 objects): listings, HEADs and GETs carry
	// only the ETag, so a client can check at most the MD5 an ETag is.
	NoChecksums bool
	// Throttle answers 503 SlowDown above a number of requests in flight
	// or a rate per prefix, as S3 does (zero: never).
	Throttle Throttle
	// Stalls stalls a seeded fraction of GETs mid-body (zero: none).
	Stalls Stalls
	// MaxKeys caps every listing page (0: S3's 1,000), so a test pages
	// through a few objects.
	MaxKeys int
	// LogRequests keeps an ordered log of requests (see Log), bounded by
	// LogLimit entries (0: DefaultLogLimit); later requests are counted in
	// Stats.LogDropped but not logged. Off, nothing is logged: benchmarks
	// leave it off.
	LogRequests bool
	LogLimit    int
	// TLS, when set, makes Start serve HTTPS (HTTP/1.1 only) with the
	// certificate it names or a self-signed one.
	TLS *TLSOptions
	// AllowRemote serves requests whatever host their Host header names
	// and takes browser form POST uploads; without it only requests for a
	// loopback address, localhost or the listening address are served
	// (see access.go).
	AllowRemote bool
	// CORSOrigins are the web origins ("http://localhost:3000", or "*")
	// whose pages may reach the emulator: preflights from them are granted
	// and answers to them carry CORS headers. Other origins get none.
	CORSOrigins []string
	// MinPartSize, when above zero, answers a CompleteMultipartUpload
	// whose parts but the last are smaller with 400 EntityTooSmall, as S3
	// does at MinPartSize (5 MiB). Zero takes parts of any size, for tests
	// that upload small objects in many parts.
	MinPartSize int64
	// SessionLifetime is how long the session credentials of a directory
	// bucket (a bucket named BASE--ZONEID--x-s3) live (0:
	// DefaultSessionLifetime).
	SessionLifetime time.Duration
}

// Stats are the emulator's counters since it started or since ResetStats.
type Stats struct {
	Requests       int64 // every request
	GetRequests    int64 // object GETs
	HeadRequests   int64 // object HEADs
	ListRequests   int64 // ListObjects (V1 and V2)
	PutRequests    int64 // object PUTs: PutObject, UploadPart, UploadPartCopy, CopyObject
	BytesSent      int64 // response bytes (bodies and XML), headers excluded
	BytesReceived  int64 // request body bytes read
	InFlight       int64 // requests being served now
	MaxInFlight    int64 // most requests served at once
	FaultsInjected int64 // requests a fault rule fired on
	Throttled      int64 // requests answered 503 SlowDown by Options.Throttle
	ThrottledGets  int64 // object GETs among them
	Stalls         int64 // GETs stalled by Options.Stalls
	PacingFailures int64 // connections whose rate cap could not be set
	LogDropped     int64 // requests not logged because the log was full

	// TLS handshakes, counted by the server (zero without TLS) when a
	// connection's first request arrives, or when it closes without one.
	TLSHandshakes      int64 // handshakes completed
	TLSResumed         int64 // among them, sessions resumed
	TLSHandshakeErrors int64 // handshakes that failed (an untrusted certificate, say)
	// Of the connections accepted after the first handshake completed
	// (those that could have resumed it), how many completed a handshake
	// and how many of them resumed.
	TLSHandshakesAfterFirst int64
	TLSResumedAfterFirst    int64
}

// Request is one entry of the request log, in order of arrival.
type Request struct {
	Time   time.Time // arrival
	Method string
	Bucket string
	Key    string
	Query  string // raw query
	Range  string // Range header
	Status int    // 0 while in flight
	Bytes  int64  // response bytes sent
	Fault  string // the fault injected, if any
}

type counters struct {
	requests, gets, heads, lists, puts atomic.Int64
	sent, received                     atomic.Int64
	inFlight, maxInFlight              atomic.Int64
	faults, pacingFailures, logDropped atomic.Int64
	throttled, throttledGets, stalls   atomic.Int64
	changes                            changes // wakes Await
}

// Server is an S3 emulator: gofakes3 for bucket and upload operations, its
// own code for GET, HEAD and listing (synthetic objects, checksums,
// If-Match, faults), wrapped in a network model.
type Server struct {
	opts    Options
	fake    http.Handler
	synth   *syntheticStore // nil unless the synthetic backend
	backend *backendStore
	discard *discardBackend // nil unless the discard backend
	faults  *Faults
	limit   *throttle // nil: no throttling
	stall   *stalls   // nil: no stalls
	tls     *tlsState // nil: plain HTTP
	// sessions are the directory buckets' session credentials.
	sessions *sessions
	// uploads are the multipart uploads' checksums and parts.
	uploads uploads

	c counters

	keyBytes sync.Map // bucket + "/" + key -> *atomic.Int64

	logMu sync.Mutex
	log   []Request

	// listenAddr is the started listener's address (a net.Addr).
	listenAddr atomic.Value

	mu       sync.Mutex
	srv      *http.Server
	ln       net.Listener
	serveErr chan error
}

// New builds an emulator; Start serves it on a socket, Handler in-process.
func New(opts Options) (*Server, error) {
	if opts.Throttle.MaxInFlight < 0 || opts.Throttle.PrefixRate < 0 {
		return nil, fmt.Errorf("new emulator: throttle limits must not be negative, got %+v", opts.Throttle)
	}
	if opts.Stalls.Fraction < 0 || opts.Stalls.Fraction > 1 || opts.Stalls.For < 0 {
		return nil, fmt.Errorf("new emulator: stalls want a fraction in [0, 1] and a duration >= 0, got %v and %v", opts.Stalls.Fraction, opts.Stalls.For)
	}
	s := &Server{opts: opts, faults: opts.Faults, backend: &backendStore{},
		limit: newThrottle(opts.Throttle), stall: newStalls(opts.Stalls), sessions: newSessions(opts.SessionLifetime)}
	if opts.TLS != nil {
		st, err := newTLSState(*opts.TLS)
		if err != nil {
			return nil, fmt.Errorf("new emulator: %w", err)
		}
		s.tls = st
	}
	var be gofakes3.Backend
	switch opts.Backend {
	case "", BackendSynthetic:
		ds, err := ParseDataset(opts.Dataset)
		if err != nil {
			return nil, fmt.Errorf("new emulator: %w", err)
		}
		s.synth = &syntheticStore{ds: ds, digests: &syntheticDigests{}}
		if s.faults != nil {
			s.synth.version = s.faults.version
		}
		mem := s3mem.New()
		s.backend.b = mem
		be = &router{synth: &syntheticBackend{bucket: DefaultBucket, st: s.synth}, mem: mem}
	case BackendMemory:
		if opts.Dataset != "" {
			return nil, fmt.Errorf("new emulator: a dataset needs the synthetic backend, not %q", opts.Backend)
		}
		mem := s3mem.New()
		s.backend.b = mem
		be = mem
		if err := mem.CreateBucket(DefaultBucket); err != nil {
			return nil, fmt.Errorf("new emulator: create bucket %s: %w", DefaultBucket, err)
		}
	case BackendDiscard:
		if opts.Dataset != "" {
			return nil, fmt.Errorf("new emulator: a dataset needs the synthetic backend, not %q", opts.Backend)
		}
		s.discard = newDiscardBackend(s.backend)
		s.backend.b = s.discard
		be = s.discard
		if err := s.discard.CreateBucket(DefaultBucket); err != nil {
			return nil, fmt.Errorf("new emulator: create bucket %s: %w", DefaultBucket, err)
		}
	default:
		return nil, fmt.Errorf("new emulator: unknown backend %q (want synthetic, memory or discard)", opts.Backend)
	}
	for _, b := range opts.Buckets {
		if b == DefaultBucket {
			continue
		}
		if err := gofakes3.ValidateBucketName(b); err != nil {
			return nil, fmt.Errorf("new emulator: bucket %q: %w", b, err)
		}
		if err := be.CreateBucket(b); err != nil {
			return nil, fmt.Errorf("new emulator: create bucket %s: %w", b, err)
		}
	}
	s.fake = gofakes3.New(be, gofakes3.WithTimeSkewLimit(0), gofakes3.WithoutVersioning()).Server()
	return s, nil
}

// Dataset returns the synthetic dataset (empty for other backends).
func (s *Server) Dataset() Dataset {
	if s.synth == nil {
		return Dataset{}
	}
	return s.synth.ds
}

// Start serves the emulator on addr (e.g. "127.0.0.1:0") until Close and
// returns its endpoint URL, e.g. "http://127.0.0.1:41234" (https with
// Options.TLS).
func (s *Server) Start(addr string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return "", errors.New("start emulator: already started")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("start emulator on %s: %w", addr, err)
	}
	if s.opts.ConnRate > 0 {
		ln = &pacedListener{Listener: ln, rate: uint64(s.opts.ConnRate), failures: &s.c.pacingFailures}
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: time.Minute}
	scheme := "http://"
	if s.tls != nil {
		// An empty TLSNextProto keeps net/http from offering HTTP/2:
		// S3 speaks HTTP/1.1, and so must what is measured against it.
		ln = tls.NewListener(ln, s.tls.config())
		s.srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
		s.srv.ConnState = func(c net.Conn, st http.ConnState) { s.tls.connState(c, st); s.c.changes.signal() }
		s.srv.ErrorLog = log.New(errorLog{&s.tls.failed, s.c.changes.signal}, "", 0)
		scheme = "https://"
	}
	s.ln = ln
	s.listenAddr.Store(ln.Addr())
	s.serveErr = make(chan error, 1)
	go func() { s.serveErr <- s.srv.Serve(ln) }()
	return scheme + ln.Addr().String(), nil
}

// Handler returns the emulator as an http.Handler (TTFB and faults
// included; the per-connection rate cap needs Start).
func (s *Server) Handler() http.Handler { return s }

// Close stops a started emulator and closes its connections.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return nil
	}
	err := s.srv.Close()
	if serr := <-s.serveErr; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	s.srv = nil
	if err != nil {
		return fmt.Errorf("close emulator: %w", err)
	}
	return nil
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	st := Stats{
		Requests:       s.c.requests.Load(),
		GetRequests:    s.c.gets.Load(),
		HeadRequests:   s.c.heads.Load(),
		ListRequests:   s.c.lists.Load(),
		PutRequests:    s.c.puts.Load(),
		BytesSent:      s.c.sent.Load(),
		BytesReceived:  s.c.received.Load(),
		InFlight:       s.c.inFlight.Load(),
		MaxInFlight:    s.c.maxInFlight.Load(),
		FaultsInjected: s.c.faults.Load(),
		Throttled:      s.c.throttled.Load(),
		ThrottledGets:  s.c.throttledGets.Load(),
		Stalls:         s.c.stalls.Load(),
		PacingFailures: s.c.pacingFailures.Load(),
		LogDropped:     s.c.logDropped.Load(),
	}
	if t := s.tls; t != nil {
		st.TLSHandshakes, st.TLSResumed, st.TLSHandshakeErrors = t.handshakes.Load(), t.resumed.Load(), t.failed.Load()
		st.TLSHandshakesAfterFirst, st.TLSResumedAfterFirst = t.lateHandshakes.Load(), t.lateResumed.Load()
	}
	return st
}

// ResetStats zeroes the counters (MaxInFlight restarts from InFlight), the
// per-key byte counts and the request log; it refills the throttle's
// buckets and forgets which GETs stalled, so the next client meets the
// same server as the last.
func (s *Server) ResetStats() {
	for _, a := range []*atomic.Int64{&s.c.requests, &s.c.gets, &s.c.heads, &s.c.lists, &s.c.puts,
		&s.c.sent, &s.c.received, &s.c.faults, &s.c.pacingFailures, &s.c.logDropped,
		&s.c.throttled, &s.c.throttledGets, &s.c.stalls} {
		a.Store(0)
	}
	if s.limit != nil {
		s.limit.reset()
	}
	if s.stall != nil {
		s.stall.reset()
	}
	if s.tls != nil {
		s.tls.reset()
	}
	s.c.maxInFlight.Store(s.c.inFlight.Load())
	s.keyBytes.Clear()
	s.logMu.Lock()
	s.log = nil
	s.logMu.Unlock()
}

// BytesSentFor returns how many body bytes of object bucket/key GETs have
// sent since the start or ResetStats.
func (s *Server) BytesSentFor(bucket, key string) int64 {
	if v, ok := s.keyBytes.Load(bucket + "/" + key); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

func (s *Server) addKeyBytes(bucket, key string, n int64) {
	k := bucket + "/" + key
	v, ok := s.keyBytes.Load(k)
	if !ok {
		v, _ = s.keyBytes.LoadOrStore(k, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(n)
}

// Log returns a copy of the request log (empty unless LogRequests).
func (s *Server) Log() []Request {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return append([]Request(nil), s.log...)
}

func (s *Server) logArrival(r *http.Request, bucket, key string) int {
	limit := s.opts.LogLimit
	if limit <= 0 {
		limit = DefaultLogLimit
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if len(s.log) >= limit {
		s.c.logDropped.Add(1)
		return -1
	}
	s.log = append(s.log, Request{Time: time.Now(), Method: r.Method, Bucket: bucket, Key: key,
		Query: r.URL.RawQuery, Range: r.Header.Get("Range")})
	return len(s.log) - 1
}

func (s *Server) logDone(i int, status int, bytes int64, fault string) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if i < len(s.log) {
		s.log[i].Status, s.log[i].Bytes, s.log[i].Fault = status, bytes, fault
	}
}

// Prepare computes, with every CPU, the ETags and checksums of all
// synthetic objects, so that the first listing or checksum-mode HEAD of a
// benchmark does not pay for them. It is optional.
func (s *Server) Prepare(ctx context.Context) error {
	if s.synth == nil {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	it := s.synth.ds.iter()
	for {
		key, grp, ok := it.next()
		if !ok {
			break
		}
		if gctx.Err() != nil {
			break
		}
		if grp.Size < cacheMin {
			continue
		}
		g.Go(func() error {
			v := s.synth.ver(key)
			s.synth.digests.get(seedOf(key, v), grp.Size, true)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("prepare emulator: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("prepare emulator: %w", err)
	}
	return nil
}

// splitPath splits a path-style URL path into bucket and key.
func splitPath(p string) (bucket, key string) {
	p = strings.TrimPrefix(p, "/")
	bucket, key, _ = strings.Cut(p, "/")
	return bucket, key
}
