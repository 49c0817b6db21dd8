package s3emu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// The tests in this file guard, in CI, the behaviours the emulator was
// fixed for when measured with ceph/s3-tests (which CI cannot run): each
// one is what S3 answers, checked over real HTTP.

func put(t *testing.T, c *s3.Client, key string, body []byte, opt ...func(*s3.PutObjectInput)) *s3.PutObjectOutput {
	t.Helper()
	in := &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String(key), Body: bytes.NewReader(body)}
	for _, o := range opt {
		o(in)
	}
	out, err := c.PutObject(context.Background(), in)
	if err != nil {
		t.Fatalf("PutObject %s: %v", key, err)
	}
	return out
}

func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := errorCode(err); got != code {
		t.Errorf("%s: %v (code %q), want %s", what, err, got, code)
	}
}

// TestListObjectVersionsUnversioned: an unversioned bucket lists each
// object as its one version, "null", and a DELETE of version null
// deletes it.
func TestListObjectVersionsUnversioned(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	c := client(ep)
	ctx := context.Background()
	for _, k := range []string{"a", "d/b", "d/c"} {
		put(t, c, k, []byte(k))
	}
	out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("bench"), Delimiter: aws.String("/")})
	if err != nil {
		t.Fatalf("ListObjectVersions: %v", err)
	}
	if len(out.Versions) != 1 || aws.ToString(out.Versions[0].Key) != "a" || aws.ToString(out.Versions[0].VersionId) != "null" ||
		!aws.ToBool(out.Versions[0].IsLatest) || len(out.CommonPrefixes) != 1 || aws.ToString(out.CommonPrefixes[0].Prefix) != "d/" {
		t.Fatalf("ListObjectVersions: %+v %+v, want version null of a and prefix d/", out.Versions, out.CommonPrefixes)
	}
	page, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("bench"), MaxKeys: aws.Int32(2)})
	if err != nil || !aws.ToBool(page.IsTruncated) || aws.ToString(page.NextKeyMarker) != "d/b" || len(page.Versions) != 2 {
		t.Fatalf("ListObjectVersions max-keys 2: %v, %+v; want 2 versions, truncated at d/b", err, page)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bench"), Key: aws.String("a"), VersionId: aws.String("null")}); err != nil {
		t.Fatalf("DeleteObject version null: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bench"), Key: aws.String("a")}); err == nil {
		t.Errorf("after deleting version null, a is still there")
	}
}

