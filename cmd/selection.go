package cmd

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// includeAloneError refuses an --include that no --exclude comes
// before: under the AWS CLI's rule it would only take back what an
// earlier --exclude left out, so it alone selects everything, which is
// never what the hf or rclone habit means. Execute words it with the
// command line the user probably meant (explain).
type includeAloneError struct{ pattern string }

func (e *includeAloneError) Error() string {
	return fmt.Sprintf("--include %s with no --exclude before it would select everything (the AWS CLI's rule: an --include only takes back what an earlier --exclude left out); to take only what matches, put --exclude '*' before it", shellQuote(e.pattern))
}

// explain is the error's line with the command to run: args with
// --exclude '*' before the first --include.
func (e *includeAloneError) explain(args []string) string {
	words := []string{"s3pd"}
	done := false
	for _, a := range args {
		if !done && (a == "--include" || strings.HasPrefix(a, "--include=")) {
			words, done = append(words, "--exclude", "'*'"), true
		}
		words = append(words, shellQuote(a))
	}
	return fmt.Sprintf("--include %s with no --exclude before it would select everything (the AWS CLI's rule: an --include only takes back what an earlier --exclude left out); to take only what matches: %s",
		shellQuote(e.pattern), strings.Join(words, " "))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// refuseIncludeAlone refuses flag rules that start with an --include,
// unless src's wildcard (s3://b/p/*.json, an --exclude '*' and an
// --include of its own) comes before them.
func (r *ruleFlags) refuseIncludeAlone(src string) error {
	if r.firstInclude == "" {
		return nil
	}
	if u, err := s3store.ParseURL(src); !r.raw && err == nil && u.Pattern != "" {
		return nil
	}
	return usageError(&includeAloneError{pattern: r.firstInclude})
}

// emptyError is a run that selected nothing: an empty or mistyped
// prefix, or rules or a pattern that match none of what is listed.
func emptyError(verb, source string, local bool, listed int64, sel *selectionLine) error {
	what, under := "object", "under "+source
	if local {
		what = "file"
	}
	var msg string
	switch {
	case sel != nil && sel.ListedObjects > 0:
		if u, err := s3store.ParseURL(source); err == nil && u.Pattern != "" {
			msg = fmt.Sprintf("%s matches none of the %s under s3://%s/%s", source, plural(sel.ListedObjects, what), u.Bucket, u.Key)
		} else {
			msg = fmt.Sprintf("--include/--exclude select none of the %s %s", plural(sel.ListedObjects, what), under)
		}
	case listed > 0:
		msg = fmt.Sprintf("none of the %s %s was selected", plural(listed, what), under)
	default:
		if u, err := s3store.ParseURL(source); err == nil && u.Pattern != "" {
			under = fmt.Sprintf("under s3://%s/%s", u.Bucket, u.Key)
		}
		msg = fmt.Sprintf("no %s %s", what, under)
	}
	return &ExitError{Code: ExitFailed, Err: fmt.Errorf("nothing to %s: %s (--allow-empty accepts an empty result)", verb, printable(msg))}
}

// selection counts what the listing gave and what the rules selected of
// it. The filter runs in the lister's goroutine, once per object.
type selection struct {
	listed, listedBytes     atomic.Int64
	selected, selectedBytes atomic.Int64
}

// filter decorates the rules' filter with the counts.
func (s *selection) filter(match func(transfer.Object) bool) func(transfer.Object) bool {
	return func(o transfer.Object) bool {
		s.listed.Add(1)
		s.listedBytes.Add(max(o.Size, 0))
		if !match(o) {
			return false
		}
		s.selected.Add(1)
		s.selectedBytes.Add(max(o.Size, 0))
		return true
	}
}

// selectionLine is the summary's "selection" object: present whenever
// --include, --exclude or a wildcard in the source applies.
type selectionLine struct {
	ListedObjects   int64 `json:"listed_objects"`
	ListedBytes     int64 `json:"listed_bytes"`
	SelectedObjects int64 `json:"selected_objects"`
	SelectedBytes   int64 `json:"selected_bytes"`
}

// line is the selection's summary object (nil: no rules applied).
func (s *selection) line() *selectionLine {
	if s == nil {
		return nil
	}
	return &selectionLine{ListedObjects: s.listed.Load(), ListedBytes: s.listedBytes.Load(),
		SelectedObjects: s.selected.Load(), SelectedBytes: s.selectedBytes.Load()}
}

// printSelection writes "selected: 1 of 163 objects (12 B of 641 GiB)".
func printSelection(w io.Writer, s *selectionLine) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "selected: %d of %d objects (%s of %s) by --include/--exclude\n",
		s.SelectedObjects, s.ListedObjects, humanBytes(s.SelectedBytes), humanBytes(s.ListedBytes))
}
