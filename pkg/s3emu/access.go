package s3emu

import (
	"net"
	"net/http"
	"slices"
	"strings"
)

// Who may reach the emulator. It checks no credentials, so by default it
// serves only this machine, and a browser on this machine counts as
// another party: a web page the user opens must not write, delete or
// read its objects. Without Options.AllowRemote a request is served only
// when its Host names a loopback address, localhost or the address the
// server listens on (a DNS-rebinding page names its own domain), browser
// form POST uploads are refused, and CORS headers are sent only to the
// origins Options.CORSOrigins names (preflights from others are refused).

// corsMethods are the methods a CORS preflight may be granted.
const corsMethods = "GET, HEAD, PUT, POST, DELETE"

// corsExpose are the response headers a page may read.
const corsExpose = "ETag, Content-Length, Content-Range, Last-Modified, x-amz-version-id, x-amz-request-id, x-amz-checksum-crc64nvme, x-amz-checksum-crc32c, x-amz-checksum-crc32, x-amz-checksum-sha1, x-amz-checksum-sha256, x-amz-checksum-type"

// hostAllowed reports whether a request's Host may be served: a loopback
// address, localhost (or a name under .localhost), the listening address,
// or any with AllowRemote. An empty Host (HTTP/1.0) is no browser's.
func (s *Server) hostAllowed(r *http.Request) bool {
	if s.opts.AllowRemote || r.Host == "" {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	a, ok := s.listenAddr.Load().(*net.TCPAddr)
	return ok && a.IP.Equal(ip)
}

// originAllowed reports whether a page at origin may reach the emulator.
func (s *Server) originAllowed(origin string) bool {
	return origin != "" && (slices.Contains(s.opts.CORSOrigins, "*") || slices.Contains(s.opts.CORSOrigins, origin))
}

// isFormUpload reports whether r is a browser form POST upload (POST
// Object: a POST to a bucket with a multipart/form-data body).
func isFormUpload(r *http.Request, key string) bool {
	return r.Method == http.MethodPost && key == "" && strings.HasPrefix(strings.ToLower(r.Header.Get("Content-Type")), "multipart/form-data")
}

// guard answers the requests the access rules refuse and CORS
// preflights; it reports whether it answered.
func (s *Server) guard(w *respWriter, r *http.Request, key string) bool {
	if !s.hostAllowed(r) {
		s.writeError(w, r, &apiError{http.StatusForbidden, "AccessDenied",
			"the emulator serves only requests addressed to a loopback address or localhost, not Host " + r.Host + " (start it with --allow-remote to serve other names)"})
		return true
	}
	origin := r.Header.Get("Origin")
	if r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
		if !s.originAllowed(origin) {
			s.writeError(w, r, &apiError{http.StatusForbidden, "AccessForbidden",
				"CORSResponse: This CORS request is not allowed: origin " + origin + " is not among the emulator's --cors-origin"})
			return true
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Methods", corsMethods)
		if rh := r.Header.Get("Access-Control-Request-Headers"); rh != "" {
			h.Set("Access-Control-Allow-Headers", rh)
		}
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusOK)
		return true
	}
	if isFormUpload(r, key) && !s.opts.AllowRemote && !s.originAllowed(origin) {
		s.writeError(w, r, &apiError{http.StatusForbidden, "AccessDenied",
			"the emulator takes no browser form POST uploads unless started with --allow-remote or the page's origin is a --cors-origin"})
		return true
	}
	return false
}

// corsHeaders sets, on an answer about to be sent, the CORS headers the
// request's origin is granted, and removes those gofakes3 would grant
// any origin.
func (s *Server) corsHeaders(h http.Header, origin string) {
	for _, k := range []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Expose-Headers"} {
		h.Del(k)
	}
	if !s.originAllowed(origin) {
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Expose-Headers", corsExpose)
	h.Add("Vary", "Origin")
}