// TestConditionalPut: If-None-Match "*" or the ETag fails with 412 when
// the object exists; If-Match fails with 404 when it does not and 412
// when the ETag differs; the same holds for CompleteMultipartUpload.
func TestConditionalPut(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	c := client(ep)
	ctx := context.Background()
	etag := put(t, c, "k", []byte("one"), func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") }).ETag
	try := func(key string, set func(*s3.PutObjectInput)) error {
		in := &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String(key), Body: strings.NewReader("two")}
		set(in)
		_, err := c.PutObject(ctx, in)
		return err
	}
	wantCode(t, "If-None-Match * on an object", try("k", func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") }), "PreconditionFailed")
	wantCode(t, "If-None-Match its ETag", try("k", func(in *s3.PutObjectInput) { in.IfNoneMatch = etag }), "PreconditionFailed")
	wantCode(t, "If-Match another ETag", try("k", func(in *s3.PutObjectInput) { in.IfMatch = aws.String(`"0123"`) }), "PreconditionFailed")
	wantCode(t, "If-Match on no object", try("none", func(in *s3.PutObjectInput) { in.IfMatch = aws.String("*") }), "NoSuchKey")
	if err := try("k", func(in *s3.PutObjectInput) { in.IfMatch = etag }); err != nil {
		t.Errorf("If-Match its ETag: %v", err)
	}
	id, parts := uploadParts(t, c, "k", []byte("three"))
	_, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bench"), Key: aws.String("k"), UploadId: id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}, IfNoneMatch: aws.String("*")})
	wantCode(t, "Complete with If-None-Match * on an object", err, "PreconditionFailed")
}

// TestCopyObjectRules: a copy onto itself needs the REPLACE directive
// (InvalidRequest without it); COPY keeps the source's metadata, REPLACE
// takes the request's; a failed x-amz-copy-source-if-match answers 412.
func TestCopyObjectRules(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	c := client(ep)
	ctx := context.Background()
	put(t, c, "src", []byte("body"), func(in *s3.PutObjectInput) {
		in.Metadata = map[string]string{"key1": "v1"}
		in.ContentType = aws.String("audio/ogg")
		in.CacheControl = aws.String("max-age=60")
	})
	cp := func(dst string, set func(*s3.CopyObjectInput)) error {
		in := &s3.CopyObjectInput{Bucket: aws.String("bench"), Key: aws.String(dst), CopySource: aws.String("bench/src")}
		if set != nil {
			set(in)
		}
		_, err := c.CopyObject(ctx, in)
		return err
	}
	wantCode(t, "copy onto itself without a directive", cp("src", nil), "InvalidRequest")
	wantCode(t, "copy with a failing copy-source-if-match", cp("x", func(in *s3.CopyObjectInput) { in.CopySourceIfMatch = aws.String(`"0123"`) }), "PreconditionFailed")
	wantCode(t, "copy with a failing copy-source-if-none-match", cp("x", func(in *s3.CopyObjectInput) { in.CopySourceIfNoneMatch = aws.String("*") }), "PreconditionFailed")
	if err := cp("kept", nil); err != nil {
		t.Fatal(err)
	}
	if err := cp("src", func(in *s3.CopyObjectInput) {
		in.MetadataDirective = types.MetadataDirectiveReplace
		in.Metadata = map[string]string{"key2": "v2"}
	}); err != nil {
		t.Fatalf("copy onto itself with REPLACE: %v", err)
	}
	for _, tc := range []struct {
		key  string
		meta map[string]string
		ct   string
		cc   string
	}{{"kept", map[string]string{"key1": "v1"}, "audio/ogg", "max-age=60"}, {"src", map[string]string{"key2": "v2"}, "", ""}} {
		out, body := getAll(t, c, &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String(tc.key)})
		if string(body) != "body" || fmt.Sprint(out.Metadata) != fmt.Sprint(tc.meta) || (tc.ct != "" && aws.ToString(out.ContentType) != tc.ct) || aws.ToString(out.CacheControl) != tc.cc {
			t.Errorf("%s: body %q metadata %v type %q cache-control %q, want %v %q %q", tc.key, body, out.Metadata, aws.ToString(out.ContentType), aws.ToString(out.CacheControl), tc.meta, tc.ct, tc.cc)
		}
	}
}

// TestMetadataAsS3 keeps it: names in lower case on the wire, replaced
// (not merged) by the next PUT, empty values kept, aws-chunked never
// stored in Content-Encoding.
func TestMetadataAsS3(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	c := client(ep)
	put(t, c, "m", []byte("x"), func(in *s3.PutObjectInput) {
		in.Metadata = map[string]string{"Meta1": "bar", "empty": ""}
		in.ContentEncoding = aws.String("gzip, aws-chunked")
	})
	resp, _ := raw(t, http.MethodHead, ep+"/bench/m", nil, nil)
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("Content-Encoding %q, want gzip", resp.Header.Get("Content-Encoding"))
	}
	req, _ := http.NewRequest(http.MethodHead, ep+"/bench/m", nil)
	conn, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	conn.Body.Close()
	if v, ok := conn.Header["X-Amz-Meta-Meta1"]; !ok || v[0] != "bar" {
		t.Errorf("HEAD headers %v, want x-amz-meta-meta1: bar", conn.Header)
	}
	if v, ok := conn.Header["X-Amz-Meta-Empty"]; !ok || v[0] != "" {
		t.Errorf("HEAD headers %v, want an empty x-amz-meta-empty", conn.Header)
	}
	put(t, c, "m", []byte("y"))
	resp, _ = raw(t, http.MethodHead, ep+"/bench/m", nil, nil)
	for k := range resp.Header {
		if strings.HasPrefix(k, "X-Amz-Meta-") || k == "Content-Encoding" {
			t.Errorf("after a PUT without metadata, HEAD still has %s: %v", k, resp.Header[k])
		}
	}
}

