package cmd

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// includeAloneWarning is said when the first rule is an --include: under
// the AWS CLI's rule an include only re-admits what an earlier --exclude
// removed, so it alone selects everything.
const includeAloneWarning = "--include %q selects everything: an --include only takes back what an earlier --exclude left out (the AWS CLI's rule); to take only what matches, write --exclude '*' --include %q"

// warnIncludeAlone warns, before the first request, when rules start
// with an --include, which then selects nothing out.
func warnIncludeAlone(f *runEnv, rules transfer.Rules) {
	if len(rules) == 0 || !rules[0].Include || f.Logger == nil {
		return
	}
	f.Logger.Warn(fmt.Sprintf(includeAloneWarning, rules[0].Pattern, rules[0].Pattern))
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
