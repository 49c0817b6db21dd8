package s3store

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// A page as S3 sends it: namespace, owner, two checksum algorithms, a
// restore status, entities, a self-closing element, URL-encoded keys.
const s3Page = `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>a%20b/</Prefix>
<KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>
<Contents><Key>a%20b/x+y%26z%3C%3E</Key><LastModified>2025-03-01T10:20:30.000Z</LastModified>
<ETag>&quot;d41d8cd98f00b204e9800998ecf8427e&quot;</ETag><ChecksumAlgorithm>CRC64NVME</ChecksumAlgorithm>
<ChecksumAlgorithm>CRC32</ChecksumAlgorithm><ChecksumType>FULL_OBJECT</ChecksumType><Size>12345678901</Size>
<Owner><ID>abc</ID><DisplayName>me</DisplayName></Owner><StorageClass>GLACIER</StorageClass>
<RestoreStatus><IsRestoreInProgress>false</IsRestoreInProgress></RestoreStatus></Contents>
<Contents><Key>a%20b/%E2%82%AC</Key><LastModified>2025-03-01T10:20:31Z</LastModified><ETag>"x-2"</ETag>
<Size>0</Size><StorageClass/></Contents>
<!-- a comment --><NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
<ContinuationToken>prev</ContinuationToken></ListBucketResult>`

func TestParsePage(t *testing.T) {
	var p listPage
	if err := parsePage([]byte(s3Page), &p); err != nil {
		t.Fatal(err)
	}
	want := listPage{truncated: true, encoded: true, next: "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=", contents: []listEntry{
		{key: "a b/x y&z<>", etag: `"d41d8cd98f00b204e9800998ecf8427e"`, storageClass: "GLACIER", checksumAlgorithm: "CRC64NVME",
			size: 12345678901, modTime: time.Date(2025, 3, 1, 10, 20, 30, 0, time.UTC)},
		{key: "a b/€", etag: `"x-2"`, modTime: time.Date(2025, 3, 1, 10, 20, 31, 0, time.UTC)},
	}}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("parsed\n%+v\nwant\n%+v", p, want)
	}
}

// A page without EncodingType (a server that ignores encoding-type=url)
// is taken literally: "%41" stays "%41", "+" stays "+", and the page says
// it was not encoded.
func TestParsePageLiteral(t *testing.T) {
	doc := `<ListBucketResult><IsTruncated>false</IsTruncated>` +
		`<Contents><Key>/p%41q+r s</Key><Size>1</Size></Contents>` +
		`<CommonPrefixes><Prefix>%2F/</Prefix></CommonPrefixes></ListBucketResult>`
	var p listPage
	if err := parsePage([]byte(doc), &p); err != nil {
		t.Fatal(err)
	}
	if p.encoded || len(p.contents) != 1 || p.contents[0].key != "/p%41q+r s" || len(p.prefixes) != 1 || p.prefixes[0] != "%2F/" {
		t.Fatalf("parsed %+v, want the key and prefix as written, not encoded", p)
	}
}