// TestRawMetadataCase reads the header names as sent, which net/http's
// client canonicalizes: a raw connection sees the lower case S3 sends.
func TestRawMetadataCase(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	raw(t, http.MethodPut, ep+"/bench/m", strings.NewReader("x"), map[string]string{"X-Amz-Meta-Foo": "bar"})
	b := rawExchange(t, ep, "HEAD /bench/m HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
	if !strings.Contains(b, "\r\nx-amz-meta-foo: bar\r\n") {
		t.Errorf("HEAD answer %q has no lower-case x-amz-meta-foo", b)
	}
}

// TestGetObjectAttributes: ETag (unquoted), ObjectSize, StorageClass,
// Checksum, and the parts of a multipart object, paged.
func TestGetObjectAttributes(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	c := client(ep)
	ctx := context.Background()
	etag := put(t, c, "one", []byte("foo")).ETag
	all := []types.ObjectAttributes{types.ObjectAttributesEtag, types.ObjectAttributesChecksum, types.ObjectAttributesObjectParts,
		types.ObjectAttributesStorageClass, types.ObjectAttributesObjectSize}
	out, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("bench"), Key: aws.String("one"), ObjectAttributes: all})
	if err != nil {
		t.Fatalf("GetObjectAttributes: %v", err)
	}
	if aws.ToString(out.ETag) != strings.Trim(aws.ToString(etag), `"`) || aws.ToInt64(out.ObjectSize) != 3 || out.StorageClass != types.StorageClassStandard ||
		out.ObjectParts != nil || out.Checksum == nil || aws.ToString(out.Checksum.ChecksumCRC64NVME) == "" {
		t.Errorf("GetObjectAttributes: ETag %q size %d class %q parts %v checksum %+v", aws.ToString(out.ETag), aws.ToInt64(out.ObjectSize), out.StorageClass, out.ObjectParts, out.Checksum)
	}
	id, parts := uploadParts(t, c, "multi", []byte("aa"), []byte("bbb"), []byte("c"))
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bench"), Key: aws.String("multi"), UploadId: id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	out, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("bench"), Key: aws.String("multi"), ObjectAttributes: all,
		MaxParts: aws.Int32(1), PartNumberMarker: aws.String("1")})
	if err != nil {
		t.Fatalf("GetObjectAttributes of a multipart object: %v", err)
	}
	op := out.ObjectParts
	if op == nil || aws.ToInt32(op.TotalPartsCount) != 3 || len(op.Parts) != 1 || aws.ToInt32(op.Parts[0].PartNumber) != 2 ||
		aws.ToInt64(op.Parts[0].Size) != 3 || !aws.ToBool(op.IsTruncated) || aws.ToString(op.NextPartNumberMarker) != "2" {
		t.Errorf("ObjectParts %+v, want 3 parts, part 2 of 3 bytes, truncated", op)
	}
}

// TestPartNumberGets: a multipart object's parts read back by number,
// with the parts count; an object uploaded whole is its part 1.
func TestPartNumberGets(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	c := client(ep)
	ctx := context.Background()
	id, parts := uploadParts(t, c, "multi", []byte("aa"), []byte("bbb"))
	done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bench"), Key: aws.String("multi"), UploadId: id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		t.Fatal(err)
	}
	out, body := getAll(t, c, &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String("multi"), PartNumber: aws.Int32(2)})
	if string(body) != "bbb" || aws.ToInt32(out.PartsCount) != 2 || aws.ToString(out.ETag) != aws.ToString(done.ETag) {
		t.Errorf("part 2: %q, parts count %d, ETag %s; want bbb, 2, %s", body, aws.ToInt32(out.PartsCount), aws.ToString(out.ETag), aws.ToString(done.ETag))
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String("multi"), PartNumber: aws.Int32(3)})
	wantCode(t, "part 3 of 2", err, "InvalidPart")
	put(t, c, "whole", []byte("body"))
	if _, body := getAll(t, c, &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String("whole"), PartNumber: aws.Int32(1)}); string(body) != "body" {
		t.Errorf("part 1 of an object uploaded whole: %q", body)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String("whole"), PartNumber: aws.Int32(2)})
	wantCode(t, "part 2 of an object uploaded whole", err, "InvalidPart")

	// A repeated Complete answers the same.
	again, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bench"), Key: aws.String("multi"), UploadId: id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil || aws.ToString(again.ETag) != aws.ToString(done.ETag) {
		t.Errorf("repeated Complete: %v, ETag %s, want %s", err, aws.ToString(again.ETag), aws.ToString(done.ETag))
	}
}

