package fleet

import (
	"errors"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Observer joins a node's engine to its fleet: each object the engine
// commits verified (or finds intact at its final name) is marked Ready
// on the node's Server, at the path Path gives; each object whose bytes
// fail their checksum is reported to the Source (ChecksumFailed) before
// the engine fetches it again, so the refetch comes from S3 and the
// peer that sent the bytes is dropped. Add it to the engine's observers.
type Observer struct {
	transfer.NopObserver
	Server *Server
	Source *Source
	// Path is where the sink commits an object (the final name).
	Path func(transfer.Object) string
	// OnReadyError, when set, hears of an object that could not be
	// marked Ready (its file moved meanwhile): it is then not served.
	OnReadyError func(transfer.Object, error)
}

// Retry implements transfer.Observer.
func (o *Observer) Retry(obj transfer.Object, _ int64, err error) {
	if o.Source != nil && errors.Is(err, transfer.ErrChecksum) {
		o.Source.ChecksumFailed(obj.Key)
	}
}

// ObjectDone implements transfer.Observer.
func (o *Observer) ObjectDone(r transfer.Result) {
	if o.Source != nil {
		o.Source.Done(r.Object.Key)
	}
	verified := r.Err == nil && (r.Skipped == "" && r.Verification.Verified() || r.Intact)
	if o.Server == nil || !verified || r.Object.Size <= 0 {
		return
	}
	err := o.Server.Ready(r.Object.Key, o.Path(r.Object), r.Object.ETag, r.Object.Size)
	if err != nil && o.OnReadyError != nil {
		o.OnReadyError(r.Object, err)
	}
}
