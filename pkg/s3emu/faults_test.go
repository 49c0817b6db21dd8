package s3emu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// get sends a GET with an optional Range and returns the response, the
// body bytes read and the error that ended the body (nil on a clean end).
func get(t *testing.T, url, rng string) (*http.Response, []byte, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	// A fresh transport per request: a fault may kill the connection.
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestFaultActions(t *testing.T) {
	const key, size = "o/00000000", 100000
	whole := synthetic(key, 0, size)
	tests := []struct {
		name  string
		rules string
		rng   string
		check func(t *testing.T, resp *http.Response, body []byte, err error)
	}{
		{"status 503 SlowDown", "key=o/* action=status:503", "bytes=0-99", func(t *testing.T, resp *http.Response, body []byte, err error) {
			if resp.StatusCode != 503 || !bytes.Contains(body, []byte("<Code>SlowDown</Code>")) {
				t.Errorf("status %d body %q, want 503 SlowDown", resp.StatusCode, body)
			}
		}},
		{"status 403 custom", "key=o/00000000 action=status:403:AccessDenied:go-away", "", func(t *testing.T, resp *http.Response, body []byte, err error) {
			if resp.StatusCode != 403 || !bytes.Contains(body, []byte("<Message>go-away</Message>")) {
				t.Errorf("status %d body %q, want 403 go-away", resp.StatusCode, body)
			}
		}},
		{"reset at byte 1000", "key=o/00000000 action=reset:1000", "bytes=0-49999", func(t *testing.T, resp *http.Response, body []byte, err error) {
			if !errors.Is(err, syscall.ECONNRESET) || len(body) > 1000 || !bytes.Equal(body, whole[:len(body)]) {
				t.Errorf("read %d bytes, error %v; want at most 1000 good bytes then ECONNRESET", len(body), err)
			}
		}},
		{"truncate with honest length", "key=* action=truncate:5000", "", func(t *testing.T, resp *http.Response, body []byte, err error) {
			if !errors.Is(err, io.ErrUnexpectedEOF) || len(body) != 5000 || resp.ContentLength != size {
				t.Errorf("read %d bytes of Content-Length %d, error %v; want 5000 then unexpected EOF", len(body), resp.ContentLength, err)
			}
		}},
		{"short Content-Length", "key=* action=short:10", "bytes=100-199", func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil || len(body) != 10 || resp.Header.Get("Content-Range") != "bytes 100-199/100000" || !bytes.Equal(body, whole[100:110]) {
				t.Errorf("read %d bytes (err %v) under Content-Range %q; want 10 clean bytes under bytes 100-199/100000", len(body), err, resp.Header.Get("Content-Range"))
			}
		}},
		{"wrong Content-Range", "key=* action=badrange:7", "bytes=100-199", func(t *testing.T, resp *http.Response, body []byte, err error) {
			if resp.Header.Get("Content-Range") != "bytes 107-206/100000" || !bytes.Equal(body, whole[100:200]) {
				t.Errorf("Content-Range %q, %d bytes; want bytes 107-206/100000 over the requested bytes", resp.Header.Get("Content-Range"), len(body))
			}
		}},
		{"200 without Range", "key=* action=norange", "bytes=100-199", func(t *testing.T, resp *http.Response, body []byte, err error) {
			if resp.StatusCode != 200 || !bytes.Equal(body, whole) {
				t.Errorf("status %d, %d bytes; want 200 and the whole object", resp.StatusCode, len(body))
			}
		}},
		{"flipped byte", "key=* action=flip:42", "bytes=1000-1999", func(t *testing.T, resp *http.Response, body []byte, err error) {
			want := append([]byte{}, whole[1000:2000]...)
			want[42] ^= 0xff
			if !bytes.Equal(body, want) || resp.ContentLength != 1000 {
				t.Errorf("%d bytes, want the range with byte 42 flipped", len(body))
			}
		}},
		{"only attempt 2", "key=* attempt=2 action=status:500", "", func(t *testing.T, resp *http.Response, body []byte, err error) {
			if resp.StatusCode != 200 {
				t.Errorf("attempt 1: status %d, want 200", resp.StatusCode)
			}
		}},
		{"other method", "method=HEAD key=* action=status:500", "", func(t *testing.T, resp *http.Response, body []byte, err error) {
			if resp.StatusCode != 200 {
				t.Errorf("GET under a HEAD rule: status %d, want 200", resp.StatusCode)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFaults(tt.rules)
			if err != nil {
				t.Fatal(err)
			}
			s, ep := start(t, Options{Dataset: "o:1:100000", Faults: f})
			resp, body, err := get(t, ep+"/bench/"+key, tt.rng)
			if resp == nil {
				t.Fatalf("GET: %v", err)
			}
			tt.check(t, resp, body, err)
			if got := s.Stats().FaultsInjected; got > 1 {
				t.Errorf("FaultsInjected = %d, want at most 1", got)
			}
		})
	}
}

func TestFaultStall(t *testing.T) {
	s, ep := start(t, Options{Dataset: "o:1:10000", Faults: NewFaults(Rule{Key: "*", Action: Stall{At: 100, For: 300 * time.Millisecond}})})
	t0 := time.Now()
	resp, body, err := get(t, ep+"/bench/o/00000000", "")
	if err != nil || resp.StatusCode != 200 || len(body) != 10000 || time.Since(t0) < 300*time.Millisecond {
		t.Errorf("stalled GET: %v, %d bytes in %v; want all bytes after at least 300ms", err, len(body), time.Since(t0))
	}
	if s.Stats().FaultsInjected != 1 {
		t.Errorf("FaultsInjected = %d, want 1", s.Stats().FaultsInjected)
	}
}

func TestFaultReplaceChangesETagAndContent(t *testing.T) {
	f := NewFaults(Rule{Key: "o/00000000", Attempt: 2, Action: Replace{}})
	_, ep := start(t, Options{Dataset: "o:1:10000", Faults: f})
	r1, b1, _ := get(t, ep+"/bench/o/00000000", "bytes=0-4999")
	r2, b2, _ := get(t, ep+"/bench/o/00000000", "bytes=5000-9999")
	if r1.Header.Get("ETag") == r2.Header.Get("ETag") || bytes.Equal(b2, synthetic("o/00000000", 5000, 5000)) || !bytes.Equal(b1, synthetic("o/00000000", 0, 5000)) {
		t.Errorf("ETags %s then %s; want the second request to see a new object", r1.Header.Get("ETag"), r2.Header.Get("ETag"))
	}
	// The old ETag no longer matches.
	req, _ := http.NewRequest(http.MethodGet, ep+"/bench/o/00000000", nil)
	req.Header.Set("If-Match", r1.Header.Get("ETag"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusPreconditionFailed {
		t.Errorf("If-Match with the old ETag: status %d, want 412", resp.StatusCode)
	}
}

func TestSlowDownStormCountsInFlight(t *testing.T) {
	f, err := ParseFaults("key=* range=* times=2 action=status:503:SlowDown")
	if err != nil {
		t.Fatal(err)
	}
	s, ep := start(t, Options{Dataset: "o:1:256000", Faults: f, TTFB: 20 * time.Millisecond})
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := 0; i < 64; i++ {
		wg.Go(func() {
			rng := "bytes=" + strconv.Itoa(i*1000) + "-" + strconv.Itoa(i*1000+999)
			for attempt := 0; attempt < 3; attempt++ {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, ep+"/bench/o/00000000", nil)
				req.Header.Set("Range", rng)
				resp, err := hc.Do(req)
				if err != nil {
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if statuses[503] != 128 || statuses[206] != 64 {
		t.Errorf("statuses %v, want 128 SlowDown and 64 successes (each range fails twice)", statuses)
	}
	if st := s.Stats(); st.MaxInFlight < 8 || st.InFlight != 0 {
		t.Errorf("MaxInFlight %d InFlight %d; want concurrent requests counted", st.MaxInFlight, st.InFlight)
	}
}

func TestParseFaults(t *testing.T) {
	text := `# comment
key=a attempt=1 action=reset:1000
key=* range=* times=2 action=status:503:SlowDown ; method=head key=b* action=delay:2s
bucket=x key=c range=bytes=0-99 action=stall:10:1s`
	f, err := ParseFaults(text)
	if err != nil {
		t.Fatal(err)
	}
	rules := f.Rules()
	var got []string
	for _, r := range rules {
		got = append(got, r.Key+" "+r.Method+" "+r.Range+" "+r.Action.String())
	}
	want := []string{"a   reset:1000", "*  * status:503:SlowDown", "b* HEAD  delay:2s", "c  bytes=0-99 stall:10:1s"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("rules = %q, want %q", got, want)
	}
	j, err := ParseFaults(`[{"key":"a","attempt":1,"action":"flip:3"},{"key":"b","action":"norange"}]`)
	if err != nil || len(j.Rules()) != 2 || j.Rules()[0].Action != (Flip{At: 3}) {
		t.Errorf("JSON faults: %v, %v", j, err)
	}
	for _, bad := range []string{"key=a", "action=replace", "key=a action=explode", "key=a action=reset", "key=a attempt=x action=replace", "nonsense", `[{"action":"replace"}]`} {
		if _, err := ParseFaults(bad); err == nil {
			t.Errorf("ParseFaults(%q) succeeded, want an error", bad)
		}
	}
	// Every action's String form parses back to itself.
	for _, a := range []Action{Status{Code: 503, S3Code: "SlowDown"}, Reset{At: 5}, Truncate{At: 6}, ShortBody{At: 7}, WrongRange{Shift: 2},
		IgnoreRange{}, Stall{At: 1, For: time.Second}, Flip{At: 9}, Replace{}, Delay{For: time.Millisecond},
		NoToken{}, NoToken{Empty: true}, SameToken{}, BadTime{Index: 2}, DupEntry{Index: 1}, ListSize{Size: 1 << 62, Index: 3},
		NoClamp{}, Chunked{}, CloseBody{}} {
		back, err := ParseAction(a.String())
		if err != nil || back.String() != a.String() {
			t.Errorf("ParseAction(%q) = %v, %v", a.String(), back, err)
		}
	}
}

func TestStatsEndpoint(t *testing.T) {
	_, ep := start(t, Options{Dataset: "o:1:1000"})
	get(t, ep+"/bench/o/00000000", "bytes=0-9")
	resp, body := raw(t, http.MethodGet, ep+statsPath+"?keys=1&reset=1", nil, nil)
	var rep StatsReport
	if err := json.Unmarshal(body, &rep); err != nil || resp.StatusCode != 200 {
		t.Fatalf("stats: status %d, %v", resp.StatusCode, err)
	}
	if rep.GetRequests != 1 || rep.KeyBytes["bench/o/00000000"] != 10 {
		t.Errorf("stats = %+v, want 1 GET and 10 bytes of bench/o/00000000", rep)
	}
	_, body = raw(t, http.MethodGet, ep+statsPath, nil, nil)
	if err := json.Unmarshal(body, &rep); err != nil || rep.GetRequests != 0 {
		t.Errorf("after reset=1: %+v, %v", rep.Stats, err)
	}
}
