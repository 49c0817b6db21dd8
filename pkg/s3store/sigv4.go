package s3store

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Signer signs requests with AWS Signature Version 4 in headers, exactly
// as the SDK's v4.Signer does with DisableURIPathEscaping (S3 signs the
// path as sent); TestSigV4MatchesSDK holds it to the SDK's Authorization
// header. It does the same work with a fraction of the SDK's
// allocations and keeps the day's derived key as HMAC pads, so signing
// stays a small share of a GET's CPU (BenchmarkSign measures it).
// The zero value is ready; it must not be copied.
type Signer struct {
	key atomic.Pointer[derivedKey]
	buf sync.Pool // *[]byte, the canonical request and the string to sign
}

// derivedKey is the signing key of one access key, day, region and
// service.
type derivedKey struct {
	akid, secret, date, region, service string
	ipad, opad                          [sha256.BlockSize]byte // the key xor the HMAC pads
}

// ignoredHeaders are the headers the SDK leaves out of the signature.
var ignoredHeaders = map[string]bool{
	"Authorization": true, "User-Agent": true, "X-Amzn-Trace-Id": true,
	"Expect": true, "Transfer-Encoding": true,
}

// lowerNames are the lower-case forms of the headers s3pd sends, so that
// signing them does not allocate.
var lowerNames = map[string]string{
	"Range": "range", "If-Match": "if-match", "X-Amz-Date": "x-amz-date",
	"X-Amz-Content-Sha256": "x-amz-content-sha256", "X-Amz-Security-Token": "x-amz-security-token",
	"X-Amz-Checksum-Mode": "x-amz-checksum-mode", "X-Amz-Request-Payer": "x-amz-request-payer",
	"X-Amz-Expected-Bucket-Owner": "x-amz-expected-bucket-owner", "Accept-Encoding": "accept-encoding",
	"X-Amz-S3session-Token":                           "x-amz-s3session-token",
	"X-Amz-Server-Side-Encryption-Customer-Algorithm": "x-amz-server-side-encryption-customer-algorithm",
	"X-Amz-Server-Side-Encryption-Customer-Key":       "x-amz-server-side-encryption-customer-key",
	"X-Amz-Server-Side-Encryption-Customer-Key-Md5":   "x-amz-server-side-encryption-customer-key-md5",
}

const sigAlgorithm = "AWS4-HMAC-SHA256"

// Sign adds X-Amz-Date, X-Amz-Security-Token (with a session token) and
// Authorization to r for service in region at now. Like the SDK's signer
// it drops a default port from r.Host and rewrites r.URL.RawQuery in its
// canonical form.
func (s *Signer) Sign(r *http.Request, creds aws.Credentials, payloadHash, service, region string, now time.Time) {
	var stamp [16]byte
	amzDate := string(now.UTC().AppendFormat(stamp[:0], "20060102T150405Z"))
	date := amzDate[:8]
	r.Header["X-Amz-Date"] = []string{amzDate}
	if creds.SessionToken != "" {
		r.Header["X-Amz-Security-Token"] = []string{creds.SessionToken}
	}
	host := r.URL.Host
	if r.Host != "" {
		host = r.Host
	}
	if h := (&url.URL{Host: host}); defaultPort(r.URL.Scheme, h.Port()) {
		host = h.Hostname()
		r.Host = host
	}
	if r.URL.RawQuery != "" {
		r.URL.RawQuery = canonicalQuery(r.URL.Query())
	}

	type header struct {
		name   string // lower case
		values []string
	}
	var hs [16]header
	headers := append(hs[:0], header{name: "host"})
	if r.ContentLength > 0 {
		headers = append(headers, header{name: "content-length"})
	}
	for k, v := range r.Header {
		if ignoredHeaders[k] || strings.EqualFold(k, "Content-Length") {
			continue
		}
		lower, ok := lowerNames[k]
		if !ok {
			lower = strings.ToLower(k)
		}
		headers = append(headers, header{lower, v})
	}
	slices.SortFunc(headers, func(a, b header) int { return strings.Compare(a.name, b.name) })

	bp, _ := s.buf.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer s.buf.Put(bp)
	b := append((*bp)[:0], r.Method...)
	b = append(b, '\n')
	b = append(b, uriPath(r.URL)...)
	b = append(b, '\n')
	b = append(b, r.URL.RawQuery...)
	var shArray [256]byte
	signedHeaders := shArray[:0]
	for i, h := range headers {
		if i > 0 && h.name == headers[i-1].name {
			b = append(b, ',') // a second spelling of the same name
		} else {
			if i > 0 {
				signedHeaders = append(signedHeaders, ';')
			}
			signedHeaders = append(signedHeaders, h.name...)
			b = append(b, '\n')
			b = append(b, h.name...)
			b = append(b, ':')
		}
		switch h.name {
		case "host":
			b = append(b, stripExcessSpaces(host)...)
		case "content-length":
			b = strconv.AppendInt(b, r.ContentLength, 10)
		default:
			for j, v := range h.values {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, strings.TrimSpace(stripExcessSpaces(v))...)
			}
		}
	}
	b = append(b, "\n\n"...)
	b = append(b, signedHeaders...)
	b = append(b, '\n')
	b = append(b, payloadHash...)
	canonicalSum := sha256.Sum256(b)

	key := s.signingKey(creds, date, region, service)
	// The string to sign, after the key's inner pad: HMAC-SHA256 by hand,
	// with the pads made once a day.
	b = append(b[:0], key.ipad[:]...)
	b = append(b, sigAlgorithm+"\n"...)
	b = append(b, amzDate...)
	b = append(b, '\n')
	scopeAt := len(b)
	b = append(b, date...)
	b = append(b, '/')
	b = append(b, region...)
	b = append(b, '/')
	b = append(b, service...)
	b = append(b, "/aws4_request"...)
	scopeEnd := len(b)
	b = append(b, '\n')
	b = hex.AppendEncode(b, canonicalSum[:])
	inner := sha256.Sum256(b)
	var outer [sha256.BlockSize + sha256.Size]byte
	copy(outer[:], key.opad[:])
	copy(outer[sha256.BlockSize:], inner[:])
	signature := sha256.Sum256(outer[:])

	scope := string(b[scopeAt:scopeEnd])
	b = append(b[:0], sigAlgorithm+" Credential="...)
	b = append(b, creds.AccessKeyID...)
	b = append(b, '/')
	b = append(b, scope...)
	b = append(b, ", SignedHeaders="...)
	b = append(b, signedHeaders...)
	b = append(b, ", Signature="...)
	b = hex.AppendEncode(b, signature[:])
	r.Header["Authorization"] = []string{string(b)}
	*bp = b
}

