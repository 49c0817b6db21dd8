package s3emu

import (
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/johannesboyne/gofakes3"
)

// statsPath serves the counters as JSON; "_" cannot start a bucket name.
const statsPath = "/_s3emu/stats"

// apiError is an S3 error the emulator answers itself.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

// regionError is an apiError whose body names the bucket's Region.
type regionError struct {
	*apiError
	region string
}

func (e *regionError) Unwrap() error { return e.apiError }

// The answers to a request signed for another region than its bucket's.
const (
	// WrongRegionMoved is 301 PermanentRedirect with x-amz-bucket-region,
	// as S3 answers at another region's endpoint.
	WrongRegionMoved = "301"
	// WrongRegionMalformed is 400 AuthorizationHeaderMalformed with
	// x-amz-bucket-region and the bucket's Region in the error body, as S3
	// answers at the bucket's own endpoint (a HEAD's answer has no body).
	WrongRegionMalformed = "400"
	// WrongRegionMalformedBodyOnly is WrongRegionMalformed without the
	// header: only the error body names the region.
	WrongRegionMalformedBodyOnly = "400-body"
)

// wrongRegion answers a request for bucket's region home signed for signed.
// It reports whether the answer carries x-amz-bucket-region.
func (s *Server) wrongRegion(home, signed string) (header bool, answer error) {
	switch s.opts.WrongRegion {
	case WrongRegionMalformed, WrongRegionMalformedBodyOnly:
		return s.opts.WrongRegion == WrongRegionMalformed, &regionError{&apiError{http.StatusBadRequest, "AuthorizationHeaderMalformed",
			"The authorization header is malformed; the region '" + signed + "' is wrong; expecting '" + home + "'"}, home}
	}
	return true, &apiError{http.StatusMovedPermanently, "PermanentRedirect",
		"The bucket you are attempting to access must be addressed using the specified endpoint."}
}

// respWriter counts the bytes of a response and remembers its status.
type respWriter struct {
	http.ResponseWriter
	sent   *atomic.Int64
	status int
	n      int64
	opaque bool // a directory bucket's answer: its ETag is made opaque
	// cors sets the CORS headers of the answer before it is sent.
	cors func(http.Header)
	// changed signals a change of the server's state (Await).
	changed func()
}

func (w *respWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		if w.opaque {
			opaqueHeader(w.Header())
		}
		if w.cors != nil {
			w.cors(w.Header())
		}
	}
	w.ResponseWriter.WriteHeader(code)
	w.changed()
}

