package fleet

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The protocol between nodes: one path, the object's key in the query,
// the token and the asking node in headers.
const (
	// ObjectPath is where a Server serves objects: GET or HEAD
	// ObjectPath?key=KEY, with a Range header for a part.
	ObjectPath = "/fleet/v1/object"
	// TokenHeader carries the fleet's token on every request.
	TokenHeader = "S3pd-Fleet-Token"
	// NodeHeader names the asking node (its shard index), for the
	// server's count of bytes served per peer.
	NodeHeader = "S3pd-Fleet-Node"
	// DonePath is where a node that finished its run says so: POST
	// DonePath with the token and its NodeHeader (see Linger).
	DonePath = "/fleet/v1/done"
)

// ServerOptions configure a Server.
type ServerOptions struct {
	// Token is the fleet's shared secret: a request whose TokenHeader
	// differs is answered 403 with no body. It must not be empty.
	Token string
	// TLS, when set, makes Start serve over TLS with it (its
	// certificate); nil: plain HTTP.
	TLS *tls.Config
	// Wait is how long a request for a range not held yet (of an
	// object neither Ready nor Written there) is held, waiting for it,
	// before it is answered 404 (0: DefaultWait; negative: at once).
	// Keep it under the requesters' Stall.
	Wait time.Duration
}

// Server serves peers the objects this node has landed and checked:
// the ranges of an object the engine wrote (Written), and whole objects
// it committed verified (Ready), only from the file and version marked,
// only to requests that carry the fleet's token. A request for a range
// it does not hold yet waits for it, up to Wait.
type Server struct {
	token []byte
	tls   *tls.Config
	wait  time.Duration

	mu      sync.Mutex
	ready   map[string]held     // by object key
	writing map[string]*writing // by object key, until Ready or Discard
	// waits are the requests waiting for a key to be marked; quit is
	// closed by Close, which ends them all.
	waits  map[string]*waiters
	quit   chan struct{}
	closed bool
	served map[string]*atomic.Int64
	hs     *http.Server
	// listen binds (net.Listen; a test's, to play a name that resolves
	// late)
	listen func(network, addr string) (net.Listener, error)
	// done are the nodes that said they finished (DonePath), by the
	// name their NodeHeader gave; changed is closed and replaced at
	// each new one.
	done    map[string]bool
	changed chan struct{}
}

// held is one object a Server may serve: the committed file it was
// verified into, and what that file was when it was marked.
type held struct {
	path    string
	etag    string
	size    int64
	modTime time.Time
}

// NewServer returns a server that serves nothing until objects are
// marked Ready.
func NewServer(opts ServerOptions) (*Server, error) {
	if opts.Token == "" {
		return nil, errors.New("fleet server: empty token")
	}
	if opts.Wait == 0 {
		opts.Wait = DefaultWait
	}
	return &Server{token: []byte(opts.Token), tls: opts.TLS, wait: opts.Wait,
		ready: map[string]held{}, writing: map[string]*writing{}, waits: map[string]*waiters{}, quit: make(chan struct{}),
		served: map[string]*atomic.Int64{}, done: map[string]bool{}, changed: make(chan struct{})}, nil
}

// Ready marks the object key, version etag, of size bytes, as verified
// and committed at path: peers may fetch it from now on. The file must
// be a regular file of that size; if it changes later (its size or
// modification time), the server stops serving it. What Written marked
// of key is dropped: the committed file serves it all.
func (s *Server) Ready(key, path, etag string, size int64) error {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("fleet ready %s: %w", key, err)
	case !st.Mode().IsRegular():
		return fmt.Errorf("fleet ready %s: %s is not a regular file", key, path)
	case st.Size() != size:
		return fmt.Errorf("fleet ready %s: %s holds %d bytes, want %d", key, path, st.Size(), size)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready[key] = held{path: path, etag: etag, size: size, modTime: st.ModTime()}
	s.dropLocked(key)
	s.changedLocked(key)
	return nil
}

// Served returns the object bytes sent to each peer so far, by the name
// its NodeHeader gave (its remote host when it gave none).
func (s *Server) Served() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.served))
	for k, v := range s.served {
		out[k] = v.Load()
	}
	return out
}

// DefaultBindWait is how long StartWithin waits, at most, for a node's
// own name to resolve to an address of its host.
const DefaultBindWait = 30 * time.Second

// Start serves on addr, which must name a host ("10.0.0.5:7070",
// "127.0.0.1:0"): a server binds only the address it is given, never
// every interface by default. It returns the address bound.
func (s *Server) Start(addr string) (string, error) {
	return s.StartWithin(context.Background(), addr, 0)
}

// StartWithin is Start for a node whose address is a name that may not
// resolve yet, or not yet to an address of this host (a Kubernetes
// pod's name in its headless Service, just after the pod started): it
// tries again every 250 ms while that is so, for wait at most or until
// ctx ends. Any other error is returned at once.
func (s *Server) StartWithin(ctx context.Context, addr string, wait time.Duration) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("fleet listen %q: %w", addr, err)
	}
	if host == "" {
		return "", fmt.Errorf("fleet listen %q: name the address to bind, not only a port", addr)
	}
	listen := s.listen
	if listen == nil {
		listen = net.Listen
	}
	deadline := time.Now().Add(wait)
	ln, err := listen("tcp", addr)
	for err != nil && notYetOurs(err) && time.Now().Before(deadline) {
		if sleep(ctx, 250*time.Millisecond) != nil {
			break
		}
		ln, err = listen("tcp", addr)
	}
	switch {
	case err != nil && wait > 0 && notYetOurs(err):
		return "", fmt.Errorf("fleet listen %s: not an address of this host after %v: %w", addr, wait, err)
	case err != nil:
		return "", fmt.Errorf("fleet listen %s: %w", addr, err)
	}
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls)
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.hs = hs
	s.mu.Unlock()
	go hs.Serve(ln) // ends with ErrServerClosed when Close is called
	return ln.Addr().String(), nil
}

