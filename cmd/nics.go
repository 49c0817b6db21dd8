package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/s3pd/s3pd/pkg/nics"
)

// nicsOptions are the flags and dependencies of `s3pd nics`.
type nicsOptions struct {
	asJSON bool
	// discover is nics.Discover over the running system unless a test
	// replaces it.
	discover func(ctx context.Context) (*nics.Report, error)
}

// NewCmdNics builds `s3pd nics`. runF, when set, runs instead of runNics
// with the parsed options (tests).
func NewCmdNics(f *Factory, runF func(context.Context, *nicsOptions) error) *cobra.Command {
	return newCmdNics(f, nil, runF)
}

// newCmdNics is NewCmdNics with discover in place of nics.Discover.
func newCmdNics(f *Factory, discover func(context.Context) (*nics.Report, error), runF func(context.Context, *nicsOptions) error) *cobra.Command {
	if discover == nil {
		discover = func(ctx context.Context) (*nics.Report, error) { return nics.Discover(ctx, nics.Options{}) }
	}
	opts := &nicsOptions{discover: discover}
	c := &cobra.Command{
		Use:   "nics [--json]",
		Short: "List network interfaces and check they can share a transfer",
		Long: `List the network interfaces (state, MTU, addresses, link speed, driver,
default route) and check that traffic from each interface's source address
leaves through that interface, which needs a source-based policy-routing
rule per address on a machine with several cards. Prints a ready-to-paste
--nics value and a warning, with a fix, for each set-up that would not
spread traffic. See docs/MULTI-NIC.md.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runNics(c.Context(), f, opts)
		},
	}
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print the report as JSON")
	return c
}

func runNics(ctx context.Context, f *Factory, opts *nicsOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	rep, err := opts.discover(ctx)
	if err != nil {
		return fmt.Errorf("discover interfaces: %w", err)
	}
	if opts.asJSON {
		enc := json.NewEncoder(f.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return printNics(f.IO.Out, rep)
}

// printNics writes the table, the --nics value and the warnings.
func printNics(w io.Writer, rep *nics.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tMTU\tSPEED\tDRIVER\tIPV4\tIPV6\tDEFAULT\tROUTE FROM SOURCE")
	for _, i := range rep.Interfaces {
		state, speed, def := "down", "-", "-"
		if i.Up {
			state = "up"
		}
		if i.SpeedMbps > 0 {
			speed = strconv.Itoa(i.SpeedMbps) + "Mb/s"
		}
		if i.DefaultRoute {
			def = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", i.Name, state, i.MTU, speed,
			orDash(i.Driver), prefixes(i.IPv4), prefixes(i.IPv6), def, routeCell(i))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.NICs != "" {
		fmt.Fprintf(w, "\n--nics %s\n", rep.NICs)
	} else {
		fmt.Fprintln(w, "\nno interface to suggest for --nics")
	}
	if len(rep.Warnings) > 0 {
		fmt.Fprintln(w)
	}
	for _, wn := range rep.Warnings {
		if wn.Interface != "" {
			fmt.Fprintf(w, "warning: %s: %s\n", wn.Interface, wn.Message)
		} else {
			fmt.Fprintf(w, "warning: %s\n", wn.Message)
		}
		if wn.Fix != "" {
			fmt.Fprintf(w, "  fix: %s\n", wn.Fix)
		}
	}
	return nil
}

// routeCell says how traffic from the interface's source address leaves:
// "rule 10001 table 103 -> ens6", "main -> ens5", or "none".
func routeCell(i nics.Interface) string {
	src, ok := i.SourceAddr()
	if !ok {
		return "-"
	}
	for _, r := range i.Routes {
		if r.Source != src {
			continue
		}
		if r.Via == "" {
			return "none"
		}
		if r.Rule < 0 {
			return tableName(r.Table) + " -> " + r.Via
		}
		return fmt.Sprintf("rule %d table %s -> %s", r.Rule, tableName(r.Table), r.Via)
	}
	return "-"
}

func tableName(t int) string {
	switch t {
	case 253:
		return "default"
	case 254:
		return "main"
	case 255:
		return "local"
	}
	return strconv.Itoa(t)
}

func prefixes(ps []netip.Prefix) string {
	if len(ps) == 0 {
		return "-"
	}
	s := make([]string, len(ps))
	for k, p := range ps {
		s[k] = p.String()
	}
	return strings.Join(s, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
