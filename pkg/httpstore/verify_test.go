package httpstore_test

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/httpstore"
	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestChecksum: a right --checksum verifies the object (sha256, md5,
// crc32c); a wrong one fails it with ErrChecksum and leaves nothing at
// the final name; none leaves it unverified, saying why.
func TestChecksum(t *testing.T) {
	data := fileData(fileSize)
	sha := sha256.Sum256(data)
	m := md5.Sum(data)
	crc := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	wrong := sha
	wrong[0] ^= 1
	for _, tt := range []struct {
		name, checksum string
		noRanges       bool
		wantErr        error
		wantVerified   []string
		wantUnverified string
	}{
		{"sha256", "sha256:" + hex.EncodeToString(sha[:]), false, nil, []string{"sha256"}, ""},
		{"sha256 whole", "sha256:" + hex.EncodeToString(sha[:]), true, nil, []string{"sha256"}, ""},
		{"md5", "md5:" + hex.EncodeToString(m[:]), false, nil, []string{"md5"}, ""},
		{"crc32c", fmt.Sprintf("crc32c:%08x", crc), false, nil, []string{"crc32c"}, ""},
		{"wrong sha256", "sha256:" + hex.EncodeToString(wrong[:]), false, transfer.ErrChecksum, nil, ""},
		{"none", "", false, nil, nil, transfer.UnverifiedNoChecksum},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFileServer(t, data, func(s *fileServer) { s.noRanges = tt.noRanges })
			it := httpstore.Item{URL: srv.url("f.bin")}
			if tt.checksum != "" {
				d, err := httpstore.ParseChecksum(tt.checksum)
				if err != nil {
					t.Fatal(err)
				}
				it.Checksum = d
			}
			dir := t.TempDir()
			rec, _, err := fetch(t, context.Background(), dir, []httpstore.Item{it}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := result(t, rec, it.URL)
			if !errors.Is(r.Err, tt.wantErr) || (tt.wantErr == nil) != (r.Err == nil) {
				t.Fatalf("error %v, want %v", r.Err, tt.wantErr)
			}
			if tt.wantErr != nil {
				absent(t, dir, "f.bin")
				return
			}
			landed(t, dir, "f.bin", data)
			v := r.Verification
			if fmt.Sprint(v.Checksums) != fmt.Sprint(tt.wantVerified) || v.Unverified != tt.wantUnverified {
				t.Fatalf("verification %v (checksums %v, unverified %q), want checksums %v, unverified %q", v, v.Checksums, v.Unverified, tt.wantVerified, tt.wantUnverified)
			}
		})
	}
}

// TestServerDigest: a digest the server sends (Repr-Digest, or a model
// hub's X-Linked-Etag on the redirect to its CDN) is checked under
// --verify full; under auto the object is unverified and says that
// --verify full checks it; a wrong one fails the object under full.
func TestServerDigest(t *testing.T) {
	data := fileData(fileSize)
	sum := sha256.Sum256(data)
	wrong := sum
	wrong[5] ^= 1
	repr := func(s [32]byte) func(*fileServer) {
		return func(f *fileServer) {
			f.hook = func(w http.ResponseWriter, _ *http.Request, _ []byte) bool {
				w.Header().Set("Repr-Digest", "sha-512=:AAAA:, sha-256=:"+base64.StdEncoding.EncodeToString(s[:])+":")
				return false
			}
		}
	}
	for _, tt := range []struct {
		name           string
		configure      func(*fileServer)
		redirect       bool // reach the file through a hub's redirect
		verify         transfer.Verify
		wantErr        error
		wantVerified   string
		wantUnverified string
	}{
		{"repr-digest full", repr(sum), false, transfer.VerifyFull, nil, "sha256", ""},
		{"repr-digest auto", repr(sum), false, transfer.VerifyAuto, nil, "", transfer.UnverifiedDigestOnly},
		{"repr-digest wrong", repr(wrong), false, transfer.VerifyFull, transfer.ErrChecksum, "", ""},
		{"linked etag", nil, true, transfer.VerifyFull, nil, "sha256", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFileServer(t, data, tt.configure)
			url := srv.url("f.bin")
			if tt.redirect {
				hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("X-Linked-Etag", `"`+hex.EncodeToString(sum[:])+`"`)
					http.Redirect(w, r, srv.url("cdn/f.bin?Signature=s"), http.StatusFound)
				}))
				t.Cleanup(hub.Close)
				url = hub.URL + "/org/model/resolve/main/f.bin"
			}
			dir := t.TempDir()
			rec, _, err := fetchVerify(t, context.Background(), dir, []httpstore.Item{{URL: url}}, nil, tt.verify)
			if err != nil {
				t.Fatal(err)
			}
			r := result(t, rec, url)
			if !errors.Is(r.Err, tt.wantErr) || (tt.wantErr == nil) != (r.Err == nil) {
				t.Fatalf("error %v, want %v", r.Err, tt.wantErr)
			}
			if tt.wantErr != nil {
				absent(t, dir, "f.bin")
				return
			}
			landed(t, dir, "f.bin", data)
			if v := r.Verification; strings.Join(v.Checksums, ",") != tt.wantVerified || v.Unverified != tt.wantUnverified {
				t.Fatalf("verification %q, want checksums %q, unverified %q", v, tt.wantVerified, tt.wantUnverified)
			}
		})
	}
}

// TestDirectIO: with the sink writing around the page cache (O_DIRECT,
// where the file system takes it; else its fallback), ranged parts and
// a whole stream land right and a digest reads them back.
func TestDirectIO(t *testing.T) {
	data := fileData(fileSize)
	sum := sha256.Sum256(data)
	for _, noRanges := range []bool{false, true} {
		srv := newFileServer(t, data, func(s *fileServer) { s.noRanges = noRanges })
		d, err := httpstore.ParseChecksum("sha256:" + hex.EncodeToString(sum[:]))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		it := httpstore.Item{URL: srv.url("f.bin"), Checksum: d}
		rec, _, err := fetchInto(t, context.Background(), dir, local.Options{DirectIO: local.DirectOn, Warn: func(string) {}}, []httpstore.Item{it}, nil, transfer.VerifyAuto)
		if err != nil {
			t.Fatal(err)
		}
		if r := result(t, rec, it.URL); r.Err != nil || r.Verification.String() != "sha256" {
			t.Fatalf("no ranges %v: error %v, verification %q", noRanges, r.Err, r.Verification)
		}
		landed(t, dir, "f.bin", data)
	}
}
