package cmd

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/nics"
	"github.com/s3pd/s3pd/pkg/s3store"
)

// laneProbeTimeout bounds the one connection each network card makes to
// the endpoint before a run: a card that cannot reach it is found in
// seconds, not after ten 10 s dials of the first request.
const laneProbeTimeout = 5 * time.Second

// runTransport is the run's one HTTP transport, built on first use from
// the settings and shared by every S3 client the run makes, and the
// count of the TLS handshakes of every request sent over it.
type runTransport struct {
	once       sync.Once
	t          *s3store.Transport
	err        error
	handshakes s3store.Handshakes
	// insecure: the run has warned that certificates go unchecked.
	insecure sync.Once
}

// transport returns the run's transport, built from s the first time
// (later calls return the same one, whatever s): the TLS settings, one
// lane per card of --nics (each spreading its connections over the
// endpoint's addresses), pools sized for s's request budget. A card that
// is unknown, or that cannot reach the endpoint while others can, is a
// usage error or a warning, before anything is sent.
func (f *runEnv) transport(ctx context.Context, s config.Settings) (*s3store.Transport, error) {
	f.net.once.Do(func() { f.net.t, f.net.err = newTransport(ctx, f, s) })
	return f.net.t, f.net.err
}

// handshakeCounts are the TLS handshakes of the run's requests so far.
func (f *runEnv) handshakeCounts() s3store.HandshakeCounts {
	if f.net == nil {
		return s3store.HandshakeCounts{}
	}
	return f.net.handshakes.Counts()
}

func newTransport(ctx context.Context, f *runEnv, s config.Settings) (*s3store.Transport, error) {
	opts := transportOptions(s)
	if s.NoVerifySSL && !strings.HasPrefix(s.EndpointURL, "http://") && f.Logger != nil {
		f.net.insecure.Do(func() {
			f.Logger.Warn("no_verify_ssl: the server's certificate is not checked, so anyone on the network path could read or change the requests and their answers; trust its authority with ca_bundle (--ca-bundle) instead")
		})
	}
	// Every lane counts its handshakes into the run's one counter: each
	// request is traced once, whichever client sends it.
	opts.Wrap = func(_ string, rt http.RoundTripper) http.RoundTripper { return f.net.handshakes.RoundTripper(rt) }
	lanes, err := dialLanes(s.NICs)
	if err != nil {
		if or := f.origins; or != nil && or.Get("nics").Source == config.SourcePreset {
			return nil, usageErrorf("preset %s sets nics %s, which this machine cannot use (%s): name its cards with --nics or S3PD_NICS (s3pd nics lists them)",
				or.Get("nics").Detail, strings.Join(s.NICs, ","), strings.TrimPrefix(err.Error(), "--nics "))
		}
		return nil, usageError(err)
	}
	opts.Lanes = lanes
	opts.Conns = max(s.MaxConcurrentRequests/len(opts.Lanes), 1)
	t, err := s3store.NewTransport(opts)
	if err != nil {
		return nil, usageError(err)
	}
	if len(s.NICs) > 0 {
		if err := probeLanes(ctx, f, t, s); err != nil {
			return nil, err
		}
	}
	f.exits = append(f.exits, t.Close)
	return t, nil
}

// transportOptions are the settings' part of the transport: how
// certificates are checked.
func transportOptions(s config.Settings) s3store.TransportOptions {
	return s3store.TransportOptions{CABundle: s.CABundle, Insecure: s.NoVerifySSL}
}

// probeLanes connects once over every card to the endpoint: a card that
// cannot is dropped with one warning when others can; when none can, the
// run stops with exit 2 naming the cards.
func probeLanes(ctx context.Context, f *runEnv, t *s3store.Transport, s config.Settings) error {
	addr := endpointAddr(s)
	failed := t.Probe(ctx, addr, laneProbeTimeout)
	if len(failed) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	names := make([]string, 0, len(failed))
	for n := range failed {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(failed) == len(t.Names()) {
		var why []string
		for _, n := range names {
			why = append(why, fmt.Sprintf("%s: %s", n, oneLine(failed[n].Error())))
		}
		return usageErrorf("--nics: no card reaches %s (%s)", addr, strings.Join(why, "; "))
	}
	t.Keep(func(name string) bool { return failed[name] == nil })
	for _, n := range names {
		if f.Logger != nil {
			f.Logger.Warn("network card cannot reach the endpoint: not used", zap.String("nic", n),
				zap.String("endpoint", addr), zap.String("reason", oneLine(failed[n].Error())))
		}
	}
	return nil
}

// endpointAddr is the host:port the run's requests go to first: the
// custom endpoint, else the region's S3 endpoint.
func endpointAddr(s config.Settings) string {
	if u, err := url.Parse(s.EndpointURL); err == nil && u.Host != "" {
		if u.Port() != "" {
			return u.Host
		}
		port := "443"
		if u.Scheme == "http" {
			port = "80"
		}
		return net.JoinHostPort(u.Hostname(), port)
	}
	host := "s3.amazonaws.com"
	if s.Region != "" {
		host = "s3." + s.Region + ".amazonaws.com"
		if strings.HasPrefix(s.Region, "cn-") {
			host += ".cn"
		}
	}
	return host + ":443"
}

// clientOptions are the S3 clients' options from the run's settings,
// over the run's transport: each request over the next lane in turn
// unless a caller picks one.
func clientOptions(f *runEnv, s config.Settings, t *s3store.Transport) s3store.ClientOptions {
	return s3store.ClientOptions{Region: s.Region, EndpointURL: s.EndpointURL, AddressingStyle: s.AddressingStyle, Profile: s.Profile,
		NoSignRequest: s.NoSignRequest, OnRetry: f.logRetry, Transport: t, Lane: s3store.AllLanes}
}

// s3Client is how the run's S3 clients are built: over the run's
// transport (one lane per network card named by --nics, one in all
// without it, each with its own connection pool), logging the retries
// of listing and HEAD requests as they happen.
func s3Client(ctx context.Context, f *runEnv, s config.Settings) (s3store.ClientOptions, error) {
	t, err := f.transport(ctx, s)
	if err != nil {
		return s3store.ClientOptions{}, err
	}
	return clientOptions(f, s, t), nil
}

// dialLanes are the transport's lanes: one per network card named (each
// bound to its card, and spreading its connections over the endpoint's
// addresses), or one over the default route without cards.
func dialLanes(cards []string) ([]s3store.DialLane, error) {
	if len(cards) == 0 {
		// A connection that cannot be made in 10 s fails, rather than
		// waiting for the kernel's two minutes of SYN retries.
		d := nics.NewSpreadDialer(&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}, 0, nil)
		return []s3store.DialLane{{Name: "default", Dial: d.DialContext}}, nil
	}
	ifaces, err := nics.Resolve(strings.Join(cards, ","))
	if err != nil {
		return nil, err
	}
	var out []s3store.DialLane
	for _, iface := range ifaces {
		d := nics.NewSpreadDialer(nics.NewDialer(iface, nics.DialerOptions{}), 0, nil)
		out = append(out, s3store.DialLane{Name: iface.Name, Dial: d.DialContext})
	}
	return out, nil
}
