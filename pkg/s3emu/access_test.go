package s3emu

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

// TestClosedToBrowsers: without AllowRemote a request whose Host is not
// loopback is refused (DNS rebinding), CORS preflights and form POST
// uploads are refused, and no answer carries CORS headers for a foreign
// origin; the origins in CORSOrigins are granted.
func TestClosedToBrowsers(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	_, open := start(t, Options{Backend: BackendMemory, CORSOrigins: []string{"http://localhost:3000"}})
	_, remote := start(t, Options{Backend: BackendMemory, AllowRemote: true})
	port := ep[strings.LastIndex(ep, ":"):]
	for _, u := range []string{ep, open, remote} {
		if resp, _ := raw(t, http.MethodPut, u+"/bench/obj", strings.NewReader("x"), nil); resp.StatusCode != 200 {
			t.Fatalf("PUT %s: %d", u, resp.StatusCode)
		}
	}
	preflight := map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "DELETE"}
	cases := []struct {
		name       string
		url        string
		method     string
		hdr        map[string]string
		host       string
		wantStatus int
		wantACAO   string
	}{
		{"loopback host", ep, http.MethodGet, nil, "", 200, ""},
		{"localhost host", ep, http.MethodGet, nil, "localhost" + port, 200, ""},
		{"ipv6 loopback host", ep, http.MethodGet, nil, "[::1]" + port, 200, ""},
		{"foreign host", ep, http.MethodGet, nil, "evil.example" + port, 403, ""},
		{"foreign host, allow remote", remote, http.MethodGet, nil, "evil.example" + port, 200, ""},
		{"preflight", ep, http.MethodOptions, preflight, "", 403, ""},
		{"delete from a foreign page", ep, http.MethodDelete, map[string]string{"Origin": "http://evil.example"}, "", 204, ""},
		{"get from a foreign page", open, http.MethodGet, map[string]string{"Origin": "http://evil.example"}, "", 200, ""},
		{"preflight of a foreign page", open, http.MethodOptions, preflight, "", 403, ""},
		{"preflight of a granted page", open, http.MethodOptions, map[string]string{"Origin": "http://localhost:3000", "Access-Control-Request-Method": "PUT"}, "", 200, "http://localhost:3000"},
		{"get from a granted page", open, http.MethodGet, map[string]string{"Origin": "http://localhost:3000"}, "", 200, "http://localhost:3000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, tc.url+"/bench/obj", nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.hdr {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus || resp.Header.Get("Access-Control-Allow-Origin") != tc.wantACAO {
				t.Errorf("%s: status %d, Access-Control-Allow-Origin %q; want %d, %q", tc.name, resp.StatusCode,
					resp.Header.Get("Access-Control-Allow-Origin"), tc.wantStatus, tc.wantACAO)
			}
			if tc.wantACAO == "" && resp.Header.Get("Access-Control-Allow-Methods") != "" {
				t.Errorf("%s: Access-Control-Allow-Methods %q, want none", tc.name, resp.Header.Get("Access-Control-Allow-Methods"))
			}
		})
	}

	// A browser form POST upload (no preflight needed) is refused.
	for _, tc := range []struct {
		url  string
		want int
	}{{ep, 403}, {remote, 200}} {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		mw.WriteField("key", "formput")
		fw, _ := mw.CreateFormFile("file", "h.txt")
		fw.Write([]byte("hello"))
		mw.Close()
		resp, body := raw(t, http.MethodPost, tc.url+"/bench", &b, map[string]string{"Content-Type": mw.FormDataContentType()})
		if resp.StatusCode/100 != tc.want/100 {
			t.Errorf("form POST to %s: %d %s, want %d", tc.url, resp.StatusCode, body, tc.want)
		}
		head, _ := raw(t, http.MethodHead, tc.url+"/bench/formput", nil, nil)
		if got := head.StatusCode == 200; got != (tc.want == 200) {
			t.Errorf("after the form POST to %s, HEAD answers %d", tc.url, head.StatusCode)
		}
	}
}
