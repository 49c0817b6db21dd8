package job

import (
	"net"
	"strings"
	"time"

	"github.com/s3pd/s3pd/pkg/nics"
	"github.com/s3pd/s3pd/pkg/s3store"
)

// Transport is the run's one HTTP transport: the TLS settings, one lane
// per network card, the pools; every S3 client of a run is built over
// it.
type Transport = s3store.Transport

// TransportOptions are how the transport is built.
type TransportOptions = s3store.TransportOptions

// DialLane is one lane of the transport: a name and how it dials.
type DialLane = s3store.DialLane

// Handshakes counts the TLS handshakes of the requests sent over a
// transport; HandshakeCounts is what it counted.
type (
	Handshakes      = s3store.Handshakes
	HandshakeCounts = s3store.HandshakeCounts
)

// ClientOptions are how S3 clients are built over the transport.
type ClientOptions = s3store.ClientOptions

// AllLanes makes a client send each request over the next lane in turn.
const AllLanes = s3store.AllLanes

// NewTransport builds the run's transport.
func NewTransport(opts TransportOptions) (*Transport, error) { return s3store.NewTransport(opts) }

// DialLanes are the transport's lanes: one per network card named (each
// bound to its card, and spreading its connections over the endpoint's
// addresses), or one over the default route without cards.
func DialLanes(cards []string) ([]DialLane, error) {
	if len(cards) == 0 {
		// A connection that cannot be made in 10 s fails, rather than
		// waiting for the kernel's two minutes of SYN retries.
		d := nics.NewSpreadDialer(&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}, 0, nil)
		return []DialLane{{Name: "default", Dial: d.DialContext}}, nil
	}
	ifaces, err := nics.Resolve(strings.Join(cards, ","))
	if err != nil {
		return nil, err
	}
	var out []DialLane
	for _, iface := range ifaces {
		d := nics.NewSpreadDialer(nics.NewDialer(iface, nics.DialerOptions{}), 0, nil)
		out = append(out, DialLane{Name: iface.Name, Dial: d.DialContext})
	}
	return out, nil
}
