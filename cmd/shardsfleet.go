package cmd

import (
	"fmt"
	"strings"
)

// fleetRuns says the outputs are of a --fleet run: one of their
// summaries carries a fleet node.
func fleetRuns(runs []shardRun) bool {
	for _, r := range runs {
		if r.summary != nil && r.summary.Fleet != nil {
			return true
		}
	}
	return false
}

// checkFleet is shards check over the outputs of a --fleet run: every
// node present once and complete, all of the same listing's count, and
// a line per node of where its bytes came from.
func checkFleet(f *Factory, runs []shardRun) error {
	var problems []string
	byNode := map[int]shardRun{}
	n, listed := 0, int64(-1)
	for _, r := range runs {
		if p := r.fleetProblems(); len(p) > 0 {
			problems = append(problems, p...)
			continue
		}
		s := r.summary
		k := *s.Fleet
		switch {
		case n != 0 && s.Nodes != n:
			problems = append(problems, fmt.Sprintf("%s: node %d of a fleet of %d, others of %d", r.name, k, s.Nodes, n))
		case listed >= 0 && *s.Listed != listed:
			problems = append(problems, fmt.Sprintf("%s: node %d listed %d objects, another node %d: not the same listing", r.name, k, *s.Listed, listed))
		}
		if _, dup := byNode[k]; dup {
			problems = append(problems, fmt.Sprintf("%s: node %d reported twice", r.name, k))
		}
		byNode[k], n, listed = r, s.Nodes, *s.Listed
	}
	for k := range n {
		if _, ok := byNode[k]; !ok && len(problems) == 0 {
			problems = append(problems, fmt.Sprintf("missing node %d/%d", k, n))
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(f.IO.Out, p)
		}
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%s in %s", plural(int64(len(problems)), "problem"), plural(int64(len(runs)), "summary file"))}
	}
	var fromSource, fromPeers int64
	for k := range n {
		s := byNode[k].summary
		fromSource, fromPeers = fromSource+s.FromSource, fromPeers+s.FromPeers
		line := fmt.Sprintf("node %d: %s from S3, %s from peers, %s served to peers", k, humanBytes(s.FromSource), humanBytes(s.FromPeers), humanBytes(s.ToPeers))
		var gone []string
		for _, p := range s.Peers {
			if p.Bypassed {
				gone = append(gone, fmt.Sprintf("node %d (%s): %s", p.Node, p.Addr, oneLine(p.Reason)))
			}
		}
		if len(gone) > 0 {
			line += "; bypassed: " + strings.Join(gone, "; ")
		}
		fmt.Fprintln(f.IO.Out, line)
	}
	fmt.Fprintf(f.IO.Out, "ok: %s each landed the listing's %s: %s from S3 in all, %s between peers\n",
		plural(int64(n), "node"), plural(listed, "object"), humanBytes(fromSource), humanBytes(fromPeers))
	return nil
}

// fleetProblems says what keeps one node's run from counting as
// complete: no summary, none of a fleet, a dry run, objects failed or
// interrupted, not every object it listed landed, an error after the
// summary.
func (r shardRun) fleetProblems() []string {
	s := r.summary
	switch {
	case s == nil:
		return []string{r.unfinished()}
	case s.Fleet == nil:
		return []string{fmt.Sprintf("%s: its summary has no fleet node: it ran without --fleet", r.name)}
	case s.Listed == nil:
		return []string{fmt.Sprintf("%s: its summary does not count what was listed", r.name)}
	}
	id := fmt.Sprintf("node %d (%s)", *s.Fleet, r.name)
	out := s.incomplete(id)
	switch done := s.Objects + s.Skipped + s.Excluded; {
	case len(out) > 0:
	case r.err != nil:
		out = append(out, fmt.Sprintf("%s: an error after its summary (exit %d): %s", id, r.err.ExitCode, r.err.Error))
	case done != *s.Listed:
		out = append(out, fmt.Sprintf("%s: %d of its %d listed objects transferred, already complete or excluded", id, done, *s.Listed))
	}
	return out
}
