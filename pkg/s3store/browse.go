package s3store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Entry is one line of a listing by directory: an object, or a common
// prefix (Dir) that stands for everything under it.
type Entry struct {
	Key          string
	Dir          bool
	Size         int64
	ModTime      time.Time
	StorageClass string
}

// ListDir emits, in key order, the objects and common prefixes directly
// under prefix ("/" delimits), or every object under it when recursive.
// Keys start with prefix as given, as the AWS CLI's ls lists them: "p"
// lists "p/" (as a Dir) and "p.txt".
//
// The server's roll-up into common prefixes is trusted as the fan-out
// trusts it (see fanOut): a server that ignores encoding-type=url, or
// gives a common prefix S3 would not, is listed flat and rolled up here,
// so ls shows "/" for "/abs-x" from every server, not a prefix "abs-x"
// that holds nothing.
func (s *Source) ListDir(ctx context.Context, prefix string, recursive bool, emit func(Entry) error) error {
	if recursive {
		return s.listDir(ctx, prefix, false, emit)
	}
	err := s.listDir(ctx, prefix, true, emit)
	if !errors.Is(err, errUntrusted) {
		return err
	}
	dirs := map[string]bool{}
	return s.listDir(ctx, prefix, false, func(e Entry) error {
		rest := e.Key[len(prefix):]
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return emit(e)
		}
		dir := prefix + rest[:i+1]
		if dirs[dir] {
			return nil
		}
		dirs[dir] = true
		return emit(Entry{Key: dir, Dir: true})
	})
}

// errUntrusted: the server's first delimited page is not to be trusted;
// nothing was emitted.
var errUntrusted = errors.New("delimited listing not trusted")

// listDir lists prefix, delimited by "/" when delimited, and emits its
// entries in the order the server gives them.
func (s *Source) listDir(ctx context.Context, prefix string, delimited bool, emit func(Entry) error) error {
	// Keys come URL-encoded: XML cannot carry every byte a key may hold
	// (control characters are dropped or replaced), so a key with one
	// would be listed under another name.
	asked := listPrefix(s.t.Bucket, prefix)
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.t.Bucket), Prefix: aws.String(asked), EncodingType: types.EncodingTypeUrl}
	if delimited {
		in.Delimiter = aws.String("/")
	}
	if s.t.Req.RequestPayer != "" {
		in.RequestPayer = types.RequestPayer(s.t.Req.RequestPayer)
	}
	if s.t.Req.ExpectedBucketOwner != "" {
		in.ExpectedBucketOwner = aws.String(s.t.Req.ExpectedBucketOwner)
	}
	pages := s3.NewListObjectsV2Paginator(s.client, in)
	for page := 1; pages.HasMorePages(); page++ {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list s3://%s/%s: %w", s.t.Bucket, prefix, statusError(err))
		}
		// S3 returns objects and prefixes in two lists, each in key
		// order; merge them.
		objs, dirs := out.Contents, out.CommonPrefixes
		if err := decodeKeys(out); err != nil {
			return fmt.Errorf("list s3://%s/%s: %w", s.t.Bucket, prefix, err)
		}
		if delimited {
			var ps []string
			for _, d := range dirs {
				ps = append(ps, aws.ToString(d.Prefix))
			}
			bad := badPrefix(asked, ps)
			switch {
			case page == 1 && (out.EncodingType != types.EncodingTypeUrl || bad != ""):
				return errUntrusted
			case bad != "":
				return fmt.Errorf("list s3://%s/%s: %w: the server rolled keys up into a common prefix %q, which no key would give", s.t.Bucket, prefix, ErrBadListing, bad)
			}
		}
		for len(objs) > 0 || len(dirs) > 0 {
			var e Entry
			if len(dirs) == 0 || len(objs) > 0 && aws.ToString(objs[0].Key) < aws.ToString(dirs[0].Prefix) {
				o := objs[0]
				objs = objs[1:]
				e = Entry{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified), StorageClass: string(o.StorageClass)}
			} else {
				e = Entry{Key: aws.ToString(dirs[0].Prefix), Dir: true}
				dirs = dirs[1:]
			}
			if !strings.HasPrefix(e.Key, prefix) {
				continue // a directory bucket's parent listing (listPrefix)
			}
			if err := emit(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeKeys decodes the keys and prefixes of a page listed with
// EncodingType url (a server that ignores it sends them as they are).
func decodeKeys(page *s3.ListObjectsV2Output) error {
	if page.EncodingType != types.EncodingTypeUrl {
		return nil
	}
	for i := range page.Contents {
		k, err := url.QueryUnescape(aws.ToString(page.Contents[i].Key))
		if err != nil {
			return fmt.Errorf("a key is not URL-encoded: %w", err)
		}
		page.Contents[i].Key = aws.String(k)
	}
	for i := range page.CommonPrefixes {
		k, err := url.QueryUnescape(aws.ToString(page.CommonPrefixes[i].Prefix))
		if err != nil {
			return fmt.Errorf("a prefix is not URL-encoded: %w", err)
		}
		page.CommonPrefixes[i].Prefix = aws.String(k)
	}
	return nil
}

// Usage is how many objects, and how many bytes, a prefix holds.
type Usage struct {
	Objects int64
	Bytes   int64
}

// Usage lists every key that starts with the source's Prefix, the key
// equal to it included (the AWS CLI's ls --recursive --summarize), and
// adds up the objects that filter keeps (nil keeps all); an object's Name
// is its key relative to Prefix.
func (s *Source) Usage(ctx context.Context, filter func(transfer.Object) bool) (Usage, error) {
	var u Usage
	l := &listing{get: s.get, req: s.t.Req, prefix: s.t.Prefix, pageSize: s.t.PageSize}
	for token := ""; ; {
		page, err := l.next(ctx, token)
		if err != nil {
			return u, fmt.Errorf("list %s: %w", s.URL(), err)
		}
		for _, c := range page.contents {
			o := transfer.Object{Key: c.key, Name: strings.TrimPrefix(c.key, s.t.Prefix), Size: c.size}
			if filter == nil || filter(o) {
				u.Objects++
				u.Bytes += o.Size
			}
		}
		if !page.truncated || page.next == "" {
			return u, nil
		}
		token = page.next
	}
}

// Buckets lists the buckets the credentials of s's client own, as the
// AWS CLI's ls without a URL does; s's own Bucket plays no part.
func (s *Source) Buckets(ctx context.Context) ([]Entry, error) {
	out, err := s.client.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		return nil, fmt.Errorf("list buckets: %w", statusError(err))
	}
	entries := make([]Entry, len(out.Buckets))
	for i, b := range out.Buckets {
		entries[i] = Entry{Key: aws.ToString(b.Name), Dir: true, ModTime: aws.ToTime(b.CreationDate)}
	}
	return entries, nil
}
