package s3emu

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Faults is a script of faults the emulator injects into matching
// requests. Rules are tried in order; the first whose filters match a
// request and whose attempt window contains it fires. Safe for concurrent use;
// rules may be added while the server runs.
type Faults struct {
	mu       sync.Mutex
	rules    []*ruleState
	versions map[string]int // synthetic object -> current version
}

// Rule says which requests get a fault and which fault they get.
type Rule struct {
	// Bucket is the bucket the rule applies to ("" or "*": any).
	Bucket string
	// Key is an exact key, "*" for every key, or "prefix*".
	Key string
	// Method is GET (the default, object GETs), HEAD, PUT, LIST,
	// COMPLETE (CompleteMultipartUpload) or "*".
	Method string
	// Range filters on the request's Range header: "" matches every
	// request and counts attempts per key; "*" matches every request and
	// counts attempts per key and Range header (so each range of a
	// SlowDown storm fails Times times); "none" matches requests without a
	// Range; anything else matches that exact header (e.g. "bytes=0-99").
	Range string
	// Attempt is the first matching request, counted from 1, that the rule
	// fires on (0 means 1), and Times how many in a row (0 means 1; -1
	// means every attempt from Attempt on).
	Attempt int
	Times   int
	// Action is the fault.
	Action Action
}

// Action is a fault: Status, Reset, Truncate, ShortBody, WrongRange,
// IgnoreRange, Stall, Flip, Replace or Delay.
type Action interface {
	fmt.Stringer
	isAction()
}

// Status answers with an S3 error: Code is the HTTP status, S3Code the
// error code in the XML body (default from the status: 503 SlowDown, 500
// InternalError, 403 AccessDenied, 404 NoSuchKey, ...).
type Status struct {
	Code    int
	S3Code  string
	Message string
}

// Reset sends the headers and At body bytes, then resets the connection
// (SO_LINGER 0, so the client sees ECONNRESET).
type Reset struct{ At int64 }

// Truncate sends honest headers (the full Content-Length) but only At body
// bytes, then closes the connection: the client sees an unexpected EOF.
type Truncate struct{ At int64 }

// ShortBody declares Content-Length At (Content-Range unchanged) and sends
// At bytes: a well-formed response with fewer bytes than the range asked.
type ShortBody struct{ At int64 }

// WrongRange serves the requested bytes under a Content-Range whose start
// and end are moved by Shift (default 1).
type WrongRange struct{ Shift int64 }

// IgnoreRange answers a ranged GET with 200 and the whole object.
type IgnoreRange struct{}

// Stall sends the headers and At body bytes, then nothing for For, then
// the rest.
type Stall struct {
	At  int64
	For time.Duration
}

// Flip inverts the bits of body byte At (relative to the response body):
// silent corruption with an honest length.
type Flip struct{ At int64 }

// Replace replaces the synthetic object with a new version (new content,
// new ETag) before the request is served, as if another writer uploaded it.
type Replace struct{}

// Delay sleeps For before serving the request normally.
type Delay struct{ For time.Duration }

func (Status) isAction()      {}
func (Reset) isAction()       {}
func (Truncate) isAction()    {}
func (ShortBody) isAction()   {}
func (WrongRange) isAction()  {}
func (IgnoreRange) isAction() {}
func (Stall) isAction()       {}
func (Flip) isAction()        {}
func (Replace) isAction()     {}
func (Delay) isAction()       {}

