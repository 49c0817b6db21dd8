package cmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/s3pd/s3pd/pkg/shard"
)

// NewCmdShards builds `s3pd shards`, the fleet's view of a split. runF,
// when set, runs instead of runShardsCheck with the files (tests).
func NewCmdShards(f *Factory, runF func(files []string) error) *cobra.Command {
	c := &cobra.Command{
		Use:   "shards",
		Short: "Check that a fleet's shards together covered a listing exactly once",
		Example: `  # each node: s3pd get --shard auto --json s3://b/data/ /nvme/data > node-$K.json
  s3pd shards check node-*.json`,
	}
	c.AddCommand(&cobra.Command{
		Use:     "check SUMMARY...",
		Short:   "Merge the --json output of every shard into one verdict",
		Example: `  s3pd shards check shard-0.json shard-1.json shard-2.json shard-3.json`,
		Long: `Read the --json output of each process of a --shard K/N run (one file
per process; the last summary line in each counts) and say whether
together they transferred one listing exactly once: every shard 0..N-1
present once, all of the same listing (its set hash, objects and
bytes), their objects, bytes and set hashes adding up to the listing's
(an object in two shards or in none changes the sum), and every shard
complete: not a dry run, nothing failed or interrupted, no error after
its summary. Exit 0 when so, 1 with one line per problem (naming the
shard and its file) when not, 2 when a file cannot be read.

The outputs of a --fleet K/N run are checked as a fleet's: every node
0..N-1 present once, each complete (every object it listed landed, the
same count on every node), and each node's line says where its bytes
came from (S3, its peers) and what it served.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("shards check takes the --json output of every shard")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if runF != nil {
				return runF(args)
			}
			return runShardsCheck(f, args)
		},
	})
	return c
}

// shardRun is what shards check reads of one shard's --json output:
// its last summary line, and the error line after it, if any.
type shardRun struct {
	name    string
	summary *shardSummary
	err     *errorLine // the last error line after the summary (or of a run without one)
}

// shardSummary is what shards check reads of a summary line.
type shardSummary struct {
	DryRun      bool  `json:"dry_run"`
	Objects     int64 `json:"objects"`
	Failed      int64 `json:"failed"`
	Skipped     int64 `json:"skipped"`
	Interrupted int64 `json:"interrupted"`
	// Listed is nil in a summary from an s3pd that did not count it.
	Listed   *int64        `json:"listed"`
	Excluded int64         `json:"excluded"`
	Shard    *shard.Report `json:"shard"`
	// Fleet's fields are those of a --fleet node's summary.
	Fleet *int `json:"fleet_node"`
	fleetFields
}

// fleetFields are what shards check reads of a fleet node's summary
// besides its node.
type fleetFields struct {
	Nodes      int             `json:"fleet_nodes"`
	FromSource int64           `json:"fleet_bytes_from_source"`
	FromPeers  int64           `json:"fleet_bytes_from_peers"`
	ToPeers    int64           `json:"fleet_bytes_to_peers"`
	Peers      []fleetPeerLine `json:"fleet_peers"`
}

func runShardsCheck(f *Factory, files []string) error {
	var runs []shardRun
	for _, name := range files {
		run, err := readShardRun(name)
		if err != nil {
			return usageError(err)
		}
		runs = append(runs, run)
	}
	if fleetRuns(runs) {
		return checkFleet(f, runs)
	}
	var reports []shard.Report
	var problems []string
	for _, run := range runs {
		problems = append(problems, run.problems()...)
		if run.summary != nil && run.summary.Shard != nil {
			reports = append(reports, *run.summary.Shard)
		}
	}
	if len(reports) > 0 || len(problems) == 0 {
		problems = append(problems, shard.Check(reports)...)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(f.IO.Out, p)
		}
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%s in %s", plural(int64(len(problems)), "problem"), plural(int64(len(files)), "summary file"))}
	}
	r := reports[0]
	fmt.Fprintf(f.IO.Out, "ok: %s cover listing %s exactly once: %s, %s\n", plural(int64(r.Shard.N), "shard"), r.ListingHash, plural(r.ListingObjects, "object"), plural(r.ListingBytes, "byte"))
	return nil
}

// unfinished is the problem of a run that left no summary: it failed
// before it, or did not finish.
func (r shardRun) unfinished() string {
	if r.err != nil {
		return fmt.Sprintf("%s: the run failed before its summary (exit %d): %s", r.name, r.err.ExitCode, r.err.Error)
	}
	return fmt.Sprintf("%s: no --json summary: the run did not finish", r.name)
}

// incomplete says, for the run named id, which of its objects were
// interrupted or failed.
func (s *shardSummary) incomplete(id string) []string {
	var out []string
	if s.Interrupted > 0 {
		out = append(out, fmt.Sprintf("%s: interrupted, %s not complete: run it again", id, plural(s.Interrupted, "object")))
	}
	if s.Failed > 0 {
		out = append(out, fmt.Sprintf("%s: %s failed", id, plural(s.Failed, "object")))
	}
	return out
}

// problems says what keeps one shard's run from counting as complete:
// no summary, no shard in it, a dry run, objects failed, interrupted or
// not done, or an error after the summary. Each names the shard and its
// file.
func (r shardRun) problems() []string {
	s := r.summary
	switch {
	case s == nil:
		return []string{r.unfinished()}
	case s.Shard == nil:
		return []string{fmt.Sprintf("%s: its summary has no shard: the run ended before its listing did (%d failed, %d interrupted), or ran without --shard", r.name, s.Failed, s.Interrupted)}
	}
	id := fmt.Sprintf("shard %s (%s)", s.Shard.Shard, r.name)
	var out []string
	if s.DryRun {
		out = append(out, id+": a dry run, which transferred nothing")
	}
	out = append(out, s.incomplete(id)...)
	if s.Listed != nil && !s.DryRun {
		verdicts := s.Objects + s.Skipped + s.Excluded + s.Failed + s.Interrupted
		switch {
		case *s.Listed != verdicts:
			out = append(out, fmt.Sprintf("%s: internal error: %d listed, %d transferred + %d skipped + %d excluded + %d failed + %d interrupted = %d",
				id, *s.Listed, s.Objects, s.Skipped, s.Excluded, s.Failed, s.Interrupted, verdicts))
		case *s.Listed != s.Shard.Objects:
			out = append(out, fmt.Sprintf("%s: internal error: %d listed, but its share of the split holds %d", id, *s.Listed, s.Shard.Objects))
		}
	}
	switch done := s.Objects + s.Skipped; {
	case len(out) > 0: // the error line after the summary says the same
	case r.err != nil:
		out = append(out, fmt.Sprintf("%s: an error after its summary (exit %d): %s", id, r.err.ExitCode, r.err.Error))
	case done != s.Shard.Objects:
		out = append(out, fmt.Sprintf("%s: %d of its %d objects transferred or already complete", id, done, s.Shard.Objects))
	}
	return out
}

// readShardRun reads a file of --json output: its last summary line
// and any error line after it.
func readShardRun(name string) (shardRun, error) {
	run := shardRun{name: name}
	file, err := os.Open(name)
	if err != nil {
		return run, err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var h header
		if json.Unmarshal(line, &h) != nil {
			continue
		}
		switch h.Type {
		case lineSummary:
			var s shardSummary
			if err := json.Unmarshal(line, &s); err != nil {
				return run, fmt.Errorf("%s: a summary line: %w", name, err)
			}
			run.summary, run.err = &s, nil
		case lineError:
			var e errorLine
			if json.Unmarshal(line, &e) == nil {
				run.err = &e
			}
		}
	}
	if err := sc.Err(); err != nil {
		return run, fmt.Errorf("%s: %w", name, err)
	}
	return run, nil
}
