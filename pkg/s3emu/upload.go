package s3emu

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// bodyCloser reads through r and closes the original body.
type bodyCloser struct {
	io.Reader
	io.Closer
}

// putObject handles PutObject: it verifies the body's checksum (BadDigest
// on a mismatch, and nothing stored), stores the object and remembers the
// checksum: the one the client sent, or a CRC64NVME, as S3 does by default.
func (s *Server) putObject(w *respWriter, r *http.Request, bucket, key string) error {
	if err := s.checkConditions(r, bucket, key); err != nil {
		return err
	}
	for _, h := range []string{"If-Match", "If-None-Match"} {
		r.Header.Del(h) // checked: gofakes3 need not
	}
	keepHeaders(r.Header)
	if r.ContentLength < 0 && !isAWSChunked(r.Header) {
		// A body sent with Transfer-Encoding: chunked and no length:
		// gofakes3 needs the length, so the body is read first.
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return fmt.Errorf("put %s/%s: read body: %w", bucket, key, err)
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		r.Header.Set("Content-Length", strconv.Itoa(len(b)))
	}
	vr, err := uploadReader(r)
	if err != nil {
		return err
	}
	// After uploadReader, which rewrites the headers of an aws-chunked body.
	s.tombstones(bucket, key, func(k string) {
		if _, ok := r.Header[k]; !ok {
			r.Header.Set(k, tombstone)
		}
	})
	if s.discard != nil {
		if _, err := io.Copy(io.Discard, vr); err != nil {
			return err
		}
		hash := discardHash(vr.crc, vr.n)
		if err := s.discard.store(bucket, key, vr.n, hash, requestMeta(r.Header)); err != nil {
			return err
		}
		etag := gofakes3.FormatETag(hash)
		s.backend.remember(bucket, key, &sideEntry{hashHex: hex.EncodeToString(hash), etag: etag, algorithm: vr.algorithm(), value: vr.value()})
		w.Header().Set("ETag", etag)
		w.Header().Set(ChecksumHeader(vr.algorithm()), vr.value())
		w.WriteHeader(http.StatusOK)
		return nil
	}
	rec, err := s.serveUpload(r, vr)
	if err != nil {
		return err
	}
	if !rec.ok() {
		return replay(w, rec)
	}
	obj, err := s.backend.b.HeadObject(bucket, key)
	if err != nil {
		return err
	}
	obj.Contents.Close()
	hh := hex.EncodeToString(obj.Hash)
	s.backend.remember(bucket, key, &sideEntry{hashHex: hh, etag: `"` + hh + `"`, algorithm: vr.algorithm(), value: vr.value()})
	rec.header.Set(ChecksumHeader(vr.algorithm()), vr.value())
	return replay(w, rec)
}

// serveUpload has gofakes3 store an upload whose body is read through
// vr. An error the body's reading met (a bad checksum, bad framing) is
// returned, to be answered with its S3 code rather than as gofakes3
// renders an error it does not know; otherwise what gofakes3 answered.
func (s *Server) serveUpload(r *http.Request, vr *verifyingReader) (*recorder, error) {
	r.Body = bodyCloser{vr, r.Body}
	rec := &recorder{header: http.Header{}}
	s.fake.ServeHTTP(rec, r)
	if vr.failed != nil {
		return nil, vr.failed
	}
	return rec, nil
}

// requestMeta returns the headers of an upload that S3 stores.
func requestMeta(h http.Header) map[string]string {
	meta := map[string]string{}
	for k, v := range h {
		if replayedHeader(k) && len(v) > 0 {
			meta[k] = v[0]
		}
	}
	return meta
}

// uploadPart handles UploadPart: gofakes3 stores the part, the emulator
// verifies its checksum on the way.
func (s *Server) uploadPart(w *respWriter, r *http.Request) error {
	q := r.URL.Query()
	up := s.uploads.get(q.Get("uploadId"))
	if up == nil {
		return gofakes3.ErrorMessage(gofakes3.ErrNoSuchUpload, "The specified upload does not exist.")
	}
	vr, err := uploadReader(r)
	if err != nil {
		return err
	}
	if vr.alg == "" && up.alg != "" {
		// S3 computes the part's checksum in the upload's algorithm.
		vr.alg, vr.h, vr.noVerify = up.alg, newHash(up.alg), true
	}
	rec, err := s.serveUpload(r, vr)
	if err != nil {
		return err
	}
	if !rec.ok() {
		return replay(w, rec)
	}
	pn, _ := strconv.Atoi(q.Get("partNumber"))
	p := partInfo{size: vr.n}
	if up.alg != "" && vr.alg == up.alg {
		p.checksum = vr.value()
	}
	up.setPart(pn, p)
	if vr.alg != "" {
		rec.header.Set(ChecksumHeader(vr.alg), vr.value())
	}
	return replay(w, rec)
}

// recorder is a ResponseWriter that keeps what gofakes3 answers to a
// request the emulator made up.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (rec *recorder) Header() http.Header { return rec.header }

// ok reports whether the answer recorded is a success.
func (rec *recorder) ok() bool { return rec.status == 0 || rec.status == http.StatusOK }
func (rec *recorder) WriteHeader(code int) {
	if rec.status == 0 {
		rec.status = code
	}
}
func (rec *recorder) Write(p []byte) (int, error) {
	rec.WriteHeader(http.StatusOK)
	return rec.body.Write(p)
}

