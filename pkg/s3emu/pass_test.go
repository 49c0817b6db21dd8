package s3emu

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestPassKeysServeTheirBaseObject: a benchmark's later pass reads each
// object under a fresh name (PassKey) with the bytes, ETag and size of
// the object it repeats; the listing gives only the keys as they are,
// and a key with a mark that names no pass does not exist.
func TestPassKeysServeTheirBaseObject(t *testing.T) {
	_, ep := start(t, Options{Dataset: "d:2:5000"})
	c := client(ep)
	base := "d/00000001"
	key := PassKey(base, 3)
	if key != "d/00000001~3" || PassKey(base, 0) != base {
		t.Fatalf("PassKey(%q, 3) = %q, PassKey(_, 0) = %q; want d/00000001~3 and the key itself", base, key, PassKey(base, 0))
	}
	etag := md5hex(synthetic(base, 0, 5000))
	out, got := getAll(t, c, &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String(key), IfMatch: aws.String(etag)})
	if !bytes.Equal(got, synthetic(base, 0, 5000)) || aws.ToString(out.ETag) != etag {
		t.Errorf("GET %s: %d bytes, ETag %s; want the %d bytes of %s and its ETag %s", key, len(got), aws.ToString(out.ETag), 5000, base, etag)
	}
	for _, k := range []string{"d/00000001~", "d/00000001~x", "d/00000002~1"} {
		if resp, _ := raw(t, http.MethodGet, ep+"/bench/"+k, nil, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", k, resp.StatusCode)
		}
	}
	keys, _, _ := listAll(t, c, &s3.ListObjectsV2Input{Bucket: aws.String("bench")})
	if len(keys) != 2 || keys[0] != "d/00000000" || keys[1] != base {
		t.Errorf("listing %v, want the two keys as they are", keys)
	}
}
