package s3emu

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/crc64nvme"
)

// awsChunked frames body as aws-chunked in chunks of size, with chunk
// signatures when signed and the trailer lines given (none: no trailer).
func awsChunked(body []byte, size int, signed bool, trailer ...string) []byte {
	var b bytes.Buffer
	ext := func() string {
		if signed {
			return ";chunk-signature=" + strings.Repeat("0", 64)
		}
		return ""
	}
	for off := 0; off < len(body); off += size {
		end := min(off+size, len(body))
		fmt.Fprintf(&b, "%x%s\r\n", end-off, ext())
		b.Write(body[off:end])
		b.WriteString("\r\n")
	}
	fmt.Fprintf(&b, "0%s\r\n", ext())
	for _, t := range trailer {
		b.WriteString(t + "\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

func crc32Value(p []byte) string {
	v := crc32.ChecksumIEEE(p)
	return base64.StdEncoding.EncodeToString([]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// TestAWSChunkedBodiesAreDecoded: every aws-chunked form is stored as
// its decoded bytes, its trailing checksum is checked (BadDigest on a
// mismatch, nothing stored), and a body whose length differs from
// x-amz-decoded-content-length is refused.
func TestAWSChunkedBodiesAreDecoded(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	body := make([]byte, 200_000)
	rand.Read(body)
	good := "x-amz-checksum-crc32:" + crc32Value(body)
	cases := []struct {
		name     string
		sha      string
		framed   []byte
		trailer  string
		decoded  int
		wantCode string // "" for success
	}{
		{"signed", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", awsChunked(body, 65536, true), "", len(body), ""},
		{"unsigned trailer", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", awsChunked(body, 65536, false, good), "x-amz-checksum-crc32", len(body), ""},
		{"signed trailer", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", awsChunked(body, 65536, true, good, "x-amz-trailer-signature:"+strings.Repeat("0", 64)), "x-amz-checksum-crc32", len(body), ""},
		{"one chunk", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", awsChunked(body, len(body), false, good), "x-amz-checksum-crc32", len(body), ""},
		{"empty", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", awsChunked(nil, 1, false, "x-amz-checksum-crc32:"+crc32Value(nil)), "x-amz-checksum-crc32", 0, ""},
		{"wrong trailer checksum", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", awsChunked(body, 65536, false, "x-amz-checksum-crc32:AAAAAA=="), "x-amz-checksum-crc32", len(body), "BadDigest"},
		{"trailer missing", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", awsChunked(body, 65536, false), "x-amz-checksum-crc32", len(body), "MalformedTrailerError"},
		{"decoded length too short", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", awsChunked(body, 65536, false, good), "x-amz-checksum-crc32", len(body) - 1, "IncompleteBody"},
		{"decoded length too long", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", awsChunked(body, 65536, false, good), "x-amz-checksum-crc32", len(body) + 1, "IncompleteBody"},
		{"bad framing", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", []byte("zz\r\nabc"), "", 3, "IncompleteBody"},
	}
	for _, tc := range cases {
		for _, target := range []string{"put", "part"} {
			t.Run(tc.name+"/"+target, func(t *testing.T) {
				key := strings.ReplaceAll(tc.name, " ", "-") + "-" + target
				url := ep + "/bench/" + key
				var uploadID string
				if target == "part" {
					if tc.decoded == 0 {
						t.Skip("a part is never empty") // not a skip of a missing tool: this row has no part form
					}
					resp, b := raw(t, http.MethodPost, url+"?uploads", nil, nil)
					if resp.StatusCode != 200 {
						t.Fatalf("CreateMultipartUpload: %d %s", resp.StatusCode, b)
					}
					uploadID = between(string(b), "<UploadId>", "</UploadId>")
					url += "?partNumber=1&uploadId=" + uploadID
				}
				hdr := map[string]string{"x-amz-content-sha256": tc.sha, "Content-Encoding": "aws-chunked",
					"x-amz-decoded-content-length": strconv.Itoa(tc.decoded)}
				if tc.trailer != "" {
					hdr["x-amz-trailer"] = tc.trailer
				}
				resp, msg := raw(t, http.MethodPut, url, bytes.NewReader(tc.framed), hdr)
				if tc.wantCode != "" {
					if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), "<Code>"+tc.wantCode+"</Code>") {
						t.Fatalf("PUT: %d %s, want 400 %s", resp.StatusCode, msg, tc.wantCode)
					}
					if target == "put" {
						if resp, _ := raw(t, http.MethodHead, ep+"/bench/"+key, nil, nil); resp.StatusCode != http.StatusNotFound {
							t.Errorf("after a refused PUT, HEAD answers %d, want 404", resp.StatusCode)
						}
					}
					return
				}
				if resp.StatusCode != 200 {
					t.Fatalf("PUT: %d %s", resp.StatusCode, msg)
				}
				if tc.trailer != "" {
					if got, want := resp.Header.Get(tc.trailer), crc32Value(body[:tc.decoded]); got != want {
						t.Errorf("answer's %s %q, want %q", tc.trailer, got, want)
					}
				}
				if target == "part" {
					etag := resp.Header.Get("ETag")
					resp, b := raw(t, http.MethodPost, ep+"/bench/"+key+"?uploadId="+uploadID,
						strings.NewReader("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"+etag+"</ETag></Part></CompleteMultipartUpload>"), nil)
					if resp.StatusCode != 200 {
						t.Fatalf("Complete: %d %s", resp.StatusCode, b)
					}
				}
				resp, got := raw(t, http.MethodGet, ep+"/bench/"+key, nil, nil)
				if resp.StatusCode != 200 || !bytes.Equal(got, body[:tc.decoded]) {
					t.Errorf("GET: %d, %d bytes (equal: %v), want the %d decoded bytes", resp.StatusCode, len(got), bytes.Equal(got, body[:tc.decoded]), tc.decoded)
				}
				if ce := resp.Header.Get("Content-Encoding"); ce != "" {
					t.Errorf("GET: Content-Encoding %q, want none (aws-chunked is the upload's framing)", ce)
				}
			})
		}
	}
}

func between(s, a, b string) string {
	_, rest, _ := strings.Cut(s, a)
	v, _, _ := strings.Cut(rest, b)
	return v
}

// TestSDKStreamedUploadOverTLS: the Go SDK sends an unseekable body over
// HTTPS as aws-chunked with its checksum in a trailer; the object stored
// is the body, byte for byte, with that checksum.
func TestSDKStreamedUploadOverTLS(t *testing.T) {
	ts := NewTLSTestServer(t, Options{Backend: BackendMemory})
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(ts.URL), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 1,
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.TLSClientConfig = ts.Client().Transport.(*http.Transport).TLSClientConfig
		})})
	ctx := context.Background()
	body := make([]byte, 1_000_000)
	rand.Read(body)
	// An io.Reader that is not a Seeker: the SDK cannot hash it up front.
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String("streamed"),
		Body: io.MultiReader(bytes.NewReader(body)), ContentLength: aws.Int64(int64(len(body))),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme})
	if err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	out, got := getAll(t, c, &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String("streamed"), ChecksumMode: types.ChecksumModeEnabled})
	if !bytes.Equal(got, body) {
		t.Fatalf("GET: %d bytes, want the %d put (equal: false)", len(got), len(body))
	}
	if got, want := aws.ToString(out.ChecksumCRC64NVME), crc64Value(crc64nvme.Checksum(body)); got != want {
		t.Errorf("CRC64NVME %q, want %q", got, want)
	}
}

// TestContinueBeforeEmptyBody: a request with Expect: 100-continue gets
// 100 Continue before its final answer, also when its body is empty.
func TestContinueBeforeEmptyBody(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	conn, err := net.Dial("tcp", strings.TrimPrefix(ep, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(conn)
	for i, body := range []string{"", "hello"} {
		fmt.Fprintf(conn, "PUT /bench/c%d HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", i, strings.TrimPrefix(ep, "http://"), len(body))
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
			t.Fatalf("PUT of %d bytes: first line %q (%v), want 100 Continue", len(body), line, err)
		}
		if l, _ := br.ReadString('\n'); l != "\r\n" {
			t.Fatalf("after 100 Continue: %q, want an empty line", l)
		}
		io.WriteString(conn, body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("PUT of %d bytes: %v %v, want 200", len(body), resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
