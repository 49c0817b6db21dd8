package s3store

import (
	"bytes"
	"context"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// listAll lists src into a slice of keys and names.
func listAll(t *testing.T, src *Source) [][2]string {
	t.Helper()
	var got [][2]string
	err := src.List(context.Background(), func(o transfer.Object) error {
		got = append(got, [2]string{o.Key, o.Name})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestFanOutListsWhatOneStreamLists(t *testing.T) {
	_, client := emulator(t)
	keys := []string{"p/", "p/a.txt", "p/a/1", "p/a/2", "p/a/3/4", "p/a-b", "p/b/c/d", "p/b/x", "p/sp ace/1",
		"p/z", "p/ü/1", "p/ü/2", "q/outside", "p/a0", "p/c/", "p/c/e"}
	for _, k := range keys {
		if _, err := client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String(k), Body: bytes.NewReader([]byte(k))}); err != nil {
			t.Fatal(err)
		}
	}
	for _, prefix := range []string{"p/", ""} {
		one := NewSource(client, Target{Bucket: testBucket, Prefix: prefix, PageSize: 2})
		want := listAll(t, one)
		for _, fan := range []int{2, 16} {
			for _, budget := range []int{1, 3, 1000} {
				src := NewSource(client, Target{Bucket: testBucket, Prefix: prefix, PageSize: 2, FanOut: fan})
				src.fanBudget = budget
				if got := listAll(t, src); !reflect.DeepEqual(got, want) {
					t.Fatalf("prefix %q, fan-out %d, budget %d:\n got %q\nwant %q", prefix, fan, budget, got, want)
				}
			}
		}
	}
}

func TestFanOutListsSubPrefixesAtOnce(t *testing.T) {
	srv := s3emu.NewTestServer(t, s3emu.Options{Dataset: "data/a:40:1,data/b:40:1,data/c:40:1,data/d:40:1", TTFB: 20 * time.Millisecond})
	client := testClient(srv.URL)
	for _, tc := range []struct {
		fan     int
		streams int64 // listing requests in flight at the most, at least
	}{{1, 1}, {4, 2}} {
		srv.ResetStats()
		src := NewSource(client, Target{Bucket: s3emu.DefaultBucket, PageSize: 10, FanOut: tc.fan})
		got := listAll(t, src)
		if len(got) != 160 || got[0][0] != "data/a/00000000" || got[159][0] != "data/d/00000039" {
			t.Fatalf("fan-out %d listed %d keys from %q to %q", tc.fan, len(got), got[0][0], got[len(got)-1][0])
		}
		st := srv.Stats()
		if tc.fan == 1 && st.MaxInFlight != 1 || st.MaxInFlight < tc.streams {
			t.Fatalf("fan-out %d: %d requests in flight at the most, want at least %d", tc.fan, st.MaxInFlight, tc.streams)
		}
	}
}

// A server that ignores encoding-type=url (gofakes3's memory backend,
// in-process) rolls keys that start with "/" up into common prefixes no
// key has ("/abs-x" becomes "abs-x"); the fan-out lists such a server
// flat, so it lists every key the one stream lists, those included.
func TestFanOutListsEveryKeyOfAServerThatIgnoresEncoding(t *testing.T) {
	faker := gofakes3.New(s3mem.New())
	srv := httptest.NewServer(faker.Server())
	t.Cleanup(srv.Close)
	client := testClient(srv.URL)
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(testBucket)}); err != nil {
		t.Fatal(err)
	}
	keys := []string{"/abs-x", "//x", "/a/b", "a/b", "ok/plain", "p%41q", "a b+c", "z/"}
	for _, k := range keys {
		if _, err := client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String(k), Body: bytes.NewReader([]byte(k))}); err != nil {
			t.Fatal(err)
		}
	}
	want := listAll(t, NewSource(client, Target{Bucket: testBucket}))
	if len(want) != len(keys) {
		t.Fatalf("one stream lists %q, want the %d keys put", want, len(keys))
	}
	for _, fan := range []int{2, 16} {
		if got := listAll(t, NewSource(client, Target{Bucket: testBucket, FanOut: fan})); !reflect.DeepEqual(got, want) {
			t.Fatalf("fan-out %d:\n got %q\nwant %q", fan, got, want)
		}
	}
}

func TestBadPrefix(t *testing.T) {
	for _, tc := range []struct {
		prefix   string
		prefixes []string
		want     string
	}{
		{"", []string{"/", "a/", "b/"}, ""},
		{"", []string{"abs-x"}, "abs-x"},
		{"p/", []string{"p/a/", "q/"}, "q/"},
		{"p/", []string{"p/"}, "p/"},
		{"", []string{"b/", "a/"}, "a/"},
	} {
		if got := badPrefix(tc.prefix, tc.prefixes); got != tc.want {
			t.Errorf("badPrefix(%q, %q) = %q, want %q", tc.prefix, tc.prefixes, got, tc.want)
		}
	}
}

// ls by directory shows the same entries from a server that ignores
// encoding-type=url (gofakes3, rolling "/abs-x" up into "abs-x") as S3
// would: "/" for the keys that start with "/", every object once.
func TestListDirRollsUpWhatTheServerRollsUpWrongly(t *testing.T) {
	faker := gofakes3.New(s3mem.New())
	srv := httptest.NewServer(faker.Server())
	t.Cleanup(srv.Close)
	client := testClient(srv.URL)
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(testBucket)}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"/abs-x", "//x", "a.txt", "a/b", "a/c/d", "ok/plain", "z"} {
		if _, err := client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String(k), Body: bytes.NewReader([]byte(k))}); err != nil {
			t.Fatal(err)
		}
	}
	src := NewSource(client, Target{Bucket: testBucket})
	for _, tc := range []struct {
		prefix string
		want   []string // a Dir ends in "/"
	}{
		{"", []string{"/", "a.txt", "a/", "ok/", "z"}},
		{"/", []string{"//", "/abs-x"}},
		{"a/", []string{"a/b", "a/c/"}},
		{"a", []string{"a.txt", "a/"}},
	} {
		var got []string
		if err := src.ListDir(context.Background(), tc.prefix, false, func(e Entry) error {
			got = append(got, e.Key)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ls %q: got %q, want %q", tc.prefix, got, tc.want)
		}
	}
}
