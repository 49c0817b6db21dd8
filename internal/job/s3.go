package job

import (
	"context"
	"errors"

	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// S3Lane is one path to S3 (a client bound to one network card), as a
// source over the bucket from which the run's sources derive, so that
// they share what it learns of the bucket's region.
type S3Lane struct {
	Name string
	Base *s3store.Source
}

// S3Spec is an S3 source as a command was given it.
type S3Spec struct {
	Lanes []S3Lane
	// Target is how to read: bucket, version, request options,
	// verification, stall timeout. Its Prefix and Object are decided here.
	Target s3store.Target
	// Key is what the URL names after the bucket; Prefix says it names a
	// prefix for sure (a trailing "/", a wildcard, a manifest), else it
	// may be one object.
	Key    string
	Prefix bool
	// Name is the destination name of the object, when Key is one.
	Name string
	// FirstRange is the length of the first range, which resolves a
	// single object and is then served to the engine (transfer.Prefetch).
	FirstRange int64
	// FanOut is how many sub-prefixes of a prefix are listed at once.
	FanOut int
	// ServerSide makes the lanes name bytes instead of carrying them (a
	// server-side copy): a single object is resolved with a HEAD.
	ServerSide bool
}

// S3Source is what an S3Spec resolved to: a single object or a prefix,
// and one source per lane over it.
type S3Source struct {
	Lanes []transfer.Lane
	// Source is the first lane's source, unwrapped: it lists, and looks
	// objects up for a manifest.
	Source *s3store.Source
	Single bool
	// Key is the single object's key, or the prefix listed.
	Key      string
	prefetch *transfer.Prefetch
}

// resolveS3 decides what spec names: the object Key if it exists (found
// by its first range, which the engine then gets without a second
// request), else the prefix Key + "/". A missing object with a version
// is an error, not a prefix.
func resolveS3(ctx context.Context, spec S3Spec) (*S3Source, error) {
	if len(spec.Lanes) == 0 {
		return nil, errors.New("no lane to S3")
	}
	t := spec.Target
	out := &S3Source{Key: spec.Key}
	if !spec.Prefix {
		obj, first, err := probe(ctx, spec)
		switch {
		case err == nil:
			out.Single, t.Object = true, &obj
			if first != nil {
				out.prefetch = transfer.NewPrefetch(obj.Key, first)
			}
		case errors.Is(err, transfer.ErrNotFound) && t.Version == "" && !s3store.NoSuchBucket(err):
			out.Key += "/"
		default:
			return nil, err
		}
	}
	if !out.Single {
		t.Prefix, t.FanOut = out.Key, spec.FanOut
	}
	for _, l := range spec.Lanes {
		src := l.Base.With(t)
		var lane transfer.Source = src
		if spec.ServerSide {
			lane = s3store.NewCopySource(src)
		}
		if out.Source == nil {
			out.Source = src
		}
		out.Lanes = append(out.Lanes, transfer.Lane{Name: l.Name, Source: lane})
	}
	if out.prefetch != nil {
		out.Lanes = out.prefetch.Lanes(out.Lanes)
	}
	return out, nil
}

// probe resolves spec's Key as one object: by its first range, or by a
// HEAD for a server-side copy (which fetches no bytes).
func probe(ctx context.Context, spec S3Spec) (transfer.Object, *transfer.Body, error) {
	src := spec.Lanes[0].Base.With(spec.Target)
	if spec.ServerSide {
		obj, err := s3store.NewCopySource(src).Probe(ctx, spec.Key, spec.Name)
		return obj, nil, err
	}
	// Its errors name the request already (get s3://bucket/key: ...).
	return src.Probe(ctx, spec.Key, spec.Name, spec.FirstRange)
}

// Close closes the first range if the run did not take it.
func (s *S3Source) Close() error {
	if s == nil || s.prefetch == nil {
		return nil
	}
	return s.prefetch.Close()
}