func crcValue(v uint32) string {
	return base64.StdEncoding.EncodeToString([]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// TestMultipartChecksums: an upload created with an algorithm answers it
// on create; its parts get their checksums; Complete answers a COMPOSITE
// SHA256 (the SHA256 of the parts' SHA256s, "-N") or a FULL_OBJECT CRC32
// (of the whole object), refuses a wrong one with BadDigest, and HEAD
// with checksum mode gives it with its type.
func TestMultipartChecksums(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	c := client(ep)
	ctx := context.Background()
	p1, p2 := bytes.Repeat([]byte("A"), 1000), bytes.Repeat([]byte("B"), 10)
	s1, s2 := sha256.Sum256(p1), sha256.Sum256(p2)
	comp := sha256.Sum256(append(s1[:], s2[:]...))
	wantComposite := base64.StdEncoding.EncodeToString(comp[:]) + "-2"
	wantCRC := crcValue(crc32.ChecksumIEEE(append(append([]byte{}, p1...), p2...)))
	for _, tc := range []struct {
		alg   types.ChecksumAlgorithm
		ctype types.ChecksumType
		want  string
	}{{types.ChecksumAlgorithmSha256, types.ChecksumTypeComposite, wantComposite}, {types.ChecksumAlgorithmCrc32, types.ChecksumTypeFullObject, wantCRC}} {
		key := "mp-" + string(tc.alg)
		for _, wrong := range []bool{true, false} {
			up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bench"), Key: aws.String(key), ChecksumAlgorithm: tc.alg, ChecksumType: tc.ctype})
			if err != nil || up.ChecksumAlgorithm != tc.alg || up.ChecksumType != tc.ctype {
				t.Fatalf("Create %s: %v, algorithm %q type %q", tc.alg, err, up.ChecksumAlgorithm, up.ChecksumType)
			}
			var done []types.CompletedPart
			for i, p := range [][]byte{p1, p2} {
				out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bench"), Key: aws.String(key), UploadId: up.UploadId,
					PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p), ChecksumAlgorithm: tc.alg})
				if err != nil {
					t.Fatal(err)
				}
				done = append(done, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(int32(i + 1)), ChecksumSHA256: out.ChecksumSHA256, ChecksumCRC32: out.ChecksumCRC32})
			}
			in := &s3.CompleteMultipartUploadInput{Bucket: aws.String("bench"), Key: aws.String(key), UploadId: up.UploadId,
				MultipartUpload: &types.CompletedMultipartUpload{Parts: done}}
			claim := tc.want
			if wrong {
				claim = "AAAAAA=="
			}
			if tc.alg == types.ChecksumAlgorithmSha256 {
				in.ChecksumSHA256 = aws.String(claim)
			} else {
				in.ChecksumCRC32 = aws.String(claim)
			}
			out, err := c.CompleteMultipartUpload(ctx, in)
			if wrong {
				wantCode(t, "Complete with a wrong "+string(tc.alg), err, "BadDigest")
				continue
			}
			if err != nil {
				t.Fatalf("Complete %s: %v", tc.alg, err)
			}
			got := aws.ToString(out.ChecksumSHA256) + aws.ToString(out.ChecksumCRC32)
			if got != tc.want || out.ChecksumType != tc.ctype {
				t.Errorf("Complete %s: checksum %q type %q, want %q %q", tc.alg, got, out.ChecksumType, tc.want, tc.ctype)
			}
			head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bench"), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil || aws.ToString(head.ChecksumSHA256)+aws.ToString(head.ChecksumCRC32) != tc.want || head.ChecksumType != tc.ctype {
				t.Errorf("HEAD %s: %v, %q %q %q", tc.alg, err, aws.ToString(head.ChecksumSHA256), aws.ToString(head.ChecksumCRC32), head.ChecksumType)
			}
		}
	}
}

// TestReadConditionsByDate: If-Modified-Since answers 304 for an object
// not modified since, If-Unmodified-Since 412 for one modified after.
func TestReadConditionsByDate(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	raw(t, http.MethodPut, ep+"/bench/d", strings.NewReader("x"), nil)
	past := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	future := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		hdr, date string
		want      int
	}{{"If-Modified-Since", future, 304}, {"If-Modified-Since", past, 200}, {"If-Unmodified-Since", past, 412}, {"If-Unmodified-Since", future, 200}} {
		if resp, _ := raw(t, http.MethodGet, ep+"/bench/d", nil, map[string]string{tc.hdr: tc.date}); resp.StatusCode != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.hdr, tc.date, resp.StatusCode, tc.want)
		}
	}
}

