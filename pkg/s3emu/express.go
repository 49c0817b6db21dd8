package s3emu

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// DefaultSessionLifetime is how long a directory bucket's session
// credentials live when Options.SessionLifetime is 0: five minutes, as
// S3 Express One Zone grants them.
const DefaultSessionLifetime = 5 * time.Minute

// faultSession is the method of fault rules that answer CreateSession.
const faultSession = "SESSION"

// directorySuffix ends every directory bucket's name:
// BASE--ZONEID--x-s3.
const directorySuffix = "--x-s3"

// IsDirectoryBucket reports whether name has the form of a directory
// bucket (S3 Express One Zone), BASE--ZONEID--x-s3.
func IsDirectoryBucket(name string) bool {
	base, ok := strings.CutSuffix(name, directorySuffix)
	if !ok {
		return false
	}
	i := strings.LastIndex(base, "--")
	return i > 0 && i+2 < len(base)
}

// sessions are the session credentials CreateSession has issued, by
// access key id.
type sessions struct {
	lifetime time.Duration
	now      func() time.Time
	mu       sync.Mutex
	byKey    map[string]session
	created  int64
}

// session is one set of session credentials of one bucket.
type session struct {
	bucket, secret, token string
	expires               time.Time
}

func newSessions(lifetime time.Duration) *sessions {
	if lifetime <= 0 {
		lifetime = DefaultSessionLifetime
	}
	return &sessions{lifetime: lifetime, now: time.Now, byKey: map[string]session{}}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// create issues credentials for bucket.
func (ss *sessions) create(bucket string) (akid string, s session) {
	akid = "S3EMUSESSION" + strings.ToUpper(randomHex(6))
	s = session{bucket: bucket, secret: randomHex(20), token: randomHex(32), expires: ss.now().Add(ss.lifetime).Truncate(time.Second)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, old := range ss.byKey { // forget the expired, so a long run stays small
		if !ss.now().Before(old.expires) {
			delete(ss.byKey, k)
		}
	}
	ss.byKey[akid] = s
	ss.created++
	return akid, s
}

func (ss *sessions) lookup(akid string) (session, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.byKey[akid]
	return s, ok
}

// SessionsCreated returns how many CreateSession calls the emulator has
// answered.
func (s *Server) SessionsCreated() int64 {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	return s.sessions.created
}

// createSessionResult is CreateSession's answer.
type createSessionResult struct {
	XMLName     xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CreateSessionResult"`
	Credentials struct {
		SessionToken, SecretAccessKey, AccessKeyId string
		Expiration                                 string
	}
}

// serveDirectory answers what only a directory bucket answers, or
// refuses a request to one: CreateSession (GET ?session) signed for the
// s3express service, a copy (CopyObject, UploadPartCopy) signed for it
// with base credentials, and every other request only with a live
// session's x-amz-s3session-token and a valid s3express signature. It reports
// whether it answered; when not, the request is served as any other.
func (s *Server) serveDirectory(w *respWriter, r *http.Request, bucket string, q url.Values) bool {
	auth, err := parseAuthorization(r.Header.Get("Authorization"))
	if err != nil {
		s.writeError(w, r, err)
		return true
	}
	if auth.service != "s3express" {
		s.writeError(w, r, &apiError{http.StatusBadRequest, "AuthorizationHeaderMalformed",
			"directory buckets are signed for the s3express service, not " + auth.service})
		return true
	}
	if _, ok := q["session"]; ok && r.Method == http.MethodGet {
		// A fault rule for method SESSION answers CreateSession (a
		// missing s3express:CreateSession permission, say).
		if s.faults != nil {
			if st, ok := s.faults.match(faultSession, bucket, "", "").(Status); ok {
				s.c.faults.Add(1)
				s.writeError(w, r, &apiError{st.Code, st.s3Code(), st.message()})
				return true
			}
		}
		// Any base credentials may create a session: the emulator knows
		// no secret of theirs to check a signature against.
		akid, ses := s.sessions.create(bucket)
		var res createSessionResult
		res.Credentials.AccessKeyId, res.Credentials.SecretAccessKey = akid, ses.secret
		res.Credentials.SessionToken, res.Credentials.Expiration = ses.token, ses.expires.UTC().Format(time.RFC3339)
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, xml.Header)
		xml.NewEncoder(w).Encode(res)
		return true
	}
	// CopyObject and UploadPartCopy are signed with the base credentials,
	// not a session, as S3 Express wants them (the SDK does the same).
	if r.Method != http.MethodPut || r.Header.Get("X-Amz-Copy-Source") == "" {
		if err := s.checkSession(r, bucket, auth); err != nil {
			s.writeError(w, r, err)
			return true
		}
	}
	// The ETags a client sends back are the opaque ones it was given.
	for _, h := range []string{"If-Match", "If-None-Match"} {
		if v := r.Header.Get(h); v != "" {
			r.Header.Set(h, opaqueETag(v))
		}
	}
	w.opaque = true
	return false
}

// opaqueETag is the ETag a directory bucket shows for etag: of an MD5's
// form but not the bytes' MD5, as S3 Express's ETags are, so that a
// client that takes it for one fails its check. Each hex digit d becomes
// 15-d (before a "-N" part count), which is its own inverse: the same
// call turns an If-Match back into the stored ETag.
func opaqueETag(etag string) string {
	b := []byte(etag)
	for i, c := range b {
		switch {
		case c == '-':
			return string(b)
		case '0' <= c && c <= '9':
			b[i] = hexDigits[15-(c-'0')]
		case 'a' <= c && c <= 'f':
			b[i] = hexDigits[15-(c-'a'+10)]
		}
	}
	return string(b)
}

const hexDigits = "0123456789abcdef"

// opaqueHeader makes the ETag of a directory bucket's answer opaque.
func opaqueHeader(h http.Header) {
	if v := h.Get("ETag"); v != "" {
		h.Set("ETag", opaqueETag(v))
	}
}

// authorization is a parsed SigV4 Authorization header.
type authorization struct {
	akid, date, region, service string
	signed                      []string
	signature                   string
}

func parseAuthorization(h string) (authorization, error) {
	var a authorization
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 ")
	if !ok {
		return a, &apiError{http.StatusForbidden, "AccessDenied", "directory buckets need a SigV4 signature"}
	}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 5 {
				return a, &apiError{http.StatusBadRequest, "AuthorizationHeaderMalformed", "bad credential scope " + v}
			}
			a.akid, a.date, a.region, a.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			a.signed = strings.Split(v, ";")
		case "Signature":
			a.signature = v
		}
	}
	if a.akid == "" || a.signature == "" || len(a.signed) == 0 {
		return a, &apiError{http.StatusBadRequest, "AuthorizationHeaderMalformed", "incomplete Authorization header"}
	}
	return a, nil
}

