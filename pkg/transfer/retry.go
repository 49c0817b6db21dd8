package transfer

import (
	"strconv"
	"time"
)

// Kind is a kind of request, as far as retrying it goes: each has one
// budget (Budgets), read by every place that sends one.
type Kind int

const (
	// RangeRead is a range of an object, read by the engine (a part
	// uploaded or copied is one too: the engine retries the range), and
	// the probe that opens a single object's first range before it.
	RangeRead Kind = iota
	// ListPage is one page of a listing.
	ListPage
	// Lookup is a look-up of one object's or part's metadata: its
	// checksums, its size, a manifest entry's stat.
	Lookup
	// StreamPart is a part of a stream, sent from memory.
	StreamPart
	// Commit ends an upload (completes it) or checks what landed after.
	Commit
	// StoreCall is any other request a store's client sends on its own
	// (create or abort an upload, a bucket's region, a delete).
	StoreCall
	kinds
)

// Budget is one kind of request's retry budget: how many attempts and
// how they are paced (Backoff), and why.
type Budget struct {
	Kind Kind
	Name string
	Backoff
	Why string
}

// budgets is the table of Budgets, one row per kind, in Kind's order.
var budgets = [kinds]Budget{
	{RangeRead, "range read", Backoff{Base: 50 * time.Millisecond, Cap: 5 * time.Second, MaxAttempts: 10},
		"a retry resumes from the byte reached, so it is cheap; ten ride out a server's restart"},
	{ListPage, "list page", Backoff{Base: 100 * time.Millisecond, Cap: 5 * time.Second, MaxAttempts: 10},
		"a run cannot go on without its listing; ten, as the SDK's retryer made"},
	{Lookup, "lookup", Backoff{Base: 100 * time.Millisecond, Cap: time.Second, MaxAttempts: 3},
		"one small request per object; losing it leaves the object unverified or unsized, not failed"},
	{StreamPart, "stream part", Backoff{Base: 100 * time.Millisecond, Cap: time.Second, MaxAttempts: 5},
		"the part is held in memory until sent; five bound how long a stream holds it"},
	{Commit, "commit", Backoff{Base: 100 * time.Millisecond, Cap: time.Second, MaxAttempts: 3},
		"every part is in: each try goes over the next lane, so the object does not fail for its last request"},
	{StoreCall, "store call", Backoff{Base: 100 * time.Millisecond, Cap: 5 * time.Second, MaxAttempts: 10},
		"paced as a listing page: a run's set-up and end must not fail for one busy answer"},
}

// BudgetFor returns the retry budget of kind k.
func BudgetFor(k Kind) Backoff { return budgets[k].Backoff }

// Budgets returns the table of retry budgets, one row per kind.
func Budgets() []Budget { return append([]Budget(nil), budgets[:]...) }

func (k Kind) String() string {
	if k < 0 || k >= kinds {
		return "kind " + strconv.Itoa(int(k))
	}
	return budgets[k].Name
}
