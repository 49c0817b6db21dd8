package s3store

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// partHeads bounds the HEADs in flight of an exact part layout.
const partHeads = 16

// PartSizes implements transfer.PartLayout: a HEAD with partNumber
// answers with that part's size and the object's part count. Unless
// exact, the first and the last part are asked and the inner parts taken
// as the first's size (an upload cuts one part size); exact asks each.
// A server that ignores partNumber answers with the whole object and no
// part count: transfer.ErrNoPartLayout.
func (s *Source) PartSizes(ctx context.Context, obj *transfer.Object, parts int, exact bool) ([]int64, error) {
	first, count, err := s.partSize(ctx, obj, 1)
	if err != nil {
		return nil, err
	}
	if count != parts {
		return nil, fmt.Errorf("%w: part 1 of s3://%s/%s says %d parts, its etag %d", transfer.ErrNoPartLayout, s.t.Bucket, obj.Key, count, parts)
	}
	sizes := make([]int64, parts)
	sizes[0] = first
	if parts == 1 {
		return sizes, nil
	}
	if !exact {
		last, _, err := s.partSize(ctx, obj, parts)
		for i := 1; i < parts-1; i++ {
			sizes[i] = first
		}
		sizes[parts-1] = last
		return sizes, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(partHeads)
	for i := 2; i <= parts; i++ {
		g.Go(func() (err error) {
			sizes[i-1], _, err = s.partSize(gctx, obj, i)
			return err
		})
	}
	return sizes, g.Wait()
}

// partSize HEADs part n of obj and returns its size and the object's
// part count (0 when the answer gives none).
func (s *Source) partSize(ctx context.Context, obj *transfer.Object, n int) (int64, int, error) {
	u := s.get.at.Load().prefix + escapeKey(obj.Key) + "?partNumber=" + strconv.Itoa(n)
	if obj.VersionID != "" {
		u += "&versionId=" + url.QueryEscape(obj.VersionID)
	}
	var resp *http.Response
	err := transfer.BudgetFor(transfer.Lookup).Retry(ctx, func() (err error) {
		hctx, w := startWatch(ctx, s.t.StallTimeout)
		// No If-Match: some servers (moto) match it against the part's
		// own ETag. The object's ETag, where the answer has it, is
		// compared below.
		resp, err = s.get.send(hctx, http.MethodHead, u, s.t.Req, func(http.Header) {})
		if err == nil {
			resp.Body.Close()
		}
		return w.failed(err)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("head s3://%s/%s part %d: %w", s.t.Bucket, obj.Key, n, err)
	}
	if etag := resp.Header.Get("ETag"); obj.ETag != "" && strings.Contains(etag, "-") && etag != obj.ETag {
		return 0, 0, fmt.Errorf("head s3://%s/%s part %d: %w (etag %s, listed %s)", s.t.Bucket, obj.Key, n, transfer.ErrModified, etag, obj.ETag)
	}
	count, _ := strconv.Atoi(resp.Header.Get("X-Amz-Mp-Parts-Count"))
	return resp.ContentLength, count, nil
}
