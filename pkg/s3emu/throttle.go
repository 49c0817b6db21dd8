package s3emu

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"time"
)

// Throttle makes the emulator answer 503 SlowDown as S3 does when a client
// asks too much. The zero value never throttles.
type Throttle struct {
	// MaxInFlight answers SlowDown to a request that arrives while this
	// many requests are already being served (0: no limit). Every S3
	// request counts, the throttled ones too while they wait.
	MaxInFlight int
	// PrefixRate is how many object GETs and HEADs per second each prefix
	// of each bucket serves (0: no limit; S3 documents 5,500 per
	// partitioned prefix). A prefix is the key up to its last '/'. Each
	// prefix has a token bucket refilled at PrefixRate per second that
	// holds a tenth of a second's worth (at least one): a request that
	// finds it empty is answered SlowDown and takes no token.
	PrefixRate int
	// Now is the token buckets' clock (nil: time.Now): a test that
	// refills them on a clock of its own waits for no real time. It is
	// not carried to a child emulator, which takes its throttle as JSON.
	Now func() time.Time `json:"-"`
}

// slowDown is the answer of a throttled request: S3's code and message.
var slowDown = Status{Code: 503, S3Code: "SlowDown", Message: "Please reduce your request rate."}

// Stalls stalls a fixed fraction of object GETs mid-body: the response
// sends its headers and half its body, then nothing for For, then the
// rest. Which GETs stall is decided by a hash of Seed, the key and the
// Range header, and only the first such GET since the start (or
// ResetStats) stalls, so two runs of the same client stall the same
// requests and a retry of a stalled one goes through. The zero value
// stalls nothing.
type Stalls struct {
	Fraction float64 // of GETs, 0 to 1
	For      time.Duration
	Seed     uint64
}

// throttle is the state of Options.Throttle.
type throttle struct {
	Throttle
	mu      sync.Mutex
	buckets map[string]*tokenBucket // bucket + "/" + prefix
}

type tokenBucket struct {
	tokens float64
	last   time.Time
}

func newThrottle(t Throttle) *throttle {
	if t.MaxInFlight <= 0 && t.PrefixRate <= 0 {
		return nil
	}
	if t.Now == nil {
		t.Now = time.Now
	}
	return &throttle{Throttle: t, buckets: map[string]*tokenBucket{}}
}

// admit reports whether a request may be served: inFlight counts it, and
// rated is true for the object GETs and HEADs PrefixRate limits.
func (t *throttle) admit(inFlight int64, rated bool, bucket, key string, now time.Time) bool {
	if t.MaxInFlight > 0 && inFlight > int64(t.MaxInFlight) {
		return false
	}
	if t.PrefixRate <= 0 || !rated {
		return true
	}
	prefix := key[:strings.LastIndexByte(key, '/')+1]
	capacity := max(float64(t.PrefixRate)/10, 1)
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buckets[bucket+"/"+prefix]
	if b == nil {
		b = &tokenBucket{tokens: capacity, last: now}
		t.buckets[bucket+"/"+prefix] = b
	}
	b.tokens = min(capacity, b.tokens+now.Sub(b.last).Seconds()*float64(t.PrefixRate))
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// reset refills every prefix's bucket.
func (t *throttle) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.buckets)
}

// stalls is the state of Options.Stalls.
type stalls struct {
	Stalls
	threshold uint64 // a GET stalls when its hash is below this
	mu        sync.Mutex
	done      map[string]bool // bucket/key + Range of the GETs stalled
}

func newStalls(s Stalls) *stalls {
	if s.Fraction <= 0 || s.For <= 0 {
		return nil
	}
	st := &stalls{Stalls: s, done: map[string]bool{}}
	if s.Fraction >= 1 {
		st.threshold = math.MaxUint64
	} else {
		st.threshold = uint64(s.Fraction * (1 << 64))
	}
	return st
}

// pick reports whether this GET stalls: its hash falls under the fraction
// and no GET of the same object and Range stalled before.
func (s *stalls) pick(bucket, key, rng string) bool {
	if stallHash(s.Seed, bucket, key, rng) >= s.threshold {
		return false
	}
	id := bucket + "/" + key + "\x00" + rng
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done[id] {
		return false
	}
	s.done[id] = true
	return true
}

// reset forgets which GETs stalled.
func (s *stalls) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.done)
}

// stallHash is FNV-1a 64 of seed, bucket, key and Range, finished with
// splitmix64's mixer so that its high bits are uniform.
func stallHash(seed uint64, bucket, key, rng string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(bucket))
	h.Write([]byte{0})
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(rng))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// midStall is the Stall a picked GET gets: at half its body.
type midStall struct{ For time.Duration }

func (midStall) isAction()        {}
func (a midStall) String() string { return "stall:half:" + a.For.String() }
