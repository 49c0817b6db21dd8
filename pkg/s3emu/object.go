package s3emu

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
)

var responseOverrides = map[string]string{
	"response-content-type":        "Content-Type",
	"response-content-language":    "Content-Language",
	"response-expires":             "Expires",
	"response-cache-control":       "Cache-Control",
	"response-content-disposition": "Content-Disposition",
	"response-content-encoding":    "Content-Encoding",
}

// serveObject answers GET and HEAD on an object, injecting fault (nil for
// none) into the response.
func (s *Server) serveObject(w *respWriter, r *http.Request, bucket, key string, fault Action) error {
	st := s.storeFor(bucket)
	m, err := st.stat(bucket, key)
	if err != nil {
		return err
	}
	if s.opts.NoChecksums {
		m.Algorithm = ""
	}
	notModified, err := readConditions(r.Header, m)
	if err != nil {
		return err
	}
	h := w.Header()
	if notModified {
		h.Set("ETag", m.ETag)
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	for k, v := range m.Header {
		if strings.HasPrefix(k, "X-Amz-Meta-") {
			// S3 sends user metadata names in lower case, and clients
			// (botocore) keep the case they read.
			h[strings.ToLower(k)] = []string{v}
			continue
		}
		h.Set(k, v)
	}
	h.Set("ETag", m.ETag)
	h.Set("Last-Modified", m.LastModified.UTC().Format(http.TimeFormat))
	h.Set("Accept-Ranges", "bytes")
	for q, hk := range responseOverrides {
		if v := r.URL.Query().Get(q); v != "" {
			h.Set(hk, v)
		}
	}

	off, n, status := int64(0), m.Size, http.StatusOK
	rng := r.Header.Get("Range")
	if pn := r.URL.Query().Get("partNumber"); pn != "" {
		if rng != "" {
			return &apiError{http.StatusBadRequest, "InvalidRequest", "Cannot specify both Range header and partNumber query parameter"}
		}
		first, size, err := partRange(m, pn)
		if err != nil {
			return err
		}
		if len(m.PartSizes) > 0 {
			h.Set("x-amz-mp-parts-count", strconv.Itoa(len(m.PartSizes)))
			rng = "bytes=" + strconv.FormatInt(first, 10) + "-" + strconv.FormatInt(first+size-1, 10)
		}
		if m.Algorithm != "" {
			h.Set("x-amz-checksum-type", checksumType(m))
		}
		if i, _ := strconv.Atoi(pn); i >= 1 && i <= len(m.PartSums) && m.PartSums[i-1] != "" {
			h.Set(ChecksumHeader(m.Algorithm), m.PartSums[i-1])
		}
	}
	if _, ignore := fault.(IgnoreRange); ignore {
		rng = ""
	}
	if rng != "" {
		start, length, ok, satisfiable := parseRange(rng, m.Size)
		if _, strict := fault.(NoClamp); strict && pastEnd(rng, m.Size) {
			satisfiable = false
		}
		if !satisfiable {
			h.Set("Content-Range", "bytes */"+strconv.FormatInt(m.Size, 10))
			return &apiError{http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The requested range is not satisfiable"}
		}
		if ok {
			off, n, status = start, length, http.StatusPartialContent
			first, last := off, off+n-1
			if wr, bad := fault.(WrongRange); bad {
				first, last = first+wr.shift(), last+wr.shift()
			}
			h.Set("Content-Range", "bytes "+strconv.FormatInt(first, 10)+"-"+strconv.FormatInt(last, 10)+"/"+strconv.FormatInt(m.Size, 10))
		}
	}
	if status == http.StatusOK && m.Algorithm != "" && strings.EqualFold(r.Header.Get("x-amz-checksum-mode"), "ENABLED") {
		// S3 returns a full-object checksum only for whole-object reads.
		if v := m.checksum(); v != "" {
			h.Set(ChecksumHeader(m.Algorithm), v)
			h.Set("x-amz-checksum-type", checksumType(m))
		}
	}
	length := n
	if sb, short := fault.(ShortBody); short && sb.At < n {
		length = sb.At
	}
	h.Set("Content-Length", strconv.FormatInt(length, 10))
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return nil
	}
	var body io.ReadCloser
	if n > 0 {
		if body, err = st.open(bucket, key, off, n); err != nil {
			return err
		}
		defer body.Close()
	}
	switch fault.(type) {
	case CloseBody:
		s.addKeyBytes(bucket, key, writeCloseDelimited(w, status, body, length))
		return nil
	case Chunked:
		h.Del("Content-Length")
		w.WriteHeader(status)
		http.NewResponseController(w).Flush() // headers out: chunked from here
	default:
		w.WriteHeader(status)
	}
	if n == 0 {
		return nil
	}
	if ms, ok := fault.(midStall); ok {
		fault = Stall{At: length / 2, For: ms.For}
	}
	s.copyBody(w, r, body, length, fault, func(k int64) { s.addKeyBytes(bucket, key, k) })
	return nil
}

// copyBody streams n bytes of body to w, applying a body fault, and returns
// the bytes sent. It counts them by count: those sent before a stall
// as the stall begins (a test waits for them while the body sleeps),
// the rest when the body ends.
func (s *Server) copyBody(w *respWriter, r *http.Request, body io.Reader, n int64, fault Action, count func(int64)) (sent int64) {
	var counted int64
	defer func() { count(sent - counted) }()
	stop := n // where the body stops early (reset, truncate, stall)
	switch a := fault.(type) {
	case Reset:
		stop = min(a.At, n)
	case Truncate:
		stop = min(a.At, n)
	case Stall:
		stop = min(a.At, n)
	}
	buf := getBuf()
	defer putBuf(buf)
	for sent < n {
		if sent == stop {
			switch a := fault.(type) {
			case Reset:
				abort(w, true)
				return sent
			case Truncate:
				abort(w, false)
				return sent
			case Stall:
				http.NewResponseController(w).Flush()
				count(sent - counted)
				counted = sent
				sleepCtx(r.Context(), a.For)
				if r.Context().Err() != nil {
					return sent // the client went away: nothing more is sent
				}
				stop = n
			}
		}
		limit := min(int64(len(*buf)), n-sent)
		if stop > sent {
			limit = min(limit, stop-sent)
		}
		p := (*buf)[:limit]
		k, err := io.ReadFull(body, p)
		p = p[:k]
		if f, ok := fault.(Flip); ok && f.At >= sent && f.At < sent+int64(k) {
			p[f.At-sent] ^= 0xff
		}
		wn, werr := w.Write(p)
		sent += int64(wn)
		if err != nil || werr != nil {
			return sent
		}
	}
	return sent
}

// abort ends a response mid-body: it flushes what was written, takes the
// connection over and closes it, with a reset (SO_LINGER 0) or a FIN.
func abort(w http.ResponseWriter, reset bool) {
	rc := http.NewResponseController(w)
	rc.Flush()
	conn, _, err := rc.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		tc.SetLinger(0)
	}
	conn.Close()
}

