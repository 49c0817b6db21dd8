package s3emu

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/crc64nvme"
)

func TestGetRanges(t *testing.T) {
	_, ep := start(t, Options{Dataset: "obj:2:1000000,empty:1:0"})
	c := client(ep)
	key := "obj/00000001"
	whole := synthetic(key, 0, 1000000)
	_, got := getAll(t, c, &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String(key)})
	if !bytes.Equal(got, whole) {
		t.Fatalf("whole GET: %d bytes, not the synthetic content", len(got))
	}
	tests := []struct {
		rng          string
		first, last  int64
		contentRange string
	}{
		{"bytes=0-0", 0, 0, "bytes 0-0/1000000"},
		{"bytes=1000-265143", 1000, 265143, "bytes 1000-265143/1000000"},
		{"bytes=999990-", 999990, 999999, "bytes 999990-999999/1000000"},
		{"bytes=-10", 999990, 999999, "bytes 999990-999999/1000000"},
		{"bytes=999999-2000000", 999999, 999999, "bytes 999999-999999/1000000"},
	}
	for _, tt := range tests {
		out, got := getAll(t, c, &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String(key), Range: aws.String(tt.rng)})
		if !bytes.Equal(got, whole[tt.first:tt.last+1]) {
			t.Errorf("GET %s: %d bytes, not bytes %d-%d", tt.rng, len(got), tt.first, tt.last)
		}
		if aws.ToString(out.ContentRange) != tt.contentRange {
			t.Errorf("GET %s: Content-Range %q, want %q", tt.rng, aws.ToString(out.ContentRange), tt.contentRange)
		}
	}
	_, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String(key), Range: aws.String("bytes=1000000-")})
	if got := errorCode(err); got != "InvalidRange" {
		t.Errorf("GET past the end: error %v, want InvalidRange", err)
	}
	// A zero-byte object: 200 whole, 416 ranged (as S3 answers).
	_, got = getAll(t, c, &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String("empty/00000000")})
	if len(got) != 0 {
		t.Errorf("empty object: %d bytes", len(got))
	}
	_, err = c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String("empty/00000000"), Range: aws.String("bytes=0-")})
	if got := errorCode(err); got != "InvalidRange" {
		t.Errorf("ranged GET of an empty object: error %v, want InvalidRange", err)
	}
	_, err = c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String("obj/00000002")})
	if got := errorCode(err); got != "NoSuchKey" {
		t.Errorf("GET of a missing key: error %v, want NoSuchKey", err)
	}
}

func listAll(t *testing.T, c *s3.Client, in *s3.ListObjectsV2Input) (keys, prefixes []string, pages int) {
	t.Helper()
	p := s3.NewListObjectsV2Paginator(c, in)
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("ListObjectsV2: %v", err)
		}
		pages++
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		for _, cp := range out.CommonPrefixes {
			prefixes = append(prefixes, aws.ToString(cp.Prefix))
		}
	}
	return keys, prefixes, pages
}

