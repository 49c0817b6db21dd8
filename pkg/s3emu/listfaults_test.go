package s3emu

import (
	"net/http"
	"strings"
	"testing"
)

func TestListFaults(t *testing.T) {
	page2 := "&continuation-token="
	tests := []struct {
		name   string
		action Action
		query  string // appended to the first page's query
		want   []string
		absent []string
	}{
		{name: "no token", action: NoToken{}, want: []string{"<IsTruncated>true</IsTruncated>"}, absent: []string{"NextContinuationToken"}},
		{name: "empty token", action: NoToken{Empty: true}, want: []string{"<IsTruncated>true</IsTruncated>", "<NextContinuationToken></NextContinuationToken>"}},
		{name: "same token", action: SameToken{}, query: page2 + "ZS8wMDAwMDAwMQ", want: []string{"<IsTruncated>true</IsTruncated>", "<NextContinuationToken>ZS8wMDAwMDAwMQ</NextContinuationToken>"}},
		{name: "bad time", action: BadTime{Index: 1}, want: []string{"<Key>e/00000000</Key><LastModified>20", "<Key>e/00000001</Key><LastModified>yesterday-ish"}},
		{name: "duplicate", action: DupEntry{Index: 0}, want: []string{"<Key>e/00000000</Key>", "<KeyCount>3</KeyCount>"}},
		{name: "size", action: ListSize{Size: 1 << 62, Index: 0}, want: []string{"<Size>4611686018427387904</Size>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ep := start(t, Options{Dataset: "e:4:10", Faults: NewFaults(Rule{Method: "LIST", Key: "*", Action: tt.action})})
			resp, body := raw(t, http.MethodGet, ep+"/bench?list-type=2&max-keys=2"+tt.query, nil, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			doc := string(body)
			for _, w := range tt.want {
				if !strings.Contains(doc, w) {
					t.Errorf("page lacks %q:\n%s", w, doc)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(doc, a) {
					t.Errorf("page has %q:\n%s", a, doc)
				}
			}
			if _, ok := tt.action.(DupEntry); ok && strings.Count(doc, "<Key>e/00000000</Key>") != 2 {
				t.Errorf("the entry is not listed twice:\n%s", doc)
			}
		})
	}
}

func TestFramingFaults(t *testing.T) {
	const key = "/bench/o/00000000"
	t.Run("noclamp", func(t *testing.T) {
		_, ep := start(t, Options{Dataset: "o:1:1000", Faults: NewFaults(Rule{Key: "*", Times: -1, Action: NoClamp{}})})
		if resp, _ := raw(t, http.MethodGet, ep+key, nil, map[string]string{"Range": "bytes=0-4095"}); resp.StatusCode != 416 {
			t.Errorf("a range past the end: status %d, want 416", resp.StatusCode)
		}
		if resp, body := raw(t, http.MethodGet, ep+key, nil, map[string]string{"Range": "bytes=0-999"}); resp.StatusCode != 206 || len(body) != 1000 {
			t.Errorf("a range inside the object: status %d, %d bytes, want 206 and 1000", resp.StatusCode, len(body))
		}
	})
	for _, tt := range []struct {
		action  Action
		chunked bool
	}{{Chunked{}, true}, {CloseBody{}, false}} {
		t.Run(tt.action.String(), func(t *testing.T) {
			_, ep := start(t, Options{Dataset: "o:1:300000", Faults: NewFaults(Rule{Key: "*", Action: tt.action})})
			resp, body := raw(t, http.MethodGet, ep+key, nil, map[string]string{"Range": "bytes=10-200009"})
			if resp.StatusCode != 206 || resp.ContentLength != -1 || len(body) != 200000 {
				t.Fatalf("status %d, content-length %d, %d bytes; want 206, none, 200000", resp.StatusCode, resp.ContentLength, len(body))
			}
			if got := len(resp.TransferEncoding) > 0; got != tt.chunked {
				t.Errorf("transfer encoding %v, want chunked %v", resp.TransferEncoding, tt.chunked)
			}
			if string(body) != string(synthetic("o/00000000", 10, 200000)) {
				t.Errorf("wrong bytes")
			}
			if resp.Header.Get("Content-Range") != "bytes 10-200009/300000" {
				t.Errorf("content-range %q", resp.Header.Get("Content-Range"))
			}
		})
	}
}