// checkSession checks that r carries a live session of bucket and the
// signature of that session's secret.
func (s *Server) checkSession(r *http.Request, bucket string, a authorization) error {
	token := r.Header.Get("X-Amz-S3session-Token")
	if token == "" {
		return &apiError{http.StatusForbidden, "AccessDenied", "directory bucket requests need an x-amz-s3session-token from CreateSession"}
	}
	ses, ok := s.sessions.lookup(a.akid)
	if !ok || ses.token != token || ses.bucket != bucket {
		return &apiError{http.StatusForbidden, "AccessDenied", "the session token is not valid for this bucket"}
	}
	if !s.sessions.now().Before(ses.expires) {
		return &apiError{http.StatusBadRequest, "ExpiredToken", "The provided token has expired."}
	}
	if !slices.Contains(a.signed, "x-amz-s3session-token") {
		return &apiError{http.StatusForbidden, "AccessDenied", "the session token must be signed"}
	}
	want, err := expectedSignature(r, a, aws.Credentials{AccessKeyID: a.akid, SecretAccessKey: ses.secret})
	if err != nil {
		return err
	}
	if want != a.signature {
		return &apiError{http.StatusForbidden, "SignatureDoesNotMatch",
			"The request signature we calculated does not match the signature you provided."}
	}
	return nil
}

// expectedSignature signs a copy of r, made of the headers the client
// signed, with the SDK's signer, and returns its signature.
func expectedSignature(r *http.Request, a authorization, creds aws.Credentials) (string, error) {
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || at.Format("20060102") != a.date {
		return "", &apiError{http.StatusForbidden, "AccessDenied", "X-Amz-Date is missing or not of the credential's day"}
	}
	u, err := url.Parse("http://" + r.Host + r.RequestURI)
	if err != nil {
		return "", &apiError{http.StatusBadRequest, "InvalidURI", err.Error()}
	}
	c, _ := http.NewRequest(r.Method, u.String(), nil)
	c.URL = u
	c.Host = r.Host
	for _, name := range a.signed {
		switch name {
		case "host":
		case "content-length":
			c.ContentLength = r.ContentLength
		default:
			c.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err := signer.SignHTTP(context.Background(), creds, c, payload, a.service, a.region, at); err != nil {
		return "", err
	}
	_, sig, _ := strings.Cut(c.Header.Get("Authorization"), "Signature=")
	return sig, nil
}

// directoryListRule refuses a listing a directory bucket refuses: a
// delimiter other than "/", or a prefix that does not end in it.
func directoryListRule(prefix, delim string) error {
	if delim != "" && delim != "/" {
		return &apiError{http.StatusBadRequest, "InvalidArgument", "directory buckets support only the delimiter '/'"}
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		return &apiError{http.StatusBadRequest, "InvalidArgument", "directory buckets support only prefixes that end in the delimiter '/'"}
	}
	return nil
}

// unorder puts a page of a directory bucket's listing out of key order,
// as S3 Express lists: by a hash of each key, the same every time.
func unorder(res *listResult) {
	h := func(s string) uint64 { f := fnv.New64a(); f.Write([]byte(s)); return f.Sum64() }
	slices.SortFunc(res.Contents, func(a, b listContent) int { return cmpU(h(a.Key), h(b.Key)) })
	slices.SortFunc(res.CommonPrefixes, func(a, b string) int { return cmpU(h(a), h(b)) })
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