func TestListPaging(t *testing.T) {
	s, ep := start(t, Options{Dataset: "b:10:0,a:2500:1,c/d:5:1,c/e:1:1"})
	c := client(ep)
	keys, _, pages := listAll(t, c, &s3.ListObjectsV2Input{Bucket: aws.String("bench")})
	if len(keys) != 2516 || pages != 3 {
		t.Fatalf("listed %d keys in %d pages, want 2516 in 3", len(keys), pages)
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Fatalf("keys out of order: %q then %q", keys[i-1], keys[i])
		}
	}
	if keys[0] != "a/00000000" || keys[2500] != "b/00000000" || keys[2515] != "c/e/00000000" {
		t.Errorf("keys[0,2500,2515] = %q %q %q", keys[0], keys[2500], keys[2515])
	}
	for _, k := range keys {
		if _, ok := s.Dataset().Lookup(k); !ok {
			t.Errorf("listed key %q is not in the dataset", k)
		}
	}
	_, prefixes, _ := listAll(t, c, &s3.ListObjectsV2Input{Bucket: aws.String("bench"), Delimiter: aws.String("/")})
	if got := strings.Join(prefixes, " "); got != "a/ b/ c/" {
		t.Errorf("common prefixes = %q, want %q", got, "a/ b/ c/")
	}
	// Paging through common prefixes, one per page.
	_, prefixes, pages = listAll(t, c, &s3.ListObjectsV2Input{Bucket: aws.String("bench"), Prefix: aws.String("c/"), Delimiter: aws.String("/"), MaxKeys: aws.Int32(1)})
	if got := strings.Join(prefixes, " "); got != "c/d/ c/e/" || pages != 2 {
		t.Errorf("c/ prefixes = %q in %d pages, want %q in 2", got, pages, "c/d/ c/e/")
	}
	keys, _, pages = listAll(t, c, &s3.ListObjectsV2Input{Bucket: aws.String("bench"), Prefix: aws.String("a/0000249"), MaxKeys: aws.Int32(4)})
	if len(keys) != 10 || pages != 3 {
		t.Errorf("prefix a/0000249: %d keys in %d pages, want 10 in 3", len(keys), pages)
	}
	keys, _, _ = listAll(t, c, &s3.ListObjectsV2Input{Bucket: aws.String("bench"), StartAfter: aws.String("b/00000008")})
	if got := strings.Join(keys, " "); got != "b/00000009 c/d/00000000 c/d/00000001 c/d/00000002 c/d/00000003 c/d/00000004 c/e/00000000" {
		t.Errorf("start-after b/00000008: %s", got)
	}
	// V1 listing with a marker.
	out, err := c.ListObjects(context.Background(), &s3.ListObjectsInput{Bucket: aws.String("bench"), Marker: aws.String("c/d/00000003")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 2 || aws.ToString(out.Contents[0].Key) != "c/d/00000004" {
		t.Errorf("V1 after c/d/00000003: %d objects", len(out.Contents))
	}
}

func TestListManyKeysBoundedHeap(t *testing.T) {
	const n = 200_000
	_, ep := start(t, Options{Dataset: fmt.Sprintf("many:%d:1", n)})
	// Raw requests and a regexp, not the SDK: the heap measured is the
	// server's, and the test stays quick under -race.
	tokenRe := regexp.MustCompile(`<NextContinuationToken>([^<]*)</NextContinuationToken>`)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	count, pages, token := 0, 0, ""
	for {
		u := ep + "/bench?list-type=2"
		if token != "" {
			u += "&continuation-token=" + token
		}
		resp, body := raw(t, http.MethodGet, u, nil, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("list page %d: status %d", pages, resp.StatusCode)
		}
		count += bytes.Count(body, []byte("<Contents>"))
		if pages++; pages%40 == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
		m := tokenRe.FindSubmatch(body)
		if m == nil {
			break
		}
		token = string(m[1])
	}
	if count != n || pages != n/maxListKeys {
		t.Fatalf("listed %d keys in %d pages, want %d in %d", count, pages, n, n/maxListKeys)
	}
	if grown := int64(peak) - int64(base); grown > 8<<20 {
		t.Errorf("heap grew by %d MiB while listing %d keys, want a bounded heap (< 8 MiB)", grown>>20, n)
	}
}

func TestETags(t *testing.T) {
	_, ep := start(t, Options{Dataset: "small:3:100000,big:1:65MiB"})
	c := client(ep)
	key := "small/00000002"
	head, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("bench"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := aws.ToString(head.ETag), md5hex(synthetic(key, 0, 100000)); got != want {
		t.Errorf("ETag of %s = %s, want its MD5 %s", key, got, want)
	}
	bigHead, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("bench"), Key: aws.String("big/00000000")})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(bigHead.ETag); !regexp.MustCompile(`^"[0-9a-f]{32}-9"$`).MatchString(got) {
		t.Errorf("ETag of a 65 MiB object = %s, want a 9-part multipart ETag", got)
	}
	out, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("bench")})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]types.Object{}
	for _, o := range out.Contents {
		listed[aws.ToString(o.Key)] = o
	}
	if o := listed[key]; aws.ToString(o.ETag) != aws.ToString(head.ETag) || aws.ToInt64(o.Size) != 100000 {
		t.Errorf("listing of %s: ETag %s size %d, want %s 100000", key, aws.ToString(o.ETag), aws.ToInt64(o.Size), aws.ToString(head.ETag))
	}
	if o := listed["big/00000000"]; aws.ToString(o.ETag) != aws.ToString(bigHead.ETag) || len(o.ChecksumAlgorithm) != 1 || o.ChecksumAlgorithm[0] != types.ChecksumAlgorithmCrc64nvme {
		t.Errorf("listing of big: ETag %s algorithms %v, want %s [CRC64NVME]", aws.ToString(o.ETag), o.ChecksumAlgorithm, aws.ToString(bigHead.ETag))
	}
}