// uploadPartCopy handles UploadPartCopy, which gofakes3 lacks: it reads
// the source range and hands it to gofakes3 as an UploadPart.
func (s *Server) uploadPartCopy(w *respWriter, r *http.Request, q url.Values) error {
	sb, sk, err := parseCopySource(r.Header.Get("X-Amz-Copy-Source"))
	if err != nil {
		return err
	}
	st := s.storeFor(sb)
	m, err := st.stat(sb, sk)
	if err != nil {
		return err
	}
	if im := r.Header.Get("X-Amz-Copy-Source-If-Match"); im != "" && !etagMatches(im, m.ETag) {
		return &apiError{http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold"}
	}
	off, n := int64(0), m.Size
	if cr := r.Header.Get("X-Amz-Copy-Source-Range"); cr != "" {
		start, length, ok, satisfiable := parseRange(cr, m.Size)
		if !ok && satisfiable || strings.HasPrefix(strings.TrimPrefix(cr, "bytes="), "-") {
			return &apiError{http.StatusBadRequest, "InvalidArgument", "The x-amz-copy-source-range value must be of the form bytes=first-last"}
		}
		if !satisfiable || parseLast(cr) >= m.Size {
			return &apiError{http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The requested range is not satisfiable"}
		}
		off, n = start, length
	}
	if n == 0 {
		return &apiError{http.StatusBadRequest, "InvalidRequest", "cannot copy an empty part"}
	}
	src, err := st.open(sb, sk, off, n)
	if err != nil {
		return err
	}
	defer src.Close()
	inner := r.Clone(r.Context())
	for _, h := range []string{"X-Amz-Copy-Source", "X-Amz-Copy-Source-Range", "X-Amz-Copy-Source-If-Match"} {
		inner.Header.Del(h)
	}
	up := s.uploads.get(q.Get("uploadId"))
	if up == nil {
		return gofakes3.ErrorMessage(gofakes3.ErrNoSuchUpload, "The specified upload does not exist.")
	}
	var body io.Reader = src
	var h hash.Hash
	if up.alg != "" {
		h = newHash(up.alg)
		body = io.TeeReader(src, h)
	}
	inner.Body = io.NopCloser(body)
	inner.ContentLength = n
	inner.Header.Set("Content-Length", strconv.FormatInt(n, 10))
	rec := &recorder{header: http.Header{}}
	s.fake.ServeHTTP(rec, inner)
	if rec.ok() {
		pn, _ := strconv.Atoi(q.Get("partNumber"))
		p := partInfo{size: n}
		if h != nil {
			p.checksum = base64.StdEncoding.EncodeToString(h.Sum(nil))
		}
		up.setPart(pn, p)
	}
	if rec.status != 0 && rec.status != http.StatusOK {
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
		w.Write(rec.body.Bytes())
		return nil
	}
	w.Header().Set("Content-Type", "application/xml")
	io.WriteString(w, xml.Header)
	return xml.NewEncoder(w).Encode(struct {
		XMLName      xml.Name `xml:"CopyPartResult"`
		ETag         string
		LastModified string
	}{ETag: rec.header.Get("ETag"), LastModified: time.Now().UTC().Format("2006-01-02T15:04:05.000Z")})
}

// parseLast returns the last byte a "bytes=first-last" range names (-1 if
// none).
func parseLast(h string) int64 {
	_, b, _ := strings.Cut(h, "-")
	n, err := strconv.ParseInt(strings.TrimSpace(b), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// parseCopySource splits an x-amz-copy-source header ("/bucket/key" or
// "bucket/key", URL-encoded, maybe with "?versionId=").
func parseCopySource(v string) (bucket, key string, err error) {
	v, _, _ = strings.Cut(v, "?")
	v, uerr := url.PathUnescape(v)
	bucket, key, ok := strings.Cut(strings.TrimPrefix(v, "/"), "/")
	if uerr != nil || !ok || bucket == "" || key == "" {
		return "", "", &apiError{http.StatusBadRequest, "InvalidArgument", "x-amz-copy-source must be bucket/key"}
	}
	return bucket, key, nil
}

// uploadReader decodes an upload's aws-chunked body, if it is one, and
// returns the body as a reader that verifies the checksum the request
// names, in a header or in the body's trailer.
func uploadReader(r *http.Request) (*verifyingReader, error) {
	alg, want, err := requestedChecksum(r.Header)
	if err != nil {
		return nil, err
	}
	cb, trailer, err := decodeUpload(r)
	if err != nil {
		return nil, err
	}
	if trailer != "" {
		talg := ""
		for _, a := range checksumAlgorithms {
			if ChecksumHeader(a) == trailer {
				talg = a
			}
		}
		switch {
		case talg == "":
			return nil, &apiError{http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("x-amz-trailer %q is not a checksum S3 knows", trailer)}
		case alg != "":
			return nil, &apiError{http.StatusBadRequest, "InvalidRequest", "Expecting a single x-amz-checksum- header."}
		}
		alg = talg
	}
	size := r.ContentLength
	if cb != nil {
		size = -1 // the decoder checks the length, and ends with io.EOF
	}
	vr := newVerifyingReader(r.Body, size, alg, want)
	if trailer != "" {
		vr.trailer = cb
	}
	return vr, nil
}
