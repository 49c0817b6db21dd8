package transfer

import "time"

// Observer receives the engine's progress. Methods are called from many
// goroutines at once and must be cheap: Bytes is called once per buffer
// of data on the hot path.
type Observer interface {
	// ObjectStarted is called when an object's first range is requested.
	ObjectStarted(obj Object)
	// Bytes is called as n bytes of object data arrive.
	Bytes(n int64)
	// PartDone is called when a part of obj has been written.
	PartDone(obj Object, off, n int64)
	// Retry is called before a request is retried after err, and
	// before an object whose bytes failed their checksum is fetched
	// again from its start (off 0, err wrapping ErrChecksum).
	Retry(obj Object, off int64, err error)
	// ObjectDone is called once per object with its outcome.
	ObjectDone(r Result)
}

// ListObserver sees the listing as it streams: each object that passes
// the filter, and the end of a complete listing.
type ListObserver interface {
	Listed(Object)
	ListingDone()
}

// Result is the outcome of one object.
type Result struct {
	Object Object
	// Bytes is how many bytes of the object were transferred in this run.
	Bytes int64
	// Err is nil when the object arrived whole.
	Err error
	// Skipped says why the object was not transferred, when it was not.
	Skipped string
	// Intact: skipped because the file at its final name was read and
	// matches the object's checksum (Options.VerifyExisting).
	Intact bool
	// Resumed is how many of the object's bytes an earlier run had
	// already written and this run kept.
	Resumed int64
	// Kept: the object was interrupted and its file keeps durable parts
	// that a rerun resumes (Journal.Suspend).
	Kept bool
	// Verification says how the bytes were checked (for an object that
	// arrived whole).
	Verification Verification
	// Elapsed is the time from the first request to the commit.
	Elapsed time.Duration
}

// NopObserver ignores every event.
type NopObserver struct{}

// ObjectStarted implements Observer.
func (NopObserver) ObjectStarted(Object) {}

// Bytes implements Observer.
func (NopObserver) Bytes(int64) {}

// PartDone implements Observer.
func (NopObserver) PartDone(Object, int64, int64) {}

// Retry implements Observer.
func (NopObserver) Retry(Object, int64, error) {}

// ObjectDone implements Observer.
func (NopObserver) ObjectDone(Result) {}

// Observers fans events out to several observers, in order.
type Observers []Observer

// ObjectStarted implements Observer.
func (os Observers) ObjectStarted(o Object) {
	for _, x := range os {
		x.ObjectStarted(o)
	}
}

// Bytes implements Observer.
func (os Observers) Bytes(n int64) {
	for _, x := range os {
		x.Bytes(n)
	}
}

// PartDone implements Observer.
func (os Observers) PartDone(o Object, off, n int64) {
	for _, x := range os {
		x.PartDone(o, off, n)
	}
}

// Retry implements Observer.
func (os Observers) Retry(o Object, off int64, err error) {
	for _, x := range os {
		x.Retry(o, off, err)
	}
}

// ObjectDone implements Observer.
func (os Observers) ObjectDone(r Result) {
	for _, x := range os {
		x.ObjectDone(r)
	}
}