func TestIfMatch(t *testing.T) {
	_, ep := start(t, Options{Dataset: "o:1:5000"})
	c := client(ep)
	in := func(etag string) *s3.GetObjectInput {
		return &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String("o/00000000"), IfMatch: aws.String(etag), Range: aws.String("bytes=10-19")}
	}
	etag := md5hex(synthetic("o/00000000", 0, 5000))
	if _, got := getAll(t, c, in(etag)); len(got) != 10 {
		t.Errorf("GET with the right If-Match: %d bytes, want 10", len(got))
	}
	_, err := c.GetObject(context.Background(), in(`"0123456789abcdef0123456789abcdef"`))
	if got := errorCode(err); got != "PreconditionFailed" {
		t.Errorf("GET with a wrong If-Match: error %v, want PreconditionFailed", err)
	}
	_, err = c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("bench"), Key: aws.String("o/00000000"), IfMatch: aws.String(`"nope"`)})
	resp, body := raw(t, http.MethodGet, ep+"/bench/o/00000000", nil, map[string]string{"If-Match": `"nope"`})
	if err == nil || resp.StatusCode != http.StatusPreconditionFailed || !bytes.Contains(body, []byte("<Code>PreconditionFailed</Code>")) {
		t.Errorf("wrong If-Match: HEAD error %v, GET status %d body %q; want 412 PreconditionFailed", err, resp.StatusCode, body)
	}
}

func TestChecksumsOnWholeReadsOnly(t *testing.T) {
	_, ep := start(t, Options{Dataset: "o:1:300000"})
	key := "o/00000000"
	want := crc64Value(crc64nvme.Checksum(synthetic(key, 0, 300000)))
	mode := map[string]string{"x-amz-checksum-mode": "ENABLED"}
	url := ep + "/bench/" + key
	tests := []struct {
		name   string
		method string
		hdr    map[string]string
		want   string
	}{
		{"HEAD with checksum mode", http.MethodHead, mode, want},
		{"whole GET with checksum mode", http.MethodGet, mode, want},
		{"whole GET without checksum mode", http.MethodGet, nil, ""},
		{"ranged GET with checksum mode", http.MethodGet, map[string]string{"x-amz-checksum-mode": "ENABLED", "Range": "bytes=0-99"}, ""},
	}
	for _, tt := range tests {
		resp, _ := raw(t, tt.method, url, nil, tt.hdr)
		if got := resp.Header.Get("x-amz-checksum-crc64nvme"); got != tt.want {
			t.Errorf("%s: x-amz-checksum-crc64nvme = %q, want %q", tt.name, got, tt.want)
		}
	}
	head, err := client(ep).HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("bench"), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(head.ChecksumCRC64NVME) != want {
		t.Errorf("SDK HEAD: checksum %q, %v, want %q", aws.ToString(head.ChecksumCRC64NVME), err, want)
	}
}

func TestTTFB(t *testing.T) {
	_, ep := start(t, Options{Dataset: "o:1:10", TTFB: 150 * time.Millisecond})
	t0 := time.Now()
	resp, _ := raw(t, http.MethodHead, ep+"/bench/o/00000000", nil, nil)
	if d := time.Since(t0); resp.StatusCode != http.StatusOK || d < 150*time.Millisecond {
		t.Errorf("HEAD took %v (status %d), want at least the 150ms TTFB", d, resp.StatusCode)
	}
}

