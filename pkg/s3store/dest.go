package s3store

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// DestOptions are what the S3 destination binds: how its clients are
// built, and what every object written gets (its Prefix, PartSize,
// Threshold, Trailer, SourceChecksum and SourceIdentity are set per
// copy).
type DestOptions struct {
	Client ClientOptions
	Upload UploadOptions
}

// Dest is the destination side of s3:// locations (store.Entry.Dest):
// uploads, server-side copies within S3, and streams of unknown size.
func Dest(do DestOptions) *store.Dest {
	return &store.Dest{
		Locate: func(loc string) (store.Place, error) {
			u, err := ParseRawURL(loc)
			if err != nil {
				return store.Place{}, err
			}
			return store.Place{Path: u.Key, Dir: u.Prefix}, nil
		},
		Open: func(ctx context.Context, loc string, o store.DestOptions) (*store.Sink, error) {
			return openDest(ctx, loc, do, o)
		},
		Overlap:      overlap,
		CopiesWithin: true,
		Streams:      true,
	}
}

// overlap refuses a copy within S3 onto its own source or inside the
// prefix it names.
func overlap(src, dst string) error {
	su, err := ParseRawURL(src)
	if err != nil {
		return err
	}
	du, err := ParseRawURL(dst)
	if err != nil || su.Bucket != du.Bucket {
		return err
	}
	switch {
	case strings.TrimSuffix(su.Key, "/") == strings.TrimSuffix(du.Key, "/"):
		return store.ErrSame
	case su.Prefix && strings.HasPrefix(du.Key, su.Key):
		return store.ErrInside
	}
	return nil
}

// openDest opens the bucket loc names for writing under o.Root: a copy
// within S3 from o.Within, else uploads of what o.From reads.
func openDest(ctx context.Context, loc string, do DestOptions, o store.DestOptions) (*store.Sink, error) {
	u, err := ParseRawURL(loc)
	if err != nil {
		return nil, err
	}
	client, err := NewClient(ctx, u.Bucket, do.Client)
	if err != nil {
		return nil, err
	}
	opts := do.Upload
	opts.Prefix, opts.PartSize, opts.Threshold = keyPrefix(o.Root), o.PartSize, o.Threshold
	// The SDK sends a trailing checksum over HTTPS only.
	opts.Trailer = overTLS(do.Client.EndpointURL)
	out := &store.Sink{HoldsParts: !opts.Trailer}
	if overTLS(do.Client.EndpointURL) {
		out.StartWindow = transfer.TLSStartWindow
	}
	if o.Within != "" {
		su, err := ParseRawURL(o.Within)
		if err != nil {
			return nil, err
		}
		out.Sink, out.HoldsParts = NewCopySink(client, su.Bucket, u.Bucket, opts), false
		return out, nil
	}
	if o.From != nil {
		src := o.From.Source
		if cs, ok := src.(store.Checksummer); ok {
			opts.SourceChecksum = cs.Checksum
		} else if o.From.Rereadable {
			opts.SourceChecksum = func(ctx context.Context, obj transfer.Object, alg string) (string, error) {
				return ChecksumOf(ctx, src, obj, alg)
			}
		}
		if id, ok := src.(store.Identifier); ok {
			opts.SourceIdentity = id.Identity
		}
	}
	out.Sink = &streamSink{NewUploadSink(client, u.Bucket, opts)}
	return out, nil
}

// streamSink is an upload sink that also takes a stream of unknown size
// (store.Streamer).
type streamSink struct{ *UploadSink }

// Stream uploads r to key (UploadSink.Stream), in parts of o.PartSize,
// larger when o.Expected would need more than MaxParts of them.
func (s *streamSink) Stream(ctx context.Context, key string, r io.Reader, o store.StreamOptions) (store.StreamResult, error) {
	return s.UploadSink.Stream(ctx, key, r, StreamPartSize(o.PartSize, o.Expected), o.Parts, o.Progress)
}

// keyPrefix turns the root where objects land into the prefix of the
// keys written under it: "" for none, else ending in "/".
func keyPrefix(root string) string {
	switch {
	case root == "" || root == ".":
		return ""
	case root[len(root)-1] == '/':
		return root
	}
	return root + "/"
}

// Identity identifies an object's bytes for an upload's journal at
// another store: its ETag, version and size.
func (s *Source) Identity(o transfer.Object) string {
	return fmt.Sprintf("object %s %s %d", o.ETag, o.VersionID, o.Size)
}