func (a Status) String() string {
	s := fmt.Sprintf("status:%d:%s", a.Code, a.s3Code())
	if a.Message != "" {
		s += ":" + a.Message
	}
	return s
}
func (a Reset) String() string      { return fmt.Sprintf("reset:%d", a.At) }
func (a Truncate) String() string   { return fmt.Sprintf("truncate:%d", a.At) }
func (a ShortBody) String() string  { return fmt.Sprintf("short:%d", a.At) }
func (a WrongRange) String() string { return fmt.Sprintf("badrange:%d", a.shift()) }
func (IgnoreRange) String() string  { return "norange" }
func (a Stall) String() string      { return fmt.Sprintf("stall:%d:%s", a.At, a.For) }
func (a Flip) String() string       { return fmt.Sprintf("flip:%d", a.At) }
func (Replace) String() string      { return "replace" }
func (a Delay) String() string      { return fmt.Sprintf("delay:%s", a.For) }
func (a WrongRange) shift() int64   { return cmp.Or(a.Shift, 1) }
func (a Status) s3Code() string     { return cmp.Or(a.S3Code, defaultS3Code(a.Code)) }
func (a Status) message() string    { return cmp.Or(a.Message, "injected fault: "+a.s3Code()) }

func defaultS3Code(status int) string {
	switch status {
	case http.StatusServiceUnavailable:
		return "SlowDown"
	case http.StatusInternalServerError:
		return "InternalError"
	case http.StatusForbidden:
		return "AccessDenied"
	case http.StatusNotFound:
		return "NoSuchKey"
	case http.StatusBadRequest:
		return "InvalidRequest"
	case http.StatusPreconditionFailed:
		return "PreconditionFailed"
	case http.StatusRequestedRangeNotSatisfiable:
		return "InvalidRange"
	case http.StatusBadGateway:
		return "BadGateway"
	case http.StatusGatewayTimeout:
		return "GatewayTimeout"
	case http.StatusRequestTimeout:
		return "RequestTimeout"
	}
	return "InternalError"
}

// faultComplete names CompleteMultipartUpload in fault rules.
const faultComplete = "COMPLETE"

type ruleState struct {
	Rule
	counts map[string]int // attempt counter per key (or key and range)
}

// NewFaults returns a script of rules.
func NewFaults(rules ...Rule) *Faults {
	f := &Faults{versions: map[string]int{}}
	for _, r := range rules {
		f.Add(r)
	}
	return f
}

// Add appends a rule.
func (f *Faults) Add(r Rule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.versions == nil {
		f.versions = map[string]int{}
	}
	f.rules = append(f.rules, &ruleState{Rule: r, counts: map[string]int{}})
}

// Rules returns the script's rules.
func (f *Faults) Rules() []Rule {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Rule, len(f.rules))
	for i, r := range f.rules {
		out[i] = r.Rule
	}
	return out
}

// Version returns the current version of synthetic object key: 0 until a
// Replace fault replaced it.
func (f *Faults) version(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.versions[key]
}

// replace bumps the version of synthetic object key.
func (f *Faults) replace(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.versions[key]++
}

func (r *ruleState) matches(method, bucket, key, rng string) bool {
	m := r.Method
	if m == "" {
		m = http.MethodGet
	}
	if m != "*" && !strings.EqualFold(m, method) {
		return false
	}
	if r.Bucket != "" && r.Bucket != "*" && r.Bucket != bucket {
		return false
	}
	switch {
	case r.Key == "*":
	case strings.HasSuffix(r.Key, "*"):
		if !strings.HasPrefix(key, strings.TrimSuffix(r.Key, "*")) {
			return false
		}
	case r.Key != key:
		return false
	}
	switch r.Range {
	case "", "*":
		return true
	case "none":
		return rng == ""
	}
	return r.Range == rng
}

// match returns the action to inject into a request, or nil. method is
// GET, HEAD, PUT or LIST.
func (f *Faults) match(method, bucket, key, rng string) Action {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rules {
		if !r.matches(method, bucket, key, rng) {
			continue
		}
		ck := bucket + "/" + key
		if r.Range == "*" {
			ck += "\x00" + rng
		}
		r.counts[ck]++
		n := r.counts[ck]
		first := max(r.Attempt, 1)
		times := r.Times
		if times == 0 {
			times = 1
		}
		if n >= first && (times < 0 || n < first+times) {
			return r.Action
		}
	}
	return nil
}
