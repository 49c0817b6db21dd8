package s3emu

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Requests above MaxInFlight are answered 503 SlowDown with S3's XML body,
// after the TTFB, and count as in flight while they wait.
func TestThrottleMaxInFlight(t *testing.T) {
	const ttfb, limit, n = time.Second, 4, 10
	srv, url := start(t, Options{Dataset: "o:1:1KiB", TTFB: ttfb, Throttle: Throttle{MaxInFlight: limit}})
	type answer struct {
		status int
		body   []byte
		took   time.Duration
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			resp, body, err := get(t, url+"/bench/o/00000000", "")
			if err != nil {
				t.Errorf("GET %d: %v", i, err)
				return
			}
			answers[i] = answer{resp.StatusCode, body, time.Since(t0)}
		}()
	}
	wg.Wait()
	ok, slow := 0, 0
	for _, a := range answers {
		switch {
		case a.status == 200 && len(a.body) == 1024:
			ok++
		case a.status == 503 && bytes.Contains(a.body, []byte("<Code>SlowDown</Code>")) &&
			bytes.Contains(a.body, []byte("<Message>Please reduce your request rate.</Message>")):
			slow++
			if a.took < ttfb {
				t.Errorf("a SlowDown came after %v, want after the %v TTFB", a.took, ttfb)
			}
		default:
			t.Errorf("status %d, body %q; want 200 and 1 KiB or 503 SlowDown", a.status, a.body)
		}
	}
	// All n arrive within the TTFB, while the first ones still wait.
	if ok != limit || slow != n-limit {
		t.Errorf("%d served and %d SlowDown, want %d and %d", ok, slow, limit, n-limit)
	}
	st := srv.Stats()
	if st.Throttled != n-limit || st.ThrottledGets != n-limit || st.GetRequests != n || st.MaxInFlight != n {
		t.Errorf("stats %+v: want %d throttled GETs of %d, all %d in flight at once", st, n-limit, n, n)
	}
	if resp, _, err := get(t, url+"/bench/o/00000000", ""); err != nil || resp.StatusCode != 200 {
		t.Errorf("a GET once the others ended: %v, %v; want 200", resp, err)
	}
}