// notYetOurs says a listen failed because its name did not resolve, or
// not to an address of this host: what a moment later may change.
func notYetOurs(err error) bool {
	var dns *net.DNSError
	return errors.As(err, &dns) || errors.Is(err, syscall.EADDRNOTAVAIL)
}

// Close stops a server started with Start, and its open connections;
// requests waiting for a range are answered 404 at once.
func (s *Server) Close() error {
	s.mu.Lock()
	hs := s.hs
	s.hs = nil
	if !s.closed {
		s.closed = true
		close(s.quit)
	}
	s.mu.Unlock()
	if hs == nil {
		return nil
	}
	return hs.Close()
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(TokenHeader)), s.token) != 1 {
		w.WriteHeader(http.StatusForbidden)
		return
	}
	if r.URL.Path == DonePath {
		s.serveDone(w, r)
		return
	}
	if r.URL.Path != ObjectPath {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	key, rng, match := r.URL.Query().Get("key"), r.Header.Get("Range"), r.Header.Get("If-Match")
	h, ok := s.find(r.Context(), key, rng, match)
	if !ok {
		http.NotFound(w, r)
		return
	}
	defer h.release()
	if match != "" && unquote(match) != unquote(h.etag) {
		w.WriteHeader(http.StatusPreconditionFailed)
		return
	}
	off, n, partial, err := parseRange(rng, h.size)
	if err != nil {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", h.size))
		w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		return
	}
	hd := w.Header()
	hd.Set("ETag", h.etag)
	hd.Set("Accept-Ranges", "bytes")
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Content-Length", strconv.FormatInt(n, 10))
	status := http.StatusOK
	if partial {
		hd.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, off+n-1, h.size))
		status = http.StatusPartialContent
	}
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	sent, _ := io.Copy(w, io.NewSectionReader(h.f, off, n))
	s.count(peerName(r), sent)
}

// serveDone records that the asking node finished its run.
func (s *Server) serveDone(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	node := r.Header.Get(NodeHeader)
	if node == "" {
		http.Error(w, "no "+NodeHeader, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	if !s.done[node] {
		s.done[node] = true
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// Done returns the nodes that said they finished, by the names their
// NodeHeader gave.
func (s *Server) Done() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]bool, len(s.done))
	for k := range s.done {
		out[k] = true
	}
	return out
}

// WaitDone waits until every node of nodes said it finished, or ctx
// ends; it reports whether they all did.
func (s *Server) WaitDone(ctx context.Context, nodes []string) bool {
	for {
		s.mu.Lock()
		all := true
		for _, n := range nodes {
			all = all && s.done[n]
		}
		changed := s.changed
		s.mu.Unlock()
		if all {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// open opens the file of the ready object key, marked h, if it is still
// the file that was marked; one that changed is no longer served.
func (s *Server) open(key string, h held) (servable, bool) {
	f, err := os.Open(h.path)
	if err != nil {
		return servable{}, false
	}
	st, err := f.Stat()
	if err != nil || st.Size() != h.size || !st.ModTime().Equal(h.modTime) {
		f.Close()
		s.mu.Lock()
		if s.ready[key] == h {
			delete(s.ready, key)
		}
		s.mu.Unlock()
		return servable{}, false
	}
	return servable{f: f, etag: h.etag, size: h.size, release: func() { f.Close() }}, true
}

// count adds n bytes sent to peer.
func (s *Server) count(peer string, n int64) {
	s.mu.Lock()
	c := s.served[peer]
	if c == nil {
		c = new(atomic.Int64)
		s.served[peer] = c
	}
	s.mu.Unlock()
	c.Add(n)
}

// peerName is who asked: the node its header names, else its host.
func peerName(r *http.Request) string {
	if n := r.Header.Get(NodeHeader); n != "" {
		return n
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// parseRange reads a Range header of one range, "bytes=A-B" or
// "bytes=A-", of an object of size bytes: the bytes it asks for, and
// whether it asked for a part (no header: the whole object).
func parseRange(v string, size int64) (off, n int64, partial bool, err error) {
	if v == "" {
		return 0, size, false, nil
	}
	bad := fmt.Errorf("range %q of %d bytes: not one satisfiable range", v, size)
	spec, ok := strings.CutPrefix(v, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return 0, 0, false, bad
	}
	a, b, ok := strings.Cut(spec, "-")
	if !ok || a == "" {
		return 0, 0, false, bad // suffix ranges are not part of the protocol
	}
	off, err = strconv.ParseInt(a, 10, 64)
	if err != nil || off < 0 || off >= size {
		return 0, 0, false, bad
	}
	end := size - 1
	if b != "" {
		if end, err = strconv.ParseInt(b, 10, 64); err != nil || end < off {
			return 0, 0, false, bad
		}
		end = min(end, size-1)
	}
	return off, end - off + 1, true, nil
}

// unquote drops an ETag's quotes and weak marker for comparison.
func unquote(etag string) string {
	return strings.Trim(strings.TrimPrefix(etag, "W/"), `"`)
}
