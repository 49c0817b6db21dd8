package cmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

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
per process; the last summary line with a shard in each counts) and say
whether together they transferred one listing exactly once: every shard
0..N-1 present once, all of the same listing (its hash, objects and
bytes), each starting where the one before it ended, none with failed
objects. Exit 0 when so, 1 with one line per problem when not, 2 when a
file cannot be read.`,
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

// shardSummary is what shards check reads of a --json line.
type shardSummary struct {
	Type   string        `json:"type"`
	Failed int64         `json:"failed"`
	Shard  *shard.Report `json:"shard"`
}

func runShardsCheck(f *Factory, files []string) error {
	var reports []shard.Report
	var problems []string
	for _, name := range files {
		s, err := readShardSummary(name)
		if err != nil {
			return usageError(err)
		}
		switch {
		case s.Type == "dry-run":
			problems = append(problems, fmt.Sprintf("shard %s (%s): a dry run transferred nothing", s.Shard.Shard, name))
		case s.Failed > 0:
			problems = append(problems, fmt.Sprintf("shard %s (%s): %s failed", s.Shard.Shard, name, plural(s.Failed, "object")))
		}
		reports = append(reports, *s.Shard)
	}
	problems = append(problems, shard.Check(reports)...)
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

// readShardSummary finds the last summary line with a shard in a file
// of --json output.
func readShardSummary(name string) (shardSummary, error) {
	file, err := os.Open(name)
	if err != nil {
		return shardSummary{}, err
	}
	defer file.Close()
	var found shardSummary
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.Contains(string(line), `"shard"`) {
			continue
		}
		var s shardSummary
		if json.Unmarshal(line, &s) == nil && s.Shard != nil && (s.Type == "summary" || s.Type == "dry-run") {
			found = s
		}
	}
	if err := sc.Err(); err != nil {
		return shardSummary{}, fmt.Errorf("%s: %w", name, err)
	}
	if found.Shard == nil {
		return shardSummary{}, fmt.Errorf("%s: no --json summary of a --shard run", name)
	}
	return found, nil
}
