package job

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// bodies is a source whose every range is an empty body, and which
// fails the keys it names.
type bodies map[string]bool

func (bodies) List(context.Context, func(transfer.Object) error) error { return nil }

func (b bodies) Open(_ context.Context, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	if b[obj.Key] {
		return nil, errors.New("refused")
	}
	return &transfer.Body{ReadCloser: io.NopCloser(strings.NewReader("")), Off: off, Len: n}, nil
}

// TestClassesCountByClass: each class counts its whole objects and every
// byte moved (cut objects' too), times the first byte of the requests
// that were answered, and leaves out classes that moved nothing.
func TestClassesCountByClass(t *testing.T) {
	c := NewClasses([]Class{{"big", 100}, {"small", 10}, {"idle", 1}}, func(o transfer.Object) int {
		switch {
		case strings.HasPrefix(o.Key, "big/"):
			return 0
		case strings.HasPrefix(o.Key, "small/"):
			return 1
		}
		return -1
	})
	c.ObjectDone(transfer.Result{Object: transfer.Object{Key: "big/0"}, Bytes: 100})
	c.ObjectDone(transfer.Result{Object: transfer.Object{Key: "big/1"}, Bytes: 40, Err: context.Canceled})
	c.ObjectDone(transfer.Result{Object: transfer.Object{Key: "small/0"}, Bytes: 10})
	c.ObjectDone(transfer.Result{Object: transfer.Object{Key: "other"}, Bytes: 7})
	src := Hooks{Classes: c}.lanes([]transfer.Lane{{Name: "a", Source: bodies{"small/9": true}}})[0].Source
	for _, k := range []string{"big/0", "big/1", "small/9"} {
		src.Open(context.Background(), &transfer.Object{Key: k}, 0, 1)
	}
	rows := c.Rows()
	if len(rows) != 2 || rows[0].Name != "big" || rows[0].Objects != 1 || rows[0].Bytes != 140 || rows[0].TTFB50 <= 0 ||
		rows[1].Name != "small" || rows[1].Objects != 1 || rows[1].Bytes != 10 || rows[1].TTFB50 != 0 {
		t.Fatalf("rows %+v, want big: 1 whole of 140 bytes with its requests timed; small: 1 of 10, its one request refused (untimed)", rows)
	}
}
