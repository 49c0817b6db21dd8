package transfertest

import (
	"sync"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Recorder is a transfer.Observer and transfer.ListObserver that keeps
// what a run reported, for a test to read after Run returns.
type Recorder struct {
	mu      sync.Mutex
	results map[string]transfer.Result
	started map[string]int
	parts   map[string]int
	retries []error
	bytes   int64
	listed  []string
	done    bool
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{results: map[string]transfer.Result{}, started: map[string]int{}, parts: map[string]int{}}
}

// ObjectStarted implements transfer.Observer.
func (r *Recorder) ObjectStarted(o transfer.Object) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started[o.Key]++
}

// Bytes implements transfer.Observer.
func (r *Recorder) Bytes(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bytes += n
}

// PartDone implements transfer.Observer.
func (r *Recorder) PartDone(o transfer.Object, _, _ int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.parts[o.Key]++
}

// Retry implements transfer.Observer.
func (r *Recorder) Retry(_ transfer.Object, _ int64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retries = append(r.retries, err)
}

// ObjectDone implements transfer.Observer.
func (r *Recorder) ObjectDone(res transfer.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results[res.Object.Key] = res
}

// Listed implements transfer.ListObserver.
func (r *Recorder) Listed(o transfer.Object) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listed = append(r.listed, o.Key)
}

// ListingDone implements transfer.ListObserver.
func (r *Recorder) ListingDone() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
}

// Result returns the outcome reported for key, and whether there was one.
func (r *Recorder) Result(key string) (transfer.Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.results[key]
	return res, ok
}

// Results is how many objects were reported done.
func (r *Recorder) Results() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.results)
}

// Started and PartsDone count the events reported for key.
func (r *Recorder) Started(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started[key]
}

// PartsDone counts the parts reported written for key.
func (r *Recorder) PartsDone(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.parts[key]
}

// Retries returns the errors retried, in order.
func (r *Recorder) Retries() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.retries...)
}

// BytesSeen is the sum of the Bytes events.
func (r *Recorder) BytesSeen() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytes
}

// Listing returns the keys listed, in order, and whether the listing
// was reported complete.
func (r *Recorder) Listing() ([]string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.listed...), r.done
}
