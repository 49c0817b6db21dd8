package httpstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// OpenerOptions are what the opener of http:// and https:// locations
// binds: the clients it reads over, and what the command line said of
// the files.
type OpenerOptions struct {
	// Lanes are the paths the ranges are spread over, one client per
	// network card (none: one lane over Client).
	Lanes []Lane
	// Client sends the probes (nil: the first lane's, else
	// http.DefaultClient).
	Client *http.Client
	// Checksum, when set, is the digest the single file a location
	// names must have (--checksum).
	Checksum *transfer.Digest
	// Items, when set, are the files every location opens as one list
	// (an input file's), each named by its own Name or URL: the location
	// only says the list is of this store.
	Items []Item
	// Backoff paces the probes' retries (default: the range reads budget, transfer.BudgetFor(transfer.RangeRead)).
	Backoff transfer.Backoff
}

// Opener is the opener of http:// and https:// locations
// (store.Registry): a location is one file, probed by a ranged GET whose
// body is the engine's first range, and named at its destination as
// Options.Name says of its URL's last path segment; with Items it is
// their list, which lands under the destination by the items' names.
// The store's ETags are opaque, and a prefix, a version or a
// server-side copy is refused.
func Opener(oo OpenerOptions) store.Opener {
	return func(ctx context.Context, loc string, o store.Options) (*store.Opened, error) {
		switch {
		case o.Prefix && oo.Items == nil:
			return nil, fmt.Errorf("%s names one file, not a prefix", Redact(loc))
		case o.Version != "":
			return nil, fmt.Errorf("%s: a URL has no versions", Redact(loc))
		case o.ServerSide:
			return nil, fmt.Errorf("%s: a web server does not copy within itself", Redact(loc))
		}
		items, single := oo.Items, oo.Items == nil
		if single {
			it := Item{URL: loc, Checksum: oo.Checksum}
			if err := checkURL(loc); err != nil {
				return nil, err
			}
			name, err := nameOf(it)
			if err == nil {
				it.Name = o.NameOf(name)
			} else if it.Name = o.NameOf(""); it.Name == "." || it.Name == "" {
				return nil, err // no name in the URL, and DEST gives none
			}
			items = []Item{it}
		}
		first := o.FirstRange
		if first < 0 {
			first = 1 << 62 // the whole file: the probe's range is all of it
		}
		lanes := oo.Lanes
		client := oo.Client
		if client == nil && len(lanes) > 0 {
			client = lanes[0].Client
		}
		st, err := Open(ctx, Options{Items: items, Client: client, Lanes: lanes, FirstRange: first, Backoff: oo.Backoff})
		if err != nil {
			return nil, err
		}
		out := &store.Opened{Lanes: st.Lanes(), Source: st.Source(st.opts.Lanes[0].Client), Single: single,
			OpaqueETags: true, Close: st.Close}
		if single {
			out.Key = st.objects[0].Name
		}
		if overTLS(items) {
			out.StartWindow = transfer.TLSStartWindow
		}
		return out, nil
	}
}

// overTLS says whether every item is fetched over https.
func overTLS(items []Item) bool {
	for _, it := range items {
		if !strings.HasPrefix(strings.ToLower(it.URL), "https://") {
			return false
		}
	}
	return true
}

// Doer is an HTTP client as a caller may hold one: what sends a request
// and follows what redirects it follows.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// ClientOf is an *http.Client over d, for a lane built as a Doer (one
// network card's client): the redirects d gives back (another host's)
// are followed by the client returned, and the URL in an error of d's
// is redacted, so that a presigned URL's signature is never printed.
func ClientOf(d Doer) *http.Client {
	return &http.Client{Transport: doerTransport{d}}
}

type doerTransport struct{ d Doer }

func (t doerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.d.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = Redact(ue.URL) // d's own error for this request
		}
		return nil, err
	}
	return resp, nil
}