// parseRange resolves a Range header against an object of size bytes as
// S3 does: ok is false for a header S3 ignores (malformed, several ranges);
// satisfiable is false for a range that starts past the end, and for any
// range on an empty object.
func parseRange(h string, size int64) (start, length int64, ok, satisfiable bool) {
	spec, found := strings.CutPrefix(strings.TrimSpace(h), "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false, true
	}
	a, b, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false, true
	}
	if a == "" { // suffix: the last b bytes
		k, err := strconv.ParseInt(b, 10, 64)
		if err != nil || k < 0 {
			return 0, 0, false, true
		}
		if k == 0 || size == 0 {
			return 0, 0, false, false
		}
		k = min(k, size)
		return size - k, k, true, true
	}
	first, err := strconv.ParseInt(a, 10, 64)
	if err != nil || first < 0 {
		return 0, 0, false, true
	}
	last := size - 1
	if b != "" {
		if last, err = strconv.ParseInt(b, 10, 64); err != nil || last < first {
			return 0, 0, false, true
		}
	}
	if first >= size {
		return 0, 0, false, false
	}
	last = min(last, size-1)
	return first, last - first + 1, true, true
}

// etagMatches reports whether an If-Match or If-None-Match header (a list
// of quoted ETags, or "*") names etag.
func etagMatches(header, etag string) bool {
	want := strings.Trim(etag, `"`)
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || strings.Trim(t, `"`) == want {
			return true
		}
	}
	return false
}

// checksumType is the type of an object's checksum.
func checksumType(m objectMeta) string {
	if m.ChecksumType == "" {
		return TypeFullObject
	}
	return m.ChecksumType
}

// partRange returns where part pn ("1", "2", ...) of an object starts and
// its size: an object uploaded whole is its one part.
func partRange(m objectMeta, pn string) (first, size int64, err error) {
	n, perr := strconv.Atoi(pn)
	if perr != nil || n < 1 || n > 10000 {
		return 0, 0, &apiError{http.StatusBadRequest, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive"}
	}
	if len(m.PartSizes) == 0 {
		if n != 1 {
			return 0, 0, &apiError{http.StatusBadRequest, "InvalidPart", "The requested partnumber is not satisfiable"}
		}
		return 0, m.Size, nil
	}
	if n > len(m.PartSizes) {
		return 0, 0, &apiError{http.StatusBadRequest, "InvalidPart", "The requested partnumber is not satisfiable"}
	}
	for _, sz := range m.PartSizes[:n-1] {
		first += sz
	}
	return first, m.PartSizes[n-1], nil
}
