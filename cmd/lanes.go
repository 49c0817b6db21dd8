package cmd

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/nics"
	"github.com/s3pd/s3pd/pkg/s3store"
)

// newS3Lanes builds one S3 client per network card named by --nics (one
// in all without it), each with its own connection pool. Every client
// spreads its connections over all the addresses the endpoint resolves
// to, checks certificates as tls says, and logs the retries of listing
// and HEAD requests as they happen.
func newS3Lanes(ctx context.Context, f *runEnv, s config.Settings, tls s3store.TLS, bucket string) ([]job.S3Lane, error) {
	type lane struct {
		name   string
		dialer *net.Dialer
	}
	// A connection that cannot be made in 10 s fails, rather than waiting
	// for the kernel's two minutes of SYN retries.
	lanes := []lane{{name: "default", dialer: &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}}}
	if len(s.NICs) > 0 {
		ifaces, err := nics.Resolve(strings.Join(s.NICs, ","))
		if err != nil {
			return nil, err
		}
		lanes = lanes[:0]
		for _, iface := range ifaces {
			lanes = append(lanes, lane{name: iface.Name, dialer: nics.NewDialer(iface, nics.DialerOptions{})})
		}
	}
	copts := s3store.ClientOptions{
		Region: s.Region, EndpointURL: s.EndpointURL, AddressingStyle: s.AddressingStyle, Profile: s.Profile,
		NoSignRequest: s.NoSignRequest, TLS: tls, OnRetry: f.logRetry, Handshakes: f.handshakes,
		Conns: max(s.MaxConcurrentRequests/len(lanes), 1),
	}
	var out []job.S3Lane
	for _, l := range lanes {
		copts.DialContext = nics.NewSpreadDialer(l.dialer, 0, nil).DialContext
		client, err := s3store.NewClient(ctx, bucket, copts)
		if err != nil {
			return nil, err
		}
		copts.Region = client.Options().Region // detected once
		out = append(out, job.S3Lane{Name: l.name, Base: s3store.NewSource(client, s3store.Target{Bucket: bucket})})
	}
	return out, nil
}
