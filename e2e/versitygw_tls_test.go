package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// selfSignedFiles writes a self-signed certificate for 127.0.0.1 and
// its key into dir and returns their paths.
func selfSignedFiles(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	return selfSignedFor(t, dir, []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"})
}

// selfSignedFor writes a self-signed certificate for ips and names and
// its key into dir and returns their paths.
func selfSignedFor(t *testing.T, dir string, ips []net.IP, names []string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "e2e"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true, IPAddresses: ips, DNSNames: names}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// versitygwTLSStore starts versitygw over HTTPS (--cert/--key, a
// self-signed certificate) on a POSIX directory, with the credentials
// the runs sign with, and returns it and the certificate to trust.
func versitygwTLSStore(t *testing.T) (*store, string) {
	t.Helper()
	exe := versitygwBinary()
	if _, err := os.Stat(exe); err != nil {
		unavailable(t, "versitygw is not built (%s): run scripts/build-versitygw.sh (.ci/run does)", exe)
	}
	certFile, keyFile := selfSignedFiles(t, t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(exe, "--access", "test", "--secret", "test", "--port", addr, "--cert", certFile, "--key", keyFile,
		"--quiet", "posix", t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	endpoint := "https://" + addr
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if !eventually(30*time.Second, func() bool {
		var resp *http.Response
		if resp, err = hc.Get(endpoint + "/"); err == nil {
			resp.Body.Close()
		}
		return err == nil
	}) {
		t.Fatalf("versitygw over TLS did not start: %v", err)
	}
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.TLSClientConfig = &tls.Config{RootCAs: pool}
		})})
	s := &store{name: "versitygw over TLS", endpoint: endpoint, bucket: "e2e-bucket", client: client, signed: true}
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(s.bucket)}); err != nil {
		t.Fatal(err)
	}
	return s, certFile
}

// TestVersitygwOverTLS: against versitygw serving HTTPS with a
// self-signed certificate and checking every signature, get, copy (an
// upload) and ls work with the certificate as the CA bundle, and fail
// without it, naming the certificate.
func TestVersitygwOverTLS(t *testing.T) {
	s, ca := versitygwTLSStore(t)
	want := map[string][]byte{"a": randomBytes(71, 20<<20), "sub/b": randomBytes(72, 300<<10), "c": randomBytes(73, 10)}
	for k, v := range want {
		s.put(t, "in/"+k, v)
	}
	bundle := []string{"--ca-bundle", ca}

	dest := t.TempDir()
	if r := run(t, nil, s.cmd("get", append(bundle, "--partsize", "8MiB", s.url("in/"), dest)...)...); r.code != 0 {
		t.Fatalf("get over TLS: exit %d\n%s", r.code, r.stderr)
	}
	sameTree(t, dest, want)

	// copy takes the bundle from AWS_CA_BUNDLE, as the SDK reads it.
	up := t.TempDir()
	upload := map[string][]byte{"x": randomBytes(74, 12<<20), "y/z": randomBytes(75, 5000)}
	for k, v := range upload {
		p := filepath.Join(up, filepath.FromSlash(k))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, v, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r := run(t, []string{"AWS_CA_BUNDLE=" + ca}, s.cmd("copy", up+"/", s.url("up/"))...); r.code != 0 {
		t.Fatalf("copy over TLS: exit %d\n%s", r.code, r.stderr)
	}
	for k, v := range upload {
		out, err := s.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String("up/" + k)})
		if err != nil {
			t.Fatalf("uploaded %s: %v", k, err)
		}
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if !bytes.Equal(got, v) {
			t.Errorf("uploaded %s: %d bytes, not what was copied", k, len(got))
		}
	}

	r := run(t, nil, s.cmd("ls", append(bundle, "--recursive", s.url(""))...)...)
	if r.code != 0 {
		t.Fatalf("ls over TLS: exit %d\n%s", r.code, r.stderr)
	}
	for _, key := range []string{"in/a", "in/sub/b", "in/c", "up/x", "up/y/z"} {
		if !strings.Contains(r.stdout, key) {
			t.Errorf("ls over TLS lacks %s:\n%s", key, r.stdout)
		}
	}

	if r := run(t, nil, s.cmd("get", "--stall-timeout", "5s", s.url("in/c"), filepath.Join(t.TempDir(), "c"))...); r.code == 0 || !strings.Contains(r.stderr, "certificate") {
		t.Errorf("get without the bundle: exit %d, %s; want a failure naming the certificate", r.code, r.stderr)
	}
}