func (w *respWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	w.sent.Add(int64(n))
	w.changed()
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (w *respWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countingBody counts the bytes read from a request body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// ServeHTTP serves one S3 request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer s.c.changes.signal() // last: once the request's counts and log entry are done
	s.c.requests.Add(1)
	in := s.c.inFlight.Add(1)
	defer s.c.inFlight.Add(-1)
	for m := s.c.maxInFlight.Load(); in > m && !s.c.maxInFlight.CompareAndSwap(m, in); m = s.c.maxInFlight.Load() {
	}
	s.c.changes.signal() // one more in flight
	origin := r.Header.Get("Origin")
	rw := &respWriter{ResponseWriter: w, sent: &s.c.sent, changed: s.c.changes.signal, cors: func(h http.Header) { s.corsHeaders(h, origin) }}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &countingBody{ReadCloser: r.Body, n: &s.c.received}
	}
	bucket, key := splitPath(r.URL.Path)
	logIdx := -1
	var fault Action
	if s.opts.LogRequests {
		logIdx = s.logArrival(r, bucket, key)
		if logIdx >= 0 {
			defer func() {
				f := ""
				if fault != nil {
					f = fault.String()
				}
				s.logDone(logIdx, rw.status, rw.n, f)
			}()
		}
	}
	if s.guard(rw, r, key) {
		return
	}
	continueExpected(w, r)
	rw.Header().Set("X-Amz-Request-Id", strconv.FormatInt(s.c.requests.Load(), 16))
	if key != "" && !utf8.ValidString(key) {
		s.writeError(rw, r, &apiError{http.StatusBadRequest, "InvalidURI", "Couldn't parse the specified URI: the key is not UTF-8."})
		return
	}
	if r.URL.Path == statsPath {
		s.serveStats(rw, r)
		return
	}
	q := r.URL.Query()
	if q.Get("versionId") == "null" {
		// An unversioned bucket's objects are each their one version,
		// "null", which gofakes3 (without versioning) does not know.
		q.Del("versionId")
		r.URL.RawQuery = q.Encode()
	}
	if IsDirectoryBucket(bucket) && s.serveDirectory(rw, r, bucket, q) {
		return
	}
	op := classify(r, bucket, key, q)
	if s.limit != nil && !s.limit.admit(in, op == opGet || op == opHead, bucket, key, s.limit.Now()) {
		// S3 answers SlowDown after its usual latency; the request is in
		// flight while it waits.
		s.c.throttled.Add(1)
		if op == opGet {
			s.c.gets.Add(1)
			s.c.throttledGets.Add(1)
		}
		fault = slowDown
		sleepCtx(r.Context(), s.opts.TTFB)
		s.writeError(rw, r, &apiError{slowDown.Code, slowDown.S3Code, slowDown.Message})
		return
	}
	sleepCtx(r.Context(), s.opts.TTFB)
	if home := s.opts.Regions[bucket]; home != "" {
		rw.Header().Set("X-Amz-Bucket-Region", home)
		if signed := signedRegion(r); signed != "" && signed != home {
			header, answer := s.wrongRegion(home, signed)
			if !header {
				rw.Header().Del("X-Amz-Bucket-Region")
			}
			s.writeError(rw, r, answer)
			return
		}
	}

	switch op {
	case opGet:
		s.c.gets.Add(1)
	case opHead:
		s.c.heads.Add(1)
	case opList:
		s.c.lists.Add(1)
	case opPut, opUploadPart, opUploadPartCopy, opCopy:
		s.c.puts.Add(1)
	}
	if s.faults != nil {
		if m := op.faultMethod(); m != "" {
			fault = s.faults.match(m, bucket, key, r.Header.Get("Range"))
		}
		if fault != nil {
			s.c.faults.Add(1)
			switch a := fault.(type) {
			case Status:
				s.writeError(rw, r, &apiError{a.Code, a.s3Code(), a.message()})
				return
			case Replace:
				s.faults.replace(key)
			case Delay:
				sleepCtx(r.Context(), a.For)
			}
		}
	}
	if fault == nil && op == opGet && s.stall != nil && s.stall.pick(bucket, key, r.Header.Get("Range")) {
		s.c.stalls.Add(1)
		fault = midStall{For: s.stall.For}
	}
	if s.synth != nil && bucket == DefaultBucket && op.writes() {
		s.writeError(rw, r, &apiError{http.StatusForbidden, "AccessDenied", "the synthetic bucket is read-only"})
		return
	}
	var err error
	switch op {
	case opGet, opHead:
		err = s.serveObject(rw, r, bucket, key, fault)
	case opList:
		err = s.serveList(rw, r, bucket, q, fault)
	case opPut:
		err = s.putObject(rw, r, bucket, key)
	case opUploadPart:
		err = s.uploadPart(rw, r)
	case opUploadPartCopy:
		err = s.uploadPartCopy(rw, r, q)
	case opComplete:
		err = s.completeUpload(rw, r, bucket, key)
	case opCreateUpload:
		err = s.createUpload(rw, r)
	case opAttributes:
		err = s.serveAttributes(rw, r, bucket, key)
	case opObjectACL:
		err = s.serveObjectACL(rw, r, bucket, key)
	case opCopy:
		err = s.copyObject(rw, r, bucket, key)
	case opDeleteMulti:
		err = s.deleteMulti(rw, r)
	default:
		s.fake.ServeHTTP(rw, r)
	}
	if err != nil {
		s.writeError(rw, r, err)
	}
}

// continueExpected sends 100 Continue to a request that expects it,
// before its body is read, as S3 does, also when the body is empty
// (net/http sends none then). botocore sends Expect: 100-continue with
// every PUT, even an empty one, and a final answer to it with no 100
// Continue first leaves its connection unable to read the next answer.
func continueExpected(w http.ResponseWriter, r *http.Request) {
	if r.ProtoAtLeast(1, 1) && strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		w.WriteHeader(http.StatusContinue)
	}
}

type op int

const (
	opOther op = iota
	opGet
	opHead
	opList
	opPut
	opUploadPart
	opUploadPartCopy
	opComplete
	opCopy
	opCreateUpload
	opAttributes
	opObjectACL
	opDeleteMulti
	opWrite // other writes (DELETE, bucket writes, multipart create/abort)
)

