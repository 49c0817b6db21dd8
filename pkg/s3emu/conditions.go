package s3emu

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/johannesboyne/gofakes3"
)

func preconditionFailed() error {
	return &apiError{http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold"}
}

// checkConditions checks a write's If-Match and If-None-Match against
// the object it would replace, as S3's conditional writes do:
// If-None-Match "*" or the object's ETag fails (412) when it exists;
// If-Match fails with 404 NoSuchKey when it does not and with 412 when
// its ETag differs ("*" matches any).
func (s *Server) checkConditions(r *http.Request, bucket, key string) error {
	im, inm := r.Header.Get("If-Match"), r.Header.Get("If-None-Match")
	if im == "" && inm == "" {
		return nil
	}
	m, err := s.storeFor(bucket).stat(bucket, key)
	exists := err == nil
	if err != nil && !gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchKey) {
		var ae *apiError
		if !errors.As(err, &ae) || ae.status != http.StatusNotFound {
			return err
		}
	}
	if im != "" {
		if !exists {
			return gofakes3.KeyNotFound(key)
		}
		if strings.TrimSpace(im) != "*" && !etagMatches(im, m.ETag) {
			return preconditionFailed()
		}
	}
	if inm != "" && exists && (strings.TrimSpace(inm) == "*" || etagMatches(inm, m.ETag)) {
		return preconditionFailed()
	}
	return nil
}

// readConditions evaluates a GET's or HEAD's conditional headers as S3
// (RFC 7232) does: If-Match before If-Unmodified-Since, If-None-Match
// before If-Modified-Since. It returns 412, or 304 (notModified), or nil.
func readConditions(h http.Header, m objectMeta) (notModified bool, err error) {
	lm := m.LastModified.Truncate(time.Second)
	im, inm := h.Get("If-Match"), h.Get("If-None-Match")
	if im != "" {
		if !etagMatches(im, m.ETag) && strings.TrimSpace(im) != "*" {
			return false, preconditionFailed()
		}
	} else if v := h.Get("If-Unmodified-Since"); v != "" {
		if t, err := http.ParseTime(v); err == nil && lm.After(t) {
			return false, preconditionFailed()
		}
	}
	if inm != "" {
		if etagMatches(inm, m.ETag) || strings.TrimSpace(inm) == "*" {
			return true, nil
		}
	} else if v := h.Get("If-Modified-Since"); v != "" {
		if t, err := http.ParseTime(v); err == nil && !lm.After(t) {
			return true, nil
		}
	}
	return false, nil
}

// copySourceConditions evaluates CopyObject's and UploadPartCopy's
// x-amz-copy-source-if-* headers: any that fails answers 412.
func copySourceConditions(h http.Header, m objectMeta) error {
	c := http.Header{}
	for _, k := range []string{"Match", "None-Match", "Modified-Since", "Unmodified-Since"} {
		if v := h.Get("X-Amz-Copy-Source-If-" + k); v != "" {
			c.Set("If-"+k, v)
		}
	}
	notModified, err := readConditions(c, m)
	if err != nil || notModified {
		return preconditionFailed()
	}
	return nil
}
