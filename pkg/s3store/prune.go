package s3store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// deleteBatch is DeleteObjects' limit of keys per request.
const deleteBatch = 1000

// Prune deletes the objects under prefix whose names (keys relative to
// prefix) doomed picks, in batches of DeleteObjects, and calls report for
// each; with dryRun it only reports them. It is copy --delete's last step.
func Prune(ctx context.Context, client *s3.Client, bucket, prefix string, req Request, doomed func(name string) bool, dryRun bool, report func(name string, size int64)) error {
	src := NewSource(client, Target{Bucket: bucket, Prefix: prefix, Req: req})
	var batch []transfer.Object
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if !dryRun {
			if err := deleteObjects(ctx, client, bucket, req, batch); err != nil {
				return err
			}
		}
		for _, o := range batch {
			report(o.Name, o.Size)
		}
		batch = batch[:0]
		return nil
	}
	err := src.List(ctx, func(o transfer.Object) error {
		if !doomed(o.Name) {
			return nil
		}
		batch = append(batch, o)
		if len(batch) == deleteBatch {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

func deleteObjects(ctx context.Context, client *s3.Client, bucket string, req Request, objs []transfer.Object) error {
	ids := make([]types.ObjectIdentifier, len(objs))
	for i, o := range objs {
		ids[i] = types.ObjectIdentifier{Key: aws.String(o.Key)}
	}
	in := &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}}
	if req.RequestPayer != "" {
		in.RequestPayer = types.RequestPayer(req.RequestPayer)
	}
	if req.ExpectedBucketOwner != "" {
		in.ExpectedBucketOwner = aws.String(req.ExpectedBucketOwner)
	}
	out, err := client.DeleteObjects(ctx, in)
	if err != nil {
		return fmt.Errorf("delete %d objects in s3://%s: %w", len(objs), bucket, statusError(err))
	}
	if len(out.Errors) > 0 {
		e := out.Errors[0]
		return fmt.Errorf("delete s3://%s/%s: %s: %s (and %d more)", bucket, aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message), len(out.Errors)-1)
	}
	return nil
}

// Prune is --delete's step for the sink's bucket: it deletes the objects
// under the sink's prefix whose names doomed picks, reporting each; with
// dryRun it only reports them.
func (u *UploadSink) Prune(ctx context.Context, doomed func(name string) bool, dryRun bool, report func(name string, size int64)) error {
	return Prune(ctx, u.client, u.bucket, u.opts.Prefix, u.opts.Req, doomed, dryRun, report)
}

// Prune is --delete's step for the sink's bucket, as UploadSink.Prune.
func (c *CopySink) Prune(ctx context.Context, doomed func(name string) bool, dryRun bool, report func(name string, size int64)) error {
	return Prune(ctx, c.client, c.bucket, c.opts.Prefix, c.opts.Req, doomed, dryRun, report)
}