func classify(r *http.Request, bucket, key string, q url.Values) op {
	_, upload := q["uploadId"]
	copySrc := r.Header.Get("X-Amz-Copy-Source") != ""
	switch {
	case bucket == "":
		return opOther
	case key == "" && r.Method == http.MethodGet:
		for _, sub := range []string{"location", "uploads", "versioning", "tagging", "acl", "policy", "cors", "lifecycle", "encryption", "object-lock", "ownershipControls", "website", "logging", "notification", "replication", "requestPayment", "accelerate", "analytics", "inventory", "metrics", "intelligent-tiering", "publicAccessBlock"} {
			if _, ok := q[sub]; ok {
				return opOther
			}
		}
		return opList
	case key == "" && r.Method == http.MethodPost && q.Has("delete"):
		return opDeleteMulti
	case key == "" && r.Method == http.MethodPost:
		return opWrite
	case key == "":
		return opOther
	case r.Method == http.MethodGet && q.Has("attributes"):
		return opAttributes
	case r.Method == http.MethodGet && q.Has("acl"):
		return opObjectACL
	case r.Method == http.MethodGet && !upload:
		return opGet
	case r.Method == http.MethodHead:
		return opHead
	case r.Method == http.MethodPut && upload && copySrc:
		return opUploadPartCopy
	case r.Method == http.MethodPut && upload:
		return opUploadPart
	case r.Method == http.MethodPut && copySrc:
		return opCopy
	case r.Method == http.MethodPut:
		return opPut
	case r.Method == http.MethodPost && upload:
		return opComplete
	case r.Method == http.MethodPost && q.Has("uploads"):
		return opCreateUpload
	case r.Method == http.MethodPost || r.Method == http.MethodDelete:
		return opWrite
	}
	return opOther
}

// writes reports whether the operation changes an object.
func (o op) writes() bool {
	switch o {
	case opPut, opUploadPart, opUploadPartCopy, opComplete, opCopy, opCreateUpload, opDeleteMulti, opWrite:
		return true
	}
	return false
}

// faultMethod names the operation in fault rules ("" for none).
func (o op) faultMethod() string {
	switch o {
	case opGet:
		return http.MethodGet
	case opHead:
		return http.MethodHead
	case opList:
		return "LIST"
	case opPut, opUploadPart, opUploadPartCopy, opCopy:
		return http.MethodPut
	case opComplete:
		return faultComplete
	}
	return ""
}

// storeFor returns the store that serves bucket.
func (s *Server) storeFor(bucket string) store {
	if s.synth != nil && bucket == DefaultBucket {
		return s.synth
	}
	return s.backend
}

// errorBody is S3's XML error document.
type errorBody struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string
	Message   string
	Resource  string `xml:",omitempty"`
	Region    string `xml:",omitempty"`
	RequestID string `xml:"RequestId"`
}

// writeError answers with err as S3 would: a status and an XML body.
func (s *Server) writeError(w *respWriter, r *http.Request, err error) {
	status, code, msg, region := http.StatusInternalServerError, "InternalError", err.Error(), ""
	var ae *apiError
	var ge interface{ ErrorCode() gofakes3.ErrorCode }
	switch {
	case errors.As(err, &ae):
		status, code, msg = ae.status, ae.code, ae.message
		var re *regionError
		if errors.As(err, &re) {
			region = re.region
		}
	case errors.As(err, &ge):
		c := ge.ErrorCode()
		status, code, msg = c.Status(), string(c), c.Message()
		var er *gofakes3.ErrorResponse
		if errors.As(err, &er) && er.Message != "" {
			msg = er.Message
		}
	}
	if w.status != 0 {
		return // too late: the headers are out
	}
	h := w.Header()
	for _, k := range []string{"ETag", "Last-Modified", "Content-Length", "Content-Range", "Accept-Ranges"} {
		h.Del(k)
	}
	h.Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	if r.Method == http.MethodHead || status == http.StatusNotModified {
		return
	}
	io.WriteString(w, xml.Header)
	xml.NewEncoder(w).Encode(errorBody{Code: code, Message: msg, Resource: r.URL.Path, Region: region, RequestID: h.Get("X-Amz-Request-Id")})
}

// signedRegion is the region a SigV4 Authorization header signs for
// ("Credential=AKID/20260101/REGION/s3/aws4_request"), or "".
func signedRegion(r *http.Request) string {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return ""
	}
	parts := strings.Split(cred, "/")
	if len(parts) < 3 {
		return ""
	}
	return parts[2]
}
