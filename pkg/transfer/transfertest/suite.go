// Package transfertest holds what tests of the engine and of its adapters
// share: the contract every Sink and every Source keeps, as two suites
// (SinkSuite, SourceSuite) that each adapter runs from its own package's
// tests, and small in-memory adapters with each optional interface, for
// tests of the engine itself.
//
// A suite is one method per clause of the contract, each a subtest named
// after it (go test -run 'Contract/TestAbortLeavesNothing'). A clause
// that needs a capability the adapter lacks skips itself and says why: the
// suite finds the capability on what the adapter hands it (a file that is
// a transfer.PartWriter, a transfer.Journal or a transfer.Stream; a
// destination that can be read back), never in a switch of the suite's.
package transfertest

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// runClauses runs every method of suite whose name begins with Test as a
// subtest of t named after it, in the order of their names. A method so
// named that is not a func(*testing.T) fails t: it would otherwise never
// run, and its clause would go unchecked unnoticed.
func runClauses(t *testing.T, suite any) {
	t.Helper()
	v := reflect.ValueOf(suite)
	ran := 0
	for i := range v.NumMethod() {
		name := v.Type().Method(i).Name
		if !strings.HasPrefix(name, "Test") {
			continue
		}
		clause, ok := v.Method(i).Interface().(func(*testing.T))
		if !ok {
			t.Fatalf("%s.%s is not a clause: it must be a func(*testing.T)", v.Type(), name)
		}
		t.Run(name, clause)
		ran++
	}
	if ran == 0 {
		t.Fatalf("%s has no clauses", v.Type())
	}
}

// Data returns n bytes that depend on seed: an object's content.
func Data(seed string, n int) []byte {
	b := make([]byte, n)
	x := uint64(14695981039346656037)
	for _, c := range []byte(seed) {
		x = (x ^ uint64(c)) * 1099511628211
	}
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// bodyOf is a plain body over bytes [off, off+n) of data.
func bodyOf(data []byte, off, n int64) *transfer.Body {
	return &transfer.Body{ReadCloser: io.NopCloser(bytes.NewReader(data[off : off+n])), Off: off, Len: n, Size: int64(len(data))}
}

// when is the modification time of the suites' objects.
var when = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// errReader fails every read, as a connection that breaks.
type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBroken }

var errBroken = errors.New("transfertest: connection broken")
