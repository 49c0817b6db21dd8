package fleet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// NewClient returns the client a node sends its requests to peers with:
// a transport of its own (peers' connections never mix with S3's), no
// proxy (peers are on the fleet's own network). With tlsConf set, every
// request goes over TLS with it (its roots trust the peers'
// certificates): the protocol's URLs are written http://, the fleet's
// transport decides the scheme.
func NewClient(tlsConf *tls.Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	if tlsConf == nil {
		return &http.Client{Transport: tr}
	}
	tr.TLSClientConfig = tlsConf
	return &http.Client{Transport: overTLS{tr}}
}

// overTLS sends http:// requests as https://.
type overTLS struct{ rt http.RoundTripper }

func (t overTLS) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "http" {
		r = r.Clone(r.Context())
		r.URL.Scheme = "https"
	}
	return t.rt.RoundTrip(r)
}

// LingerOptions configure Server.Linger.
type LingerOptions struct {
	// Self is this node's index, Peers the fleet's servers by node
	// index (Peers[Self] is this node's own, never told).
	Self  int
	Peers []string
	// Token is the fleet's shared secret.
	Token string
	// Client sends the requests (default NewClient(nil)).
	Client *http.Client
	// Max is how long the server keeps serving at most, waiting for
	// the peers (0: it tells them once and does not wait).
	Max time.Duration
	// Retry is the pause before a peer that could not be told is told
	// again (default a second).
	Retry time.Duration
}

// Linger is a node's step after its own run: it tells every peer it
// finished (POST DonePath), and keeps s serving until every peer said
// it finished too, Max has passed or ctx ends. A peer that could not be
// told (not started yet, restarting) is told again every Retry
// meanwhile, so that it does not wait for this node in turn; Linger
// returns once every peer said it finished and was told so (or Max
// passed). It returns the peers that did not say they finished, by node index. It
// does not close s.
func (s *Server) Linger(ctx context.Context, o LingerOptions) []int {
	if o.Client == nil {
		o.Client = NewClient(nil)
	}
	if o.Retry <= 0 {
		o.Retry = time.Second
	}
	wait := o.Max
	if wait <= 0 {
		wait = 5 * time.Second // to tell each peer once
	}
	lctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var names []string
	var wg sync.WaitGroup
	for i, addr := range o.Peers {
		if i == o.Self {
			continue
		}
		name := strconv.Itoa(i)
		names = append(names, name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.tell(lctx, o, addr, name)
		}()
	}
	if o.Max > 0 {
		s.WaitDone(lctx, names)
	}
	wg.Wait()
	done := s.Done()
	var missing []int
	for i := range o.Peers {
		if i != o.Self && !done[strconv.Itoa(i)] {
			missing = append(missing, i)
		}
	}
	return missing
}

// tell tells the peer at addr, node name, that this node finished, again
// every Retry while it fails, until ctx ends: a peer that is not up yet
// (or restarting) then hears it once it is. One that said it finished
// itself and cannot be reached has stopped serving: nothing waits there;
// one whose certificate is not trusted never will be.
func (s *Server) tell(ctx context.Context, o LingerOptions, addr, name string) {
	for {
		err := tellDone(ctx, o, addr)
		var untrusted *tls.CertificateVerificationError
		if err == nil || o.Max <= 0 || s.Done()[name] || errors.As(err, &untrusted) || sleep(ctx, o.Retry) != nil {
			return
		}
	}
}

// tellDone tells the peer at addr that this node finished. A peer that
// refuses the token is not asked again (nil).
func tellDone(ctx context.Context, o LingerOptions, addr string) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, "http://"+addr+DonePath, nil)
	if err != nil {
		return err
	}
	req.Header.Set(TokenHeader, o.Token)
	req.Header.Set(NodeHeader, strconv.Itoa(o.Self))
	resp, err := o.Client.Do(req)
	if err != nil {
		return fmt.Errorf("tell %s done: %w", addr, err)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNoContent, http.StatusForbidden:
		return nil
	}
	return fmt.Errorf("tell %s done: %s", addr, resp.Status)
}

// AwaitPeers waits until the server of every peer accepts a
// connection, trying each again every 50 ms, for max at most or until
// ctx ends; it returns the peers that did not, by node index. Nodes of
// one fleet start at slightly different times: a node that waits for
// the others before its run does not find a peer's server not started
// yet and bypass it for the whole run.
func AwaitPeers(ctx context.Context, self int, peers []string, max time.Duration) []int {
	actx, cancel := context.WithTimeout(ctx, max)
	defer cancel()
	up := make([]bool, len(peers))
	var wg sync.WaitGroup
	for i, addr := range peers {
		if i == self {
			up[i] = true
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var d net.Dialer
			for {
				c, err := d.DialContext(actx, "tcp", addr)
				if err == nil {
					c.Close()
					up[i] = true
					return
				}
				if sleep(actx, 50*time.Millisecond) != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	var missing []int
	for i, ok := range up {
		if !ok {
			missing = append(missing, i)
		}
	}
	return missing
}