// TestListingAsS3: encoding-type=url encodes keys as S3 does ("/" kept,
// space as %20, "+" as %2B), max-keys=0 is an empty page that is not
// truncated, V1 listings name owners, V2 with fetch-owner, and an empty
// continuation-token is answered.
func TestListingAsS3(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	for _, k := range []string{"foo+1/bar", "foo/bar/xyzzy", "quux ab/thud", "asdf+b"} {
		raw(t, http.MethodPut, ep+"/bench/"+strings.ReplaceAll(strings.ReplaceAll(k, "+", "%2B"), " ", "%20"), strings.NewReader("x"), nil)
	}
	_, b := raw(t, http.MethodGet, ep+"/bench?delimiter=/&encoding-type=url", nil, nil)
	for _, want := range []string{"<Key>asdf%2Bb</Key>", "<Prefix>foo%2B1/</Prefix>", "<Prefix>foo/</Prefix>", "<Prefix>quux%20ab/</Prefix>", "<Delimiter>/</Delimiter>", "<Owner>"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("V1 listing with encoding-type=url lacks %s: %s", want, b)
		}
	}
	_, b = raw(t, http.MethodGet, ep+"/bench?list-type=2&max-keys=0&continuation-token=", nil, nil)
	for _, want := range []string{"<IsTruncated>false</IsTruncated>", "<KeyCount>0</KeyCount>", "<ContinuationToken></ContinuationToken>"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("V2 listing max-keys=0 lacks %s: %s", want, b)
		}
	}
	if _, b = raw(t, http.MethodGet, ep+"/bench?list-type=2", nil, nil); strings.Contains(string(b), "<Owner>") {
		t.Errorf("V2 listing without fetch-owner names owners: %s", b)
	}
	if _, b = raw(t, http.MethodGet, ep+"/bench?list-type=2&fetch-owner=true", nil, nil); !strings.Contains(string(b), "<Owner>") {
		t.Errorf("V2 listing with fetch-owner names no owner: %s", b)
	}
}

// TestRequestEdges: DeleteObjects of more than 1,000 keys is MalformedXML;
// an error's RequestId is its x-amz-request-id; a PUT with chunked
// transfer encoding and no length is stored; a key that is not UTF-8 is
// 400.
func TestRequestEdges(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	var del strings.Builder
	del.WriteString("<Delete>")
	for i := range 1001 {
		fmt.Fprintf(&del, "<Object><Key>k%d</Key></Object>", i)
	}
	del.WriteString("</Delete>")
	if resp, b := raw(t, http.MethodPost, ep+"/bench?delete", strings.NewReader(del.String()), nil); resp.StatusCode != 400 || !strings.Contains(string(b), "MalformedXML") {
		t.Errorf("DeleteObjects of 1001 keys: %d %s, want 400 MalformedXML", resp.StatusCode, b)
	}
	resp, b := raw(t, http.MethodGet, ep+"/bench/missing", nil, nil)
	if id := resp.Header.Get("X-Amz-Request-Id"); id == "" || !strings.Contains(string(b), "<RequestId>"+id+"</RequestId>") {
		t.Errorf("error answer: x-amz-request-id %q, body %s", id, b)
	}
	// A reader of unknown length makes net/http send it chunked.
	if resp, b := raw(t, http.MethodPut, ep+"/bench/te", struct{ opaqueReader }{strings.NewReader("chunked body")}, nil); resp.StatusCode != 200 {
		t.Fatalf("PUT with chunked transfer encoding: %d %s", resp.StatusCode, b)
	}
	if _, b := raw(t, http.MethodGet, ep+"/bench/te", nil, nil); string(b) != "chunked body" {
		t.Errorf("GET after a chunked PUT: %q", b)
	}
	if resp, _ := raw(t, http.MethodGet, ep+"/bench/%AE%8A-", nil, nil); resp.StatusCode != 400 {
		t.Errorf("GET of a key that is not UTF-8: %d, want 400", resp.StatusCode)
	}
}

// opaqueReader hides a reader's type, so net/http cannot know its length.
type opaqueReader interface{ Read([]byte) (int, error) }

// rawExchange sends a request on a new connection and returns all that
// comes back.
func rawExchange(t *testing.T, ep, req string) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(ep, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	io.WriteString(conn, req)
	b, _ := io.ReadAll(conn)
	return string(b)
}
