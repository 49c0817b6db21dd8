package cmd

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/s3pd/s3pd/pkg/report"
)

// compareOptions are the flags of `s3pd bench compare`.
type compareOptions struct {
	// a and b are the two files compared.
	a, b             string
	failOnRegression bool
}

// NewCmdBenchCompare builds `s3pd bench compare A.json B.json`. runF,
// when set, runs instead of runBenchCompare with the parsed options.
func NewCmdBenchCompare(f *Factory, runF func(*compareOptions) error) *cobra.Command {
	opts := &compareOptions{}
	c := &cobra.Command{
		Use:   "compare [flags] A.json B.json",
		Short: "Compare two saved bench runs: better, worse or within noise",
		Long: `Compare the --json outputs of two bench runs, each with one summary per
round (bench --repeat N --json > A.json). For each figure (throughput,
time to first byte, request time, CPU per GiB, retries, memory) it prints
the mean and spread of A and B, B's change, and a verdict: better, worse,
within noise (Welch's t-test at 95%), or unknown when a side has fewer
than 3 rounds. The exit status is 0 unless --fail-on-regression is given
and a figure is worse. Runs over different schemes (HTTP and HTTPS) are
warned about: TLS's cost is in their difference.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("bench compare takes two files, A.json and B.json, got %d argument(s)", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.a, opts.b = args[0], args[1]
			if runF != nil {
				return runF(opts)
			}
			return runBenchCompare(f, opts, opts.a, opts.b)
		},
	}
	c.Flags().BoolVar(&opts.failOnRegression, "fail-on-regression", false, "exit 1 when a figure is worse in B (for CI)")
	return c
}

func runBenchCompare(f *Factory, opts *compareOptions, pathA, pathB string) error {
	a, err := readRounds(pathA)
	if err != nil {
		return err
	}
	b, err := readRounds(pathB)
	if err != nil {
		return err
	}
	if warn := report.SchemeWarning(a, b); warn != "" {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", warn)
	}
	changes := report.Compare(a, b)
	w := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "FIGURE\tA (%s)\tB (%s)\tCHANGE\tVERDICT\n", plural(int64(len(a)), "round"), plural(int64(len(b)), "round"))
	worse := 0
	for _, c := range changes {
		fmt.Fprintf(w, "%s\t%s\t%s\t%+.1f%%\t%s\n", c.Name, meanText(c.A, c.SDA, c.NA), meanText(c.B, c.SDB, c.NB), c.Percent, c.Verdict)
		if c.Verdict == report.Worse {
			worse++
		}
	}
	w.Flush()
	if len(a) < report.MinRounds || len(b) < report.MinRounds {
		fmt.Fprintf(f.IO.Out, "fewer than %d rounds on a side: noise cannot be told from change (bench --repeat %d)\n", report.MinRounds, report.MinRounds)
	}
	// A side without a figure cannot show a regression: under
	// --fail-on-regression that fails too, or a CI job whose run
	// produced no figures would pass.
	for _, side := range []struct {
		path   string
		rounds []report.Round
	}{{pathA, a}, {pathB, b}} {
		if n := figureCount(side.rounds); n == 0 {
			fmt.Fprintf(f.IO.Out, "%s has none of the figures compared\n", side.path)
			if opts.failOnRegression {
				return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%s has no figures to compare: nothing shows that it did not regress", side.path)}
			}
		}
	}
	if worse > 0 && opts.failOnRegression {
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%s worse in %s than in %s", plural(int64(worse), "figure"), pathB, pathA)}
	}
	return nil
}

func readRounds(path string) ([]report.Round, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, usageError(err)
	}
	defer fh.Close()
	rounds, err := report.ReadRounds(fh)
	if err != nil {
		return nil, usageErrorf("%s: %v", path, err)
	}
	return rounds, nil
}

func meanText(mean, sd float64, n int) string {
	if n < 2 {
		return plainNumber(mean, 4)
	}
	return plainNumber(mean, 4) + " ± " + plainNumber(sd, 2)
}

// plainNumber writes v with digits significant digits, never in
// exponent form: 25670, not 2.567e+04.
func plainNumber(v float64, digits int) string {
	if math.Abs(v) >= math.Pow(10, float64(digits)) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', digits, 64), 64) // rounded
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// figureCount is how many of the compared figures some round has.
func figureCount(rounds []report.Round) int {
	n := 0
	for _, fig := range report.Figures {
		for _, r := range rounds {
			if _, ok := r.Figures[fig.Field]; ok {
				n++
				break
			}
		}
	}
	return n
}