func TestConnRate(t *testing.T) {
	const rate, size = 8 << 20, 8 << 20 // one second at the cap
	s, ep := start(t, Options{Dataset: fmt.Sprintf("o:1:%d", size), ConnRate: rate})
	t0 := time.Now()
	resp, body := raw(t, http.MethodGet, ep+"/bench/o/00000000", nil, nil)
	d := time.Since(t0)
	if resp.StatusCode != http.StatusOK || len(body) != size {
		t.Fatalf("GET: status %d, %d bytes", resp.StatusCode, len(body))
	}
	if st := s.Stats(); st.PacingFailures != 0 {
		t.Fatalf("SO_MAX_PACING_RATE failed on %d connections", st.PacingFailures)
	}
	if got := float64(size) / d.Seconds(); got > 1.5*rate {
		t.Errorf("one connection ran at %.1f MiB/s, want at most about the %d MiB/s cap", got/(1<<20), rate>>20)
	}
}

func TestStatsAndLog(t *testing.T) {
	s, ep := start(t, Options{Dataset: "o:2:1000", LogRequests: true, LogLimit: 3})
	raw(t, http.MethodGet, ep+"/bench?list-type=2", nil, nil)
	raw(t, http.MethodHead, ep+"/bench/o/00000000", nil, nil)
	raw(t, http.MethodGet, ep+"/bench/o/00000001", nil, map[string]string{"Range": "bytes=0-99"})
	raw(t, http.MethodGet, ep+"/bench/o/00000001", nil, nil)
	st := s.Stats()
	if st.Requests != 4 || st.ListRequests != 1 || st.HeadRequests != 1 || st.GetRequests != 2 || st.LogDropped != 1 || st.InFlight != 0 || st.MaxInFlight != 1 {
		t.Errorf("stats = %+v", st)
	}
	if got := s.BytesSentFor("bench", "o/00000001"); got != 1100 {
		t.Errorf("BytesSentFor(o/00000001) = %d, want 1100", got)
	}
	log := s.Log()
	if len(log) != 3 || log[0].Query != "list-type=2" || log[2].Range != "bytes=0-99" || log[2].Status != http.StatusPartialContent || log[2].Bytes != 100 {
		t.Errorf("log = %+v", log)
	}
	s.ResetStats()
	if st := s.Stats(); st.Requests != 0 || len(s.Log()) != 0 || s.BytesSentFor("bench", "o/00000001") != 0 {
		t.Errorf("after ResetStats: %+v, %d log entries", st, len(s.Log()))
	}
}

func TestSyntheticBucketIsReadOnly(t *testing.T) {
	_, ep := start(t, Options{Dataset: "o:1:10"})
	_, err := client(ep).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String("x"), Body: strings.NewReader("x")})
	if got := errorCode(err); got != "AccessDenied" {
		t.Errorf("PUT into the synthetic bucket: error %v, want AccessDenied", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{{Backend: "tape"}, {Dataset: "x"}, {Backend: "memory", Dataset: "a:1:1"}, {Buckets: []string{"Bad_Name"}}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", o)
		}
	}
}

// A paced GET counts as in flight until its body is nearly delivered, as
// S3 counts it, not only until the body fits in a send buffer: halfway
// through a one-second body, the server still serves it.
func TestConnRateHoldsTheRequestInFlight(t *testing.T) {
	const rate, size = 4 << 20, 4 << 20 // one second at the cap
	s, ep := start(t, Options{Dataset: fmt.Sprintf("o:1:%d", size), ConnRate: rate})
	resp, err := http.Get(ep + "/bench/o/00000000")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadFull(resp.Body, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond) // the client reads slowly: no buffer hides the rate
	if got := s.Stats().InFlight; got != 1 {
		t.Errorf("in flight halfway through the body: %d, want 1", got)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || n != size-1<<20 {
		t.Fatalf("rest of the body: %d bytes, %v", n, err)
	}
}