// signingKey returns the key of creds for date, region and service,
// derived once a day (four HMACs), as HMAC pads.
func (s *Signer) signingKey(creds aws.Credentials, date, region, service string) *derivedKey {
	if k := s.key.Load(); k != nil && k.akid == creds.AccessKeyID && k.secret == creds.SecretAccessKey &&
		k.date == date && k.region == region && k.service == service {
		return k
	}
	key := hmacSHA256([]byte("AWS4"+creds.SecretAccessKey), date)
	for _, part := range []string{region, service, "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	k := &derivedKey{akid: creds.AccessKeyID, secret: creds.SecretAccessKey, date: date, region: region, service: service}
	for i := range k.ipad {
		k.ipad[i], k.opad[i] = 0x36, 0x5c
	}
	for i, c := range key { // 32 bytes, shorter than a block
		k.ipad[i] ^= c
		k.opad[i] ^= c
	}
	s.key.Store(k)
	return k
}

func hmacSHA256(key []byte, data string) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(data))
	return mac.Sum(nil)
}

// canonicalQuery encodes q sorted by key, then value, with spaces as
// %20, as the signature covers it.
func canonicalQuery(q url.Values) string {
	type param struct{ k, v string }
	params := make([]param, 0, len(q))
	for k, vs := range q {
		ek := escapeQuery(k)
		for _, v := range vs {
			params = append(params, param{ek, escapeQuery(v)})
		}
	}
	slices.SortFunc(params, func(a, b param) int {
		if c := strings.Compare(a.k, b.k); c != 0 {
			return c
		}
		return strings.Compare(a.v, b.v)
	})
	var sb strings.Builder
	for i, p := range params {
		if i > 0 {
			sb.WriteByte('&')
		}
		sb.WriteString(p.k)
		sb.WriteByte('=')
		sb.WriteString(p.v)
	}
	return sb.String()
}

func escapeQuery(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

// uriPath is the path the signature covers: the escaped path as sent
// ("/" if empty), or the path part of an opaque URL.
func uriPath(u *url.URL) string {
	p := u.EscapedPath()
	if u.Opaque != "" {
		p = ""
		opaque, _, _ := strings.Cut(u.Opaque, "?")
		opaque = strings.TrimPrefix(opaque, "//")
		if i := strings.IndexByte(opaque, '/'); i >= 0 {
			p = opaque[i:]
		}
	}
	if p == "" {
		return "/"
	}
	return p
}

// stripExcessSpaces trims s and folds each run of spaces into one.
func stripExcessSpaces(s string) string {
	s = strings.Trim(s, " ")
	if !strings.Contains(s, "  ") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' && i > 0 && s[i-1] == ' ' {
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

// defaultPort reports whether port is scheme's own, which the signed
// host leaves out.
func defaultPort(scheme, port string) bool {
	scheme = strings.ToLower(scheme)
	return scheme == "http" && port == "80" || scheme == "https" && port == "443"
}
