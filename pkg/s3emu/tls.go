package s3emu

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Key types of a self-signed certificate.
const (
	// KeyRSA is a 2048-bit RSA key, as S3's own certificates have.
	KeyRSA = "rsa"
	// KeyECDSA is a P-256 ECDSA key: quicker to make, for tests.
	KeyECDSA = "ecdsa"
)

// TLSOptions make Start serve HTTPS, HTTP/1.1 only as S3 does (a client
// that offers HTTP/2 is answered in HTTP/1.1).
type TLSOptions struct {
	// CertFile and KeyFile are a PEM certificate (chain) and its key.
	// Both empty: a self-signed certificate for 127.0.0.1, ::1 and
	// localhost is made, with a key of type Key.
	CertFile, KeyFile string
	// Key is KeyRSA (the default) or KeyECDSA, for a self-signed
	// certificate.
	Key string
}

// tlsState is what a TLS emulator keeps: its certificate and the
// handshake counters its server's hooks feed.
type tlsState struct {
	cert       tls.Certificate
	certPEM    []byte // the leaf, PEM
	selfSigned bool

	// firstDone is when the first handshake completed (UnixNano; 0: none
	// yet). Connections accepted after it could have resumed.
	firstDone atomic.Int64
	// conns holds the connections whose first request has not arrived
	// yet, each with whether it was accepted after firstDone.
	conns sync.Map // net.Conn -> bool

	handshakes, resumed, lateHandshakes, lateResumed, failed atomic.Int64
}

// newTLSState loads or makes the certificate o names.
func newTLSState(o TLSOptions) (*tlsState, error) {
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, fmt.Errorf("tls: a certificate needs both a cert file and a key file, got cert %q and key %q", o.CertFile, o.KeyFile)
	}
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: load %s and %s: %w", o.CertFile, o.KeyFile, err)
		}
		leaf := cert.Leaf
		if leaf == nil {
			if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
				return nil, fmt.Errorf("tls: parse %s: %w", o.CertFile, err)
			}
			cert.Leaf = leaf
		}
		return &tlsState{cert: cert, certPEM: pemOf(leaf.Raw),
			selfSigned: bytes.Equal(leaf.RawIssuer, leaf.RawSubject) && leaf.CheckSignatureFrom(leaf) == nil}, nil
	}
	cert, err := selfSigned(o.Key)
	if err != nil {
		return nil, err
	}
	return &tlsState{cert: cert, certPEM: pemOf(cert.Certificate[0]), selfSigned: true}, nil
}

// selfSigned makes a certificate for 127.0.0.1, ::1 and localhost that
// is its own authority, valid from an hour ago for a year.
func selfSigned(keyType string) (tls.Certificate, error) {
	var key crypto.Signer
	var err error
	switch keyType {
	case "", KeyRSA:
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	case KeyECDSA:
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		return tls.Certificate{}, fmt.Errorf("tls: unknown key type %q (want rsa or ecdsa)", keyType)
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: generate a %s key: %w", keyType, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: serial number: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"s3pd emulator"}, CommonName: "s3pd emulator (self-signed)"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: self-sign: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: parse the self-signed certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

func pemOf(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// config is the server's TLS configuration: HTTP/1.1 only.
func (t *tlsState) config() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{t.cert},
		NextProtos:   []string{"http/1.1"},
		MinVersion:   tls.VersionTLS12,
	}
}

// connState is the http.Server's ConnState hook, which counts
// handshakes: a connection is counted, with whether it resumed and
// whether it was accepted after the first handshake completed (so could
// have resumed it), at its first request or, when it never sends one
// (a client that dialled for a request another connection then served),
// when it closes with its handshake complete. A TLS 1.3 server finishes
// its side before the client has checked the certificate, so a hook on
// the handshake itself (tls.Config.VerifyConnection) would also count
// the handshakes that the client then rejects.
func (t *tlsState) connState(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		first := t.firstDone.Load()
		t.conns.Store(c, first != 0 && time.Now().UnixNano() > first)
	case http.StateActive, http.StateClosed, http.StateHijacked:
		late, ok := t.conns.LoadAndDelete(c)
		if !ok {
			return // counted at its first request
		}
		tc, ok := c.(*tls.Conn)
		if !ok {
			return
		}
		if cs := tc.ConnectionState(); cs.HandshakeComplete {
			t.count(cs.DidResume, late.(bool))
		}
	}
}

// count counts one completed handshake.
func (t *tlsState) count(resumed, late bool) {
	t.handshakes.Add(1)
	if resumed {
		t.resumed.Add(1)
	}
	if late {
		t.lateHandshakes.Add(1)
		if resumed {
			t.lateResumed.Add(1)
		}
	}
	t.firstDone.CompareAndSwap(0, time.Now().UnixNano())
}

// errorLog counts the TLS handshakes that failed (the http.Server logs
// each one) and drops the rest of its log, as a benchmark's server
// should not print.
type errorLog struct {
	failed  *atomic.Int64
	changed func() // after each count
}

func (e errorLog) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("TLS handshake error")) {
		e.failed.Add(1)
		e.changed()
	}
	return len(p), nil
}

// reset zeroes the counters and forgets the first handshake, so the
// next client's first handshake starts the count of those that could
// resume.
func (t *tlsState) reset() {
	for _, a := range []*atomic.Int64{&t.handshakes, &t.resumed, &t.lateHandshakes, &t.lateResumed, &t.failed, &t.firstDone} {
		a.Store(0)
	}
	t.conns.Clear()
}

// TLS reports whether the emulator serves HTTPS.
func (s *Server) TLS() bool { return s.tls != nil }

// CertificatePEM returns the certificate the emulator serves, PEM
// encoded (nil without TLS): with a self-signed one, the whole of what a
// client must trust (--ca-bundle).
func (s *Server) CertificatePEM() []byte {
	if s.tls == nil {
		return nil
	}
	return bytes.Clone(s.tls.certPEM)
}

// SelfSigned reports whether the served certificate is its own
// authority, so that CertificatePEM is all a client needs to trust.
func (s *Server) SelfSigned() bool { return s.tls != nil && s.tls.selfSigned }

// WriteCertificate writes CertificatePEM to path (mode 0644), through a
// temporary file renamed into place, so a client never reads half of it.
func (s *Server) WriteCertificate(path string) error {
	if s.tls == nil {
		return fmt.Errorf("write certificate %s: the emulator serves no TLS", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".s3emu-cert-*")
	if err != nil {
		return fmt.Errorf("write certificate %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(s.tls.certPEM); err != nil {
		tmp.Close()
		return fmt.Errorf("write certificate %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write certificate %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write certificate %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write certificate %s: %w", path, err)
	}
	return nil
}

// CertPool returns a pool that trusts the served certificate (nil
// without TLS).
func (s *Server) CertPool() *x509.CertPool {
	if s.tls == nil {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AddCert(s.tls.cert.Leaf)
	return pool
}
