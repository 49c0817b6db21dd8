package transfer

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"testing"
)

// TestCertificateErrorsArePermanent: a certificate that does not verify
// is not retried, though it arrives as a net.Error.
func TestCertificateErrorsArePermanent(t *testing.T) {
	cert := &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}
	err := fmt.Errorf("get s3://b/k: %w", &url.Error{Op: "Get", URL: "https://s3.example/b/k", Err: cert})
	if Retriable(err) {
		t.Errorf("Retriable(%v) = true, want false", err)
	}
}
