package cmd

import (
	"errors"

	"github.com/s3pd/s3pd/pkg/httpstore"
	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/store"
)

// storeOptions are what the stores of a run are opened with: each
// store's own options, from the run's settings and flags, for reading
// and for writing.
type storeOptions struct {
	// s3 reaches s3:// locations to read: the clients' options over the
	// run's transport, and what every request carries.
	s3 s3store.OpenerOptions
	// s3Dest writes s3:// locations: DEST's clients (which differ from
	// SRC's in a copy across stores), and what every object written
	// gets.
	s3Dest s3store.DestOptions
	// local reads local paths: links followed or not, what is skipped
	// reported.
	local local.SourceOptions
	// localDest writes local paths: what is done with files already
	// there, direct I/O, the lock.
	localDest local.Options
	// http reaches http:// and https:// URLs: the run's lanes as HTTP
	// clients, and what the command line said of the files.
	http httpstore.OpenerOptions
}

// stores is the registry of the stores a run reads from and writes to,
// by the scheme of their URLs: one line per store. The job finds a
// location's store here and nowhere else.
func stores(o storeOptions) store.Registry {
	return store.Registry{
		{Scheme: "s3", Name: "S3", Open: s3store.Opener(o.s3), Dest: s3store.Dest(o.s3Dest)},
		{Scheme: "", Name: "local files", Open: local.Opener(o.local), Dest: local.Dest(o.localDest)},
		{Scheme: "http", Name: "HTTP", Open: httpstore.Opener(o.http)},
		{Scheme: "https", Name: "HTTPS", Open: httpstore.Opener(o.http)},
	}
}

// s3Stores is the registry of a run whose S3 locations are reached with
// client, each request carrying req.
func s3Stores(client s3store.ClientOptions, req s3store.Request) store.Registry {
	return stores(storeOptions{s3: s3store.OpenerOptions{Client: client, Req: req}})
}

// httpLanes are the run's lanes (one per network card) as the HTTP
// clients of an http(s):// source.
func httpLanes(t *s3store.Transport) []httpstore.Lane {
	var out []httpstore.Lane
	for i, name := range t.Names() {
		out = append(out, httpstore.Lane{Name: name, Client: httpstore.ClientOf(t.Lane(i))})
	}
	return out
}

// s3Location is the location of u for the job: its bucket and key, the
// key's wildcards already turned into rules.
func s3Location(u s3store.URL) string { return "s3://" + u.Bucket + "/" + u.Key }

// statusOf is the status and code of the server's answer that err
// carries (ok false: none).
func statusOf(err error) (status int, code string, ok bool) {
	var se *s3store.StatusError
	if !errors.As(err, &se) {
		return 0, "", false
	}
	return se.Status, se.Code, true
}