// PrefixRate gives each prefix a token bucket: a burst beyond it is
// answered SlowDown, another prefix is not affected, the bucket refills
// at the rate, and listings are not counted.
func TestThrottlePrefixRate(t *testing.T) {
	const rate = 20 // tokens a second; the bucket holds 2
	// The buckets' clock is the test's: it stands still while the 50
	// requests go, then moves by two tokens' time.
	var mu sync.Mutex
	now := time.Unix(1e9, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	srv, url := start(t, Options{Dataset: "a:50:16,b:2:16", Throttle: Throttle{PrefixRate: rate, Now: clock}})
	c := &http.Client{}
	status := func(method, path string) int {
		req, _ := http.NewRequest(method, url+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	served := 0
	for i := range 50 {
		method := http.MethodGet
		if i%2 == 1 {
			method = http.MethodHead // HEADs count too
		}
		switch s := status(method, "/bench/a/"+pad(i)); s {
		case 200:
			served++
		case 503:
		default:
			t.Fatalf("status %d, want 200 or 503", s)
		}
	}
	if served != 2 {
		t.Errorf("%d of 50 requests served with the clock still, want the 2 the bucket holds", served)
	}
	if s := status(http.MethodGet, "/bench/b/00000000"); s != 200 {
		t.Errorf("GET of another prefix: %d, want 200", s)
	}
	if s := status(http.MethodGet, "/bench?list-type=2&prefix=a/"); s != 200 {
		t.Errorf("a listing: %d, want 200 (listings are not rated)", s)
	}
	mu.Lock()
	now = now.Add(2 * time.Second / rate) // two tokens back
	mu.Unlock()
	for i, want := range []int{200, 200, 503} {
		if s := status(http.MethodGet, "/bench/a/00000000"); s != want {
			t.Errorf("GET %d after the bucket refilled by two: %d, want %d", i+1, s, want)
		}
	}
	if st := srv.Stats(); st.Throttled != int64(50-served+1) || st.ThrottledGets > st.Throttled || st.ThrottledGets == 0 {
		t.Errorf("stats %+v: want %d throttled (GETs among them)", st, 50-served+1)
	}
}

func pad(i int) string {
	s := "0000000" + string(rune('0'+i/10)) + string(rune('0'+i%10))
	return s[len(s)-8:]
}

// Stalls picks GETs by a seeded hash of key and range: the same GETs stall
// on every server with the seed and after ResetStats, a repeated GET does
// not stall, and a stalled GET sends half its body, pauses, then the rest
// byte-exact.
func TestStallsSeededFirstAttempt(t *testing.T) {
	const objects, size, pause = 40, 10000, 300 * time.Millisecond
	opts := Options{Dataset: "s:40:10000", LogRequests: true, Stalls: Stalls{Fraction: 0.5, For: pause, Seed: 7}}
	stalledKeys := func(srv *Server, url string) []string {
		t.Helper()
		srv.ResetStats()
		var wg sync.WaitGroup
		for i := range objects {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := "s/" + pad(i)
				_, body, err := get(t, url+"/bench/"+key, "bytes=0-9999")
				if err != nil || !bytes.Equal(body, synthetic(key, 0, size)) {
					t.Errorf("GET %s: %d bytes, %v; want the object", key, len(body), err)
				}
			}()
		}
		wg.Wait()
		// The log entry is completed after the body's last byte.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		srv.Await(ctx, func(s Stats) bool { return s.InFlight == 0 })
		cancel()
		var keys []string
		for _, r := range srv.Log() {
			if strings.HasPrefix(r.Fault, "stall:") {
				keys = append(keys, r.Key)
			}
		}
		slices.Sort(keys)
		if int64(len(keys)) != srv.Stats().Stalls {
			t.Errorf("%d stalls logged, Stats.Stalls %d", len(keys), srv.Stats().Stalls)
		}
		return keys
	}
	srv, url := start(t, opts)
	first := stalledKeys(srv, url)
	if len(first) < objects/5 || len(first) > objects*4/5 {
		t.Errorf("%d of %d GETs stalled, want about half", len(first), objects)
	}
	if again := stalledKeys(srv, url); !slices.Equal(again, first) {
		t.Errorf("after ResetStats %v stalled, before %v: want the same GETs", again, first)
	}
	other, otherURL := start(t, opts)
	if same := stalledKeys(other, otherURL); !slices.Equal(same, first) {
		t.Errorf("another server with the seed stalled %v, the first %v", same, first)
	}
	reseeded := opts
	reseeded.Stalls.Seed = 8
	rs, rsURL := start(t, reseeded)
	if diff := stalledKeys(rs, rsURL); slices.Equal(diff, first) {
		t.Errorf("seed 8 stalled the same GETs as seed 7: %v", diff)
	}

	// A repeat of a stalled GET goes through.
	key := first[0]
	before := srv.Stats().Stalls
	if _, _, err := get(t, url+"/bench/"+key, "bytes=0-9999"); err != nil {
		t.Fatal(err)
	}
	if n := srv.Stats().Stalls; n != before {
		t.Errorf("a repeated GET stalled (%d stalls, %d before), want only first attempts", n, before)
	}

	// The shape of one stall: half the body, the pause, the rest.
	srv.ResetStats()
	req, _ := http.NewRequest(http.MethodGet, url+"/bench/"+key, nil)
	req.Header.Set("Range", "bytes=0-9999")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	half := make([]byte, size/2)
	if _, err := io.ReadFull(resp.Body, half); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	rest, err := io.ReadAll(resp.Body)
	if took := time.Since(t0); err != nil || took < pause*3/4 || !bytes.Equal(append(half, rest...), synthetic(key, 0, size)) {
		t.Errorf("after half the body the rest (%d bytes, %v) came in %v; want the object's bytes after a pause of about %v", len(rest), err, took, pause)
	}
}

// New rejects limits that cannot be meant.
func TestThrottleOptionsRejected(t *testing.T) {
	for _, o := range []Options{
		{Throttle: Throttle{MaxInFlight: -1}},
		{Throttle: Throttle{PrefixRate: -1}},
		{Stalls: Stalls{Fraction: 1.5, For: time.Second}},
		{Stalls: Stalls{Fraction: -0.1, For: time.Second}},
		{Stalls: Stalls{Fraction: 0.1, For: -time.Second}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", o)
		}
	}
}
