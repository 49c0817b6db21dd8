package fleet

import (
	"errors"
	"os"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Observer joins a node's engine to its fleet: each part the engine
// wrote (its bytes in the file, their length, range and ETag checked) is
// marked Written on the node's Server, in the partial file Writing gives,
// so that peers may take it before the object is whole; each object the
// engine commits verified (or finds intact at its final name, or skips
// as landed by an earlier run: see landed; or, when the Source trusts
// its peers, commits unverified) is marked Ready, at the path Path
// gives; any other outcome drops what was Written of it. Each object
// whose bytes fail their checksum is dropped from the Server and
// reported to the Source (ChecksumFailed) before the engine fetches it
// again, so the refetch comes from S3 and the peer that sent the bytes
// is dropped. Add it to the engine's observers.
type Observer struct {
	transfer.NopObserver
	Server *Server
	Source *Source
	// Path is where the sink commits an object (the final name).
	Path func(transfer.Object) string
	// Writing, when set, is the partial file the sink is writing an
	// object into before it commits it ("" when it has none open):
	// with it, parts are served as they are written; without it, only
	// committed objects are.
	Writing func(transfer.Object) string
	// OnReadyError, when set, hears of an object that could not be
	// marked Ready (its file moved meanwhile): it is then not served.
	OnReadyError func(transfer.Object, error)
}

// PartDone implements transfer.Observer. The engine reports a part once
// its bytes are in the file and its transfer's checks passed; a part
// resumed whole from an earlier run's journal is not reported, and is
// served once the object is committed.
func (o *Observer) PartDone(obj transfer.Object, off, n int64) {
	if o.Server == nil || o.Writing == nil {
		return
	}
	if path := o.Writing(obj); path != "" {
		// A file that cannot be opened is served once committed.
		_ = o.Server.Written(obj.Key, path, obj.ETag, obj.Size, off, n)
	}
}

// Retry implements transfer.Observer.
func (o *Observer) Retry(obj transfer.Object, _ int64, err error) {
	if !errors.Is(err, transfer.ErrChecksum) {
		return
	}
	if o.Server != nil {
		o.Server.Discard(obj.Key) // its bytes are fetched again, into a new file
	}
	if o.Source != nil {
		o.Source.ChecksumFailed(obj.Key)
	}
}

// ObjectDone implements transfer.Observer.
func (o *Observer) ObjectDone(r transfer.Result) {
	if o.Source != nil {
		o.Source.Done(r.Object.Key)
	}
	if o.Server == nil {
		return
	}
	if !o.ready(r) {
		o.Server.Discard(r.Object.Key)
	}
}

// ready marks the object of r Ready when the engine committed it
// verified (or found it landed), and reports whether it did.
func (o *Observer) ready(r transfer.Result) bool {
	if r.Err != nil || r.Object.Size <= 0 {
		return false
	}
	path := o.Path(r.Object)
	// Committed verified, or (when the fleet trusts its peers for what
	// S3 cannot vouch for) committed at all; found intact; or skipped
	// as landed by an earlier run.
	trusted := o.Source != nil && o.Source.TrustsPeers()
	committed := r.Skipped == "" && (r.Verification.Verified() || trusted)
	if !committed && !r.Intact && (r.Skipped == "" || !landed(path, r.Object)) {
		return false
	}
	err := o.Server.Ready(r.Object.Key, path, r.Object.ETag, r.Object.Size)
	if err != nil && o.OnReadyError != nil {
		o.OnReadyError(r.Object, err)
	}
	return err == nil
}

// landed reports whether the file at path is the object as an earlier
// run landed it: a regular file of its size dated with its modification
// time, as the sink dates a file it committed verified. A rerun (or a
// node restarted) skips such a file and serves it again. Peers check
// every byte they take against S3's checksum whatever this node
// serves; the date keeps a file that merely has the object's name (an
// unrelated file kept by --no-clobber) from being offered.
func landed(path string, obj transfer.Object) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Size() == obj.Size &&
		!obj.ModTime.IsZero() && st.ModTime().Equal(obj.ModTime)
}
