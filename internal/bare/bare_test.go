package bare

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/minio/crc64nvme"

	"github.com/s3pd/s3pd/pkg/checksum"
	"github.com/s3pd/s3pd/pkg/s3emu"
)

// startEmulator serves dataset on loopback until the test ends.
func startEmulator(t *testing.T, dataset string) string {
	t.Helper()
	return s3emu.NewTestServer(t, s3emu.Options{Dataset: dataset}).URL
}

func newClient(endpoint string) *Client {
	return New(Options{
		Endpoint:    endpoint,
		Bucket:      s3emu.DefaultBucket,
		Credentials: aws.Credentials{AccessKeyID: "bench", SecretAccessKey: "bench"},
		Concurrency: 4,
		PartSize:    1 << 20,
	})
}

func TestPlan(t *testing.T) {
	c := New(Options{PartSize: 4, Threshold: 4})
	objs := []Object{{Size: 0}, {Size: 3}, {Size: 4}, {Size: 9}}
	got := c.plan(objs)
	want := []part{{1, 0, -1}, {2, 0, 4}, {3, 0, 4}, {3, 4, 4}, {3, 8, 1}}
	if len(got) != len(want) {
		t.Fatalf("got %d parts %v, want %v", len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("part %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestListAndDiscard(t *testing.T) {
	endpoint := startEmulator(t, "big:3:2500KiB,small:40:3KiB")
	c := newClient(endpoint)
	for _, tc := range []struct {
		prefix   string
		objects  int
		bytes    int64
		firstKey string
	}{
		{"big/", 3, 3 * 2500 << 10, "big/00000000"},
		{"small/", 40, 40 * 3 << 10, "small/00000000"},
	} {
		objs, err := c.List(context.Background(), tc.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != tc.objects || objs[0].Key != tc.firstKey || objs[0].ETag == "" {
			t.Fatalf("list %s: got %d objects, first %+v; want %d, first key %s with an ETag", tc.prefix, len(objs), objs[0], tc.objects, tc.firstKey)
		}
		got, err := c.Discard(context.Background(), objs)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.bytes {
			t.Errorf("discard %s: got %d bytes, want %d", tc.prefix, got, tc.bytes)
		}
	}
}

// TestDownload checks every byte: the emulator's ETags of objects this
// small are their MD5s.
func TestDownload(t *testing.T) {
	endpoint := startEmulator(t, "m/big:3:2500KiB,m/small:5:3KiB")
	c := newClient(endpoint)
	objs, err := c.List(context.Background(), "m/")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	got, err := c.Download(context.Background(), dir, "m/", objs)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(3*2500<<10 + 5*3<<10); got != want {
		t.Errorf("got %d bytes, want %d", got, want)
	}
	for _, o := range objs {
		data, err := os.ReadFile(filepath.Join(dir, strings.TrimPrefix(o.Key, "m/")))
		if err != nil {
			t.Fatal(err)
		}
		sum := md5.Sum(data)
		if gotTag := `"` + hex.EncodeToString(sum[:]) + `"`; int64(len(data)) != o.Size || gotTag != o.ETag {
			t.Errorf("%s: got %d bytes with MD5 %s, want %d bytes, ETag %s", o.Key, len(data), gotTag, o.Size, o.ETag)
		}
	}
}

func TestErrors(t *testing.T) {
	endpoint := startEmulator(t, "x:1:2MiB")
	c := newClient(endpoint)
	for _, tc := range []struct {
		name string
		obj  Object
		want string
	}{
		{"missing key", Object{Key: "x/nope", Size: 10}, "404"},
		{"stale etag", Object{Key: "x/00000000", Size: 2 << 20, ETag: `"0123"`}, "412"},
		{"wrong size", Object{Key: "x/00000000", Size: 3 << 20}, "want"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Download(context.Background(), t.TempDir(), "x/", []Object{tc.obj})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestSum checks the sums a summing client hands out: per object, its
// parts joined in order are the CRC64NVME of the object's bytes, whether
// it lands them or drops them.
func TestSum(t *testing.T) {
	endpoint := startEmulator(t, "s/big:3:2500KiB,s/small:5:3KiB")
	objs, err := newClient(endpoint).List(context.Background(), "s/")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, mode := range []string{"download", "discard"} {
		t.Run(mode, func(t *testing.T) {
			var mu sync.Mutex
			parts := make([]map[int64]checksum.Running, len(objs))
			c := newClient(endpoint)
			c.opts.Sum = func(obj int, off int64, sum checksum.Running) {
				mu.Lock()
				defer mu.Unlock()
				if parts[obj] == nil {
					parts[obj] = map[int64]checksum.Running{}
				}
				parts[obj][off] = sum
			}
			var err error
			if mode == "download" {
				_, err = c.Download(context.Background(), dir, "s/", objs)
			} else {
				_, err = c.Discard(context.Background(), objs)
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range objs {
				data, err := os.ReadFile(filepath.Join(dir, strings.TrimPrefix(o.Key, "s/")))
				if err != nil {
					t.Fatal(err)
				}
				whole := checksum.Start(checksum.CRC64NVME)
				for off := int64(0); off < o.Size; {
					p, ok := parts[i][off]
					if !ok || p.Len() == 0 {
						t.Fatalf("%s: no part sum at %d (have %d parts)", o.Key, off, len(parts[i]))
					}
					whole = whole.Join(p)
					off += p.Len()
				}
				if want := crc64nvme.Checksum(data); whole.Sum() != want || whole.Len() != o.Size {
					t.Errorf("%s: joined parts give CRC %x over %d bytes, want %x over %d", o.Key, whole.Sum(), whole.Len(), want, o.Size)
				}
			}
		})
	}
}