func TestParsePageRefuses(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"truncated", `<ListBucketResult><Contents><Key>a</Key>`, "unexpected end"},
		{"mismatched", `<ListBucketResult><Contents><Key>a</Size></Contents></ListBucketResult>`, "unexpected </Size>"},
		{"not a listing", `<Error><Code>AccessDenied</Code></Error>`, "not a ListBucketResult"},
		{"unknown entity", `<ListBucketResult><Contents><Key>a&nbsp;</Key></Contents></ListBucketResult>`, "unknown entity"},
		{"cdata", `<ListBucketResult><Contents><Key><![CDATA[a]]></Key></Contents></ListBucketResult>`, "CDATA"},
		{"bad escape", `<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>%zz</Key></Contents></ListBucketResult>`, "url-encoded key"},
		{"unterminated tag", `<ListBucketResult><Contents`, "unterminated tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p listPage
			err := parsePage([]byte(tt.doc), &p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// A field of one entry that cannot be read fails that entry, not the page.
func TestParsePageBadFieldFailsTheEntry(t *testing.T) {
	tests := []struct{ name, field, want string }{
		{"bad size", "<Size>x</Size>", "listed size"},
		{"negative size", "<Size>-1</Size>", "listed size"},
		{"bad time", "<LastModified>yesterday</LastModified>", "listed last-modified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `<ListBucketResult><Contents><Key>a</Key>` + tt.field + `</Contents><Contents><Key>b</Key><Size>7</Size></Contents></ListBucketResult>`
			var p listPage
			if err := parsePage([]byte(doc), &p); err != nil {
				t.Fatalf("the page failed: %v", err)
			}
			if len(p.contents) != 2 || p.contents[0].err == nil || !strings.Contains(p.contents[0].err.Error(), tt.want) {
				t.Fatalf("entries %+v, want a's error to contain %q", p.contents, tt.want)
			}
			if b := p.contents[1]; b.err != nil || b.key != "b" || b.size != 7 {
				t.Errorf("the next entry %+v, want b of 7 bytes", b)
			}
		})
	}
}

// sdkPage is a ListBucketResult as encoding/xml writes it, the reference
// the scanner is checked against.
type sdkPage struct {
	XMLName               xml.Name `xml:"ListBucketResult"`
	IsTruncated           bool
	Encoding              string `xml:"EncodingType,omitempty"`
	Contents              []sdkEntry
	NextContinuationToken string `xml:",omitempty"`
}

type sdkEntry struct {
	Key          string
	LastModified time.Time
	ETag         string
	Size         int64
	StorageClass string
}

// TestParsePageMatchesEncodingXML writes random pages (keys with every
// character XML allows, some URL-encoded) with encoding/xml and checks
// that the scanner reads back what encoding/xml reads.
func TestParsePageMatchesEncodingXML(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	alphabet := []rune("ab/ +&<>\"'%;#=\t\n\r€😀\u00a0\u2028")
	var p listPage
	for i := range 500 {
		var page sdkPage
		page.IsTruncated = rng.IntN(2) == 0
		encoded := rng.IntN(2) == 0
		if encoded {
			page.Encoding = "url"
		}
		if page.IsTruncated {
			page.NextContinuationToken = fmt.Sprintf("tok/%d+=", i)
		}
		n := rng.IntN(5)
		keys := make([]string, n)
		for j := range n {
			var b strings.Builder
			for range 1 + rng.IntN(12) {
				b.WriteRune(alphabet[rng.IntN(len(alphabet))])
			}
			keys[j] = b.String()
			page.Contents = append(page.Contents, sdkEntry{Key: keys[j], LastModified: time.Unix(rng.Int64N(2e9), rng.Int64N(1e9)).UTC(), ETag: `"` + keys[j] + `"`, Size: rng.Int64N(1 << 40), StorageClass: "STANDARD"})
			if encoded {
				page.Contents[j].Key = url.QueryEscape(keys[j])
			}
		}
		doc, err := xml.Marshal(page)
		if err != nil {
			t.Fatal(err)
		}
		var ref sdkPage
		if err := xml.Unmarshal(doc, &ref); err != nil {
			t.Fatal(err)
		}
		if err := parsePage(doc, &p); err != nil {
			t.Fatalf("page %d: %v\n%s", i, err, doc)
		}
		if p.truncated != ref.IsTruncated || p.next != ref.NextContinuationToken || len(p.contents) != len(ref.Contents) {
			t.Fatalf("page %d: read %+v, encoding/xml read %+v", i, p, ref)
		}
		for j, c := range p.contents {
			r := ref.Contents[j]
			if c.key != keys[j] || c.etag != r.ETag || c.size != r.Size || !c.modTime.Equal(r.LastModified) || c.storageClass != r.StorageClass {
				t.Fatalf("page %d entry %d: read %+v, want key %q and %+v", i, j, c, keys[j], r)
			}
		}
	}
}

// TestListPagesAgainstEmulator lists over real HTTP with three keys a
// page, and compares with the SDK's paginator over the same bucket.
func TestListPagesAgainstEmulator(t *testing.T) {
	_, client := emulator(t)
	ctx := context.Background()
	var want []string
	for i := range 10 {
		key := fmt.Sprintf("dir a/k&%d+<x>", i)
		want = append(want, key)
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String(key), Body: bytes.NewReader(make([]byte, i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String("other"), Body: bytes.NewReader(nil)}); err != nil {
		t.Fatal(err)
	}
	src := NewSource(client, Target{Bucket: testBucket, Prefix: "dir a/", PageSize: 3})
	var got []string
	var sizes []int64
	err := src.List(ctx, func(o transfer.Object) error {
		got = append(got, o.Key)
		sizes = append(sizes, o.Size)
		if o.Name != strings.TrimPrefix(o.Key, "dir a/") || o.ETag == "" || o.ModTime.IsZero() {
			t.Errorf("object %+v: want its name under the prefix, an ETag and a time", o)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("listed %q, want %q", got, want)
	}
	for i, n := range sizes {
		if n != int64(i) {
			t.Fatalf("sizes %v, want 0..9", sizes)
		}
	}
}

// TestListMissingBucket reports S3's error code.
func TestListMissingBucket(t *testing.T) {
	_, client := emulator(t)
	src := NewSource(client, Target{Bucket: "no-such-bucket"})
	err := src.List(context.Background(), func(transfer.Object) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Fatalf("error %v, want NoSuchBucket", err)
	}
}

// BenchmarkParsePage measures the scanner against encoding/xml on a page
// of 1,000 keys (S3's largest).
func BenchmarkParsePage(b *testing.B) {
	var page sdkPage
	for i := range 1000 {
		page.Contents = append(page.Contents, sdkEntry{Key: fmt.Sprintf("models/deepseek-v3/model-%05d-of-00163.safetensors", i), LastModified: time.Now().UTC(),
			ETag: `"0123456789abcdef0123456789abcdef-512"`, Size: 4 << 30, StorageClass: "STANDARD"})
	}
	doc, err := xml.Marshal(page)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("parser=scanner", func(b *testing.B) {
		var p listPage
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if err := parsePage(doc, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parser=encoding-xml", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			var p sdkPage
			if err := xml.Unmarshal(doc, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestParseListTimeAgreesWithTimeParse: the fast path reads S3's form
// exactly as time.Parse does and leaves every other form to it.
func TestParseListTimeAgreesWithTimeParse(t *testing.T) {
	for _, s := range []string{"2026-11-30T23:59:59.999Z", "2000-02-29T00:00:00.000Z", "2025-01-01T00:00:00.000Z",
		"2026-02-30T00:00:00.000Z", "2026-13-01T00:00:00.000Z", "2026-11-30T24:00:00.000Z", "2026-11-30T23:59:59Z",
		"2026-11-30T23:59:59.999+01:00", "2026-11-30T23:59:59.99xZ", "2026-11-30 23:59:59.999Z"} {
		want, werr := time.Parse(time.RFC3339Nano, s)
		got, ok := parseListTime([]byte(s))
		if ok && (werr != nil || !got.Equal(want) || got.Location() != want.Location()) {
			t.Errorf("parseListTime(%q) = %v, time.Parse %v, %v", s, got, want, werr)
		}
		if !ok && werr == nil && len(s) == 24 && s[23] == 'Z' {
			t.Errorf("parseListTime(%q) refused what time.Parse reads as %v", s, want)
		}
	}
}

// TestParsePageAllocations bounds the allocations of reading a page of
// 1,000 keys: each key and ETag, not a string per size, date or entity.
func TestParsePageAllocations(t *testing.T) {
	var doc strings.Builder
	doc.WriteString(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>b</Name><IsTruncated>false</IsTruncated>`)
	for i := range 1000 {
		fmt.Fprintf(&doc, `<Contents><Key>data/%06d</Key><LastModified>2026-11-%02dT10:00:00.000Z</LastModified><ETag>&#34;%032x&#34;</ETag><ChecksumAlgorithm>CRC64NVME</ChecksumAlgorithm><Size>%d</Size><StorageClass>STANDARD</StorageClass></Contents>`, i, 1+i%28, i, i)
	}
	doc.WriteString(`</ListBucketResult>`)
	b := []byte(doc.String())
	var p listPage
	perKey := testing.AllocsPerRun(5, func() {
		if err := parsePage(b, &p); err != nil {
			t.Fatal(err)
		}
	}) / 1000
	if len(p.contents) != 1000 || p.contents[999].size != 999 || p.contents[5].modTime.Day() != 6 || p.contents[0].storageClass != "STANDARD" {
		t.Fatalf("parsed %d entries, the last %+v", len(p.contents), p.contents[len(p.contents)-1])
	}
	if perKey > 2.5 {
		t.Errorf("%.2f allocations per key, want at most 2.5 (the key and its ETag)", perKey)
	}
}
