package s3store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestOpenerResolvesWhatTheURLNames: over the emulator, the opener
// reads an object by its first range (served once to the engine), a key
// without an object as the prefix key + "/", and refuses what it cannot
// be: a missing object with a version or Options.Object. A server-side
// copy resolves by a HEAD and lanes that name bytes.
func TestOpenerResolvesWhatTheURLNames(t *testing.T) {
	_, c := emulator(t)
	ctx := context.Background()
	data := randomBytes(300<<10, 1)
	for _, k := range []string{"dir/one.bin", "tree/a", "tree/b"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String(k), Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
	}
	lanes := []Lane{{Name: "a", Base: NewSource(c, Target{Bucket: testBucket})}, {Name: "b", Base: NewSource(c, Target{Bucket: testBucket})}}
	r := store.Registry{{Scheme: "s3", Open: Opener(OpenerOptions{Lanes: lanes})}}
	named := func(key string) string { return "as-" + key[len(key)-1:] }

	one, err := r.Open(ctx, "s3://dst/dir/one.bin", store.Options{FirstRange: 64 << 10, Name: named})
	if err != nil {
		t.Fatal(err)
	}
	if !one.Single || one.Guessed || one.Key != "dir/one.bin" || len(one.Lanes) != 2 || one.Lanes[1].Name != "b" || one.Close == nil {
		t.Fatalf("one object: %+v", one)
	}
	objs := openedList(t, one.Source)
	if len(objs) != 1 || objs[0].Size != int64(len(data)) || objs[0].Name != "as-n" || objs[0].ETag == "" {
		t.Fatalf("one object lists %+v", objs)
	}
	b, err := one.Lanes[0].Source.Open(ctx, &objs[0], 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(b)
	b.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, %v; want the object's %d", len(got), err, len(data))
	}
	if _, ok := one.Source.(store.Stater); !ok {
		t.Error("the source is no store.Stater")
	}
	if _, ok := one.Source.(store.Checksummer); !ok {
		t.Error("the source is no store.Checksummer")
	}
	one.Release()

	tree, err := r.Open(ctx, "s3://dst/tree", store.Options{FirstRange: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if tree.Single || !tree.Guessed || tree.Key != "tree/" || len(openedList(t, tree.Source)) != 2 {
		t.Fatalf("a prefix without its slash: %+v", tree)
	}
	sure, err := r.Open(ctx, "s3://dst/tree", store.Options{Prefix: true})
	if err != nil || sure.Single || sure.Guessed || sure.Key != "tree/" {
		t.Fatalf("a prefix for sure: %+v, %v", sure, err)
	}
	for _, o := range []store.Options{{Version: "v1"}, {Object: true}} {
		if _, err := r.Open(ctx, "s3://dst/none", o); !errors.Is(err, transfer.ErrNotFound) {
			t.Errorf("%+v: a missing object gave %v, want ErrNotFound", o, err)
		}
	}

	cp, err := r.Open(ctx, "s3://dst/dir/one.bin", store.Options{ServerSide: true, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cp.Lanes[0].Source.(*CopySource); !cp.Single || !ok || cp.Close != nil {
		t.Fatalf("server-side: %+v, lanes of %T", cp, cp.Lanes[0].Source)
	}
}

func openedList(t *testing.T, src transfer.Source) []transfer.Object {
	t.Helper()
	var out []transfer.Object
	if err := src.List(context.Background(), func(o transfer.Object) error { out = append(out, o); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}
