package testenv

import "testing"

// recorder is a TB that records which of Fatalf and Skipf was called.
type recorder struct{ fatal, skip string }

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.fatal = format }
func (r *recorder) Skipf(format string, args ...any)  { r.skip = format }

// Under CI=true a missing tool fails the test; elsewhere it skips it.
func TestUnavailable(t *testing.T) {
	for _, tt := range []struct {
		ci        string
		wantFatal bool
	}{{"true", true}, {"", false}, {"false", false}} {
		t.Setenv("CI", tt.ci)
		var r recorder
		Unavailable(&r, "no %s", "tool")
		if got := r.fatal != ""; got != tt.wantFatal || (r.skip != "") == tt.wantFatal {
			t.Errorf("CI=%q: fatal %q, skip %q; want fatal %v", tt.ci, r.fatal, r.skip, tt.wantFatal)
		}
	}
}
