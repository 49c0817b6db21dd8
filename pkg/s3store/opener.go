package s3store

import (
	"context"
	"errors"
	"strings"

	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// Lane is one path to S3 (a client bound to one network card), as a
// source over the bucket from which a run's sources derive, so that they
// share what it learns of the bucket's region.
type Lane struct {
	Name string
	Base *Source
}

// NewLanes builds one client per lane of opts' transport (one per
// network card), each a source over bucket.
func NewLanes(ctx context.Context, bucket string, opts ClientOptions) ([]Lane, error) {
	clients, err := NewLaneClients(ctx, bucket, opts)
	if err != nil {
		return nil, err
	}
	names := LaneNames(opts.Transport, len(clients))
	out := make([]Lane, len(clients))
	for i, c := range clients {
		out[i] = Lane{Name: names[i], Base: NewSource(c, Target{Bucket: bucket})}
	}
	return out, nil
}

// LaneNames are the names of t's n lanes ("default" each for a
// transport of its own, t nil).
func LaneNames(t *Transport, n int) []string {
	if t != nil {
		return t.Names()
	}
	out := make([]string, n)
	for i := range out {
		out[i] = "default"
	}
	return out
}

// OpenerOptions are what the S3 opener binds: how its clients are built
// and what every request carries.
type OpenerOptions struct {
	Client ClientOptions
	Req    Request
	// Lanes, when set, are the lanes to read over, built already (for
	// the bucket the location names); the run then leaves the window's
	// start to the engine's options.
	Lanes []Lane
}

// Opener is the opener of s3:// locations (store.Registry).
func Opener(oo OpenerOptions) store.Opener {
	return func(ctx context.Context, loc string, o store.Options) (*store.Opened, error) {
		return open(ctx, loc, oo, o)
	}
}

// open resolves what loc names: the object of its key if it exists
// (found by its first range, which the engine then gets without a second
// request), else the prefix key + "/". A missing object with a version,
// or with Options.Object, is an error, not a prefix.
func open(ctx context.Context, loc string, oo OpenerOptions, o store.Options) (*store.Opened, error) {
	u, err := ParseRawURL(loc)
	if err != nil {
		return nil, err
	}
	lanes := oo.Lanes
	out := &store.Opened{Key: u.Key, OpaqueETags: IsDirectoryBucket(u.Bucket), Unordered: IsDirectoryBucket(u.Bucket)}
	if len(lanes) == 0 {
		if lanes, err = NewLanes(ctx, u.Bucket, oo.Client); err != nil {
			return nil, &store.SetupError{Err: err}
		}
		if overTLS(oo.Client.EndpointURL) {
			out.StartWindow = transfer.TLSStartWindow
		}
	}
	if len(lanes) == 0 {
		return nil, errors.New("no lane to S3")
	}
	t := Target{Bucket: u.Bucket, Version: o.Version, Req: oo.Req, Verify: o.Verify && !o.ServerSide,
		StallTimeout: o.StallTimeout, OnRetry: o.OnRetry}
	prefix := u.Prefix || o.Prefix
	if prefix && out.Key != "" && !strings.HasSuffix(out.Key, "/") {
		out.Key += "/"
	}
	var first *transfer.Prefetch
	if !prefix {
		obj, body, err := probe(ctx, lanes[0].Base.With(t), u.Key, o)
		switch {
		case err == nil:
			out.Single, t.Object = true, &obj
			if body != nil {
				first = transfer.NewPrefetch(obj.Key, body)
			}
		case errors.Is(err, transfer.ErrNotFound) && t.Version == "" && !o.Object && !NoSuchBucket(err):
			out.Key += "/"
			out.Guessed = true
		default:
			return nil, err
		}
	}
	if !out.Single {
		t.Prefix, t.FanOut = out.Key, o.FanOut
	}
	for _, l := range lanes {
		src := l.Base.With(t)
		var lane transfer.Source = src
		if o.ServerSide {
			lane = NewCopySource(src)
		}
		if out.Source == nil {
			out.Source = src
		}
		out.Lanes = append(out.Lanes, transfer.Lane{Name: l.Name, Source: lane})
	}
	if first != nil {
		out.Lanes = first.Lanes(out.Lanes)
		out.Close = first.Close
	}
	return out, nil
}

// probe resolves key as one object: by its first range, or by a HEAD
// for a server-side copy (which fetches no bytes).
func probe(ctx context.Context, src *Source, key string, o store.Options) (transfer.Object, *transfer.Body, error) {
	name := o.NameOf(key)
	if o.ServerSide {
		obj, err := NewCopySource(src).Probe(ctx, key, name)
		return obj, nil, err
	}
	// Its errors name the request already (get s3://bucket/key: ...).
	return src.Probe(ctx, key, name, o.FirstRange)
}

// overTLS says whether requests to endpoint ("": AWS) go over HTTPS.
func overTLS(endpoint string) bool {
	return endpoint == "" || strings.HasPrefix(endpoint, "https://")
}
