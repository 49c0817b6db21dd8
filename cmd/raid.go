package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/raid"
)

// raidDeps are what raid-setup reaches the machine through; tests replace them.
type raidDeps struct {
	system   raid.System
	runner   raid.Runner
	geteuid  func() int
	lookPath func(string) (string, error)
}

// raidOptions are the flags of `s3pd raid-setup`.
type raidOptions struct {
	list, asJSON                    bool
	devices                         []string
	allInstanceStore, allEBS        bool
	mount, fs, engine, chunk, owner string
	name, fstabFile                 string
	fstab, force, yes, dryRun       bool
	teardown, wipe                  bool
	chunkSet, nameSet, fstabFileSet bool
}

// NewCmdRaidSetup builds `s3pd raid-setup`.
func NewCmdRaidSetup(f *Factory) *cobra.Command {
	return newCmdRaidSetup(f, raidDeps{
		system: raid.DefaultSystem(), runner: raid.ExecRunner{}, geteuid: os.Geteuid, lookPath: exec.LookPath,
	})
}

func newCmdRaidSetup(f *Factory, deps raidDeps) *cobra.Command {
	opts := &raidOptions{}
	c := &cobra.Command{
		Use:   "raid-setup [--list | --devices DEV,... | --all-instance-store | --all-ebs] --mount DIR",
		Short: "Stripe NVMe instance store or EBS volumes into one fast landing volume",
		Long: `Stripe several block devices into one RAID0 volume, format it with the
matching stripe alignment, mount it with noatime and, with --fstab, add an
fstab line by UUID with nofail. It prints the exact commands first and runs
them only with --yes (or after confirmation on a terminal); --dry-run only
prints them. A second run with the same arguments changes nothing.

It refuses the root device always, and devices holding a filesystem or a
partition table unless --force. --list shows every device and whether it is
usable. --teardown unmounts, stops the array and removes the fstab line;
--wipe also erases the members' superblocks. See docs/RAID.md.`,
		Example: `  s3pd raid-setup --list
  s3pd raid-setup --all-instance-store --mount /striped --owner ec2-user --fstab --dry-run
  sudo s3pd raid-setup --devices /dev/nvme1n1,/dev/nvme2n1 --mount /striped --yes
  sudo s3pd raid-setup --teardown --mount /striped --wipe --yes`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.chunkSet = c.Flags().Changed("chunk")
			opts.nameSet = c.Flags().Changed("name")
			opts.fstabFileSet = c.Flags().Changed("fstab-file")
			ctx := c.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return runRaidSetup(ctx, f, deps, opts)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&opts.list, "list", false, "list block devices and whether each can be striped")
	fl.BoolVar(&opts.asJSON, "json", false, "print the device list, or the plan and result, as JSON")
	fl.StringSliceVar(&opts.devices, "devices", nil, "devices to stripe, comma-separated (/dev/nvme1n1,/dev/nvme2n1)")
	fl.BoolVar(&opts.allInstanceStore, "all-instance-store", false, "stripe every usable NVMe instance-store drive")
	fl.BoolVar(&opts.allEBS, "all-ebs", false, "stripe every usable EBS volume (never the root volume)")
	fl.StringVar(&opts.mount, "mount", "", "mount point, e.g. /striped")
	fl.StringVar(&opts.fs, "fs", "xfs", "filesystem for --engine md: xfs or ext4")
	fl.StringVar(&opts.engine, "engine", "md", "striping engine: md (mdadm RAID0) or btrfs (btrfs raid0)")
	fl.StringVar(&opts.chunk, "chunk", "512K", "md chunk (stripe unit) size; see docs/RAID.md")
	fl.StringVar(&opts.owner, "owner", "", "chown the mount point to USER or USER:GROUP")
	fl.BoolVar(&opts.fstab, "fstab", false, "add an fstab line (by UUID, nofail) so the volume mounts at boot")
	fl.StringVar(&opts.fstabFile, "fstab-file", "/etc/fstab", "the fstab file --fstab and --teardown edit")
	fl.StringVar(&opts.name, "name", "md0", "md array name (/dev/NAME); with --engine btrfs the filesystem label, striped unless given")
	fl.BoolVar(&opts.force, "force", false, "erase devices that hold a filesystem or partition table (never the root device)")
	fl.BoolVarP(&opts.yes, "yes", "y", false, "run the plan without asking")
	fl.BoolVar(&opts.dryRun, "dry-run", false, "print the plan and exit")
	fl.BoolVar(&opts.teardown, "teardown", false, "unmount, stop the array and remove the fstab line")
	fl.BoolVar(&opts.wipe, "wipe", false, "with --teardown: also erase the members' md superblocks or btrfs signatures")
	return c
}

func runRaidSetup(ctx context.Context, f *Factory, deps raidDeps, opts *raidOptions) error {
	if err := opts.check(); err != nil {
		return err
	}
	inv, err := deps.system.Discover()
	if err != nil {
		return err
	}
	if opts.list {
		if opts.asJSON {
			return writeRaidJSON(f.IO.Out, inv)
		}
		return printRaidDevices(f.IO.Out, inv)
	}
	if opts.teardown {
		return runRaidTeardown(ctx, f, deps, opts, inv)
	}
	spec, err := opts.spec(f.IO.ErrOut, inv)
	if err != nil {
		return err
	}
	plan, err := raid.NewPlan(spec, inv)
	if err != nil {
		return usageError(fmt.Errorf("%w; nothing was changed", err))
	}
	spec = plan.Spec // with defaults filled in
	if !opts.asJSON {
		printRaidPlan(f.IO.Out, plan.Steps(), plan.InPlace)
	}
	for _, w := range plan.Warnings {
		fmt.Fprintln(f.IO.ErrOut, "warning: "+w)
	}
	if opts.dryRun {
		if opts.asJSON {
			return writeRaidJSON(f.IO.Out, raidPlanJSON(plan, nil))
		}
		printRaidParts(f.IO.Out, plan)
		return nil
	}
	if err := confirmRaid(f, opts, "This erases all data on "+strings.Join(raidMembers(plan), " ")+"."); err != nil {
		return err
	}
	if err := raidPreflight(deps, plan.Tools()); err != nil {
		return err
	}
	if err := plan.Checked(); err != nil {
		return fmt.Errorf("%w; nothing was changed", err)
	}
	res, err := raid.Apply(ctx, plan, raid.Env{Runner: deps.runner, MountInfo: deps.system.MountInfo, Report: raidReporter(f.IO.ErrOut)})
	var pe *raid.PartialError
	if errors.As(err, &pe) {
		fmt.Fprintln(f.IO.ErrOut, pe.Error())
		fmt.Fprintf(f.IO.ErrOut, "or, to undo all of it: s3pd raid-setup --teardown --engine %s --name %s --mount %s --wipe --devices %s --yes\n",
			spec.Striping, spec.Name, spec.Mount, strings.Join(raidMembers(plan), ","))
		return fmt.Errorf("raid-setup stopped at step %s; the machine's state and how to undo it are printed above", pe.Step.Action)
	}
	if err != nil {
		return err
	}
	if opts.asJSON {
		return writeRaidJSON(f.IO.Out, raidPlanJSON(plan, res))
	}
	if !res.Changed() {
		fmt.Fprintf(f.IO.Out, "already in place, nothing changed: %s (%s, UUID %s) at %s\n", plan.Target, spec.FS, res.UUID, spec.Mount)
		printRaidParts(f.IO.Out, plan)
		return nil
	}
	fmt.Fprintf(f.IO.Out, "ready: %s (%s over %s, UUID %s) mounted at %s\n", plan.Target, spec.FS, plural(int64(len(plan.Members)), "device"), res.UUID, spec.Mount)
	printRaidParts(f.IO.Out, plan)
	return nil
}

// printRaidParts says which part size fills whole stripes of the volume
// and the get line that lands on it with those parts.
func printRaidParts(w io.Writer, p *raid.Plan) {
	fmt.Fprintf(w, "parts: %s fill whole stripes of %s (%s x %d devices); download onto it with:\n  %s\n",
		raid.HumanBytes(p.PartSize()), raid.HumanBytes(p.Stripe()), raid.HumanBytes(p.Unit()), len(p.Members), raidGetLine(p))
}

// raidGetLine is the get command that matches the volume's stripe.
func raidGetLine(p *raid.Plan) string {
	return fmt.Sprintf("s3pd get --partsize %s --direct-io auto s3://BUCKET/PREFIX/ %s/", config.FormatSize(p.PartSize()), strings.TrimSuffix(p.Spec.Mount, "/"))
}

// check rejects flag combinations that make no sense.
func (o *raidOptions) check() error {
	sources := 0
	for _, set := range []bool{len(o.devices) > 0, o.allInstanceStore, o.allEBS} {
		if set {
			sources++
		}
	}
	switch {
	case o.list && (o.teardown || sources > 0 || o.yes || o.dryRun):
		return usageErrorf("--list takes only --json")
	case o.list:
		return nil
	case o.mount == "":
		return usageErrorf("--mount is required (e.g. --mount /striped), or use --list")
	case o.yes && o.dryRun:
		return usageErrorf("--yes and --dry-run contradict each other")
	case o.wipe && !o.teardown:
		return usageErrorf("--wipe works with --teardown only")
	case o.teardown && (o.allInstanceStore || o.allEBS):
		return usageErrorf("--teardown takes --devices (members to wipe), not --all-instance-store or --all-ebs")
	case o.teardown:
		return nil
	case sources == 0:
		return usageErrorf("choose the devices: --devices, --all-instance-store or --all-ebs (see --list)")
	case sources > 1:
		return usageErrorf("--devices, --all-instance-store and --all-ebs exclude each other")
	case o.fstabFileSet && !o.fstab:
		return usageErrorf("--fstab-file needs --fstab")
	}
	return nil
}

// spec turns the flags into a raid.Spec, picking devices by kind when asked.
func (o *raidOptions) spec(errOut io.Writer, inv []raid.Device) (raid.Spec, error) {
	s := raid.Spec{
		Striping: raid.Striping(o.engine), Devices: o.devices, Name: o.name, Mount: o.mount, FS: o.fs,
		Owner: o.owner, Fstab: o.fstab, FstabFile: o.fstabFile, Force: o.force,
	}
	if s.Striping == raid.StripingBtrfs {
		s.FS = ""
		if !o.nameSet {
			s.Name = "striped"
		}
	}
	if o.chunkSet {
		n, err := raid.ParseSize(o.chunk)
		if err != nil {
			return s, usageErrorf("--chunk: %v", err)
		}
		s.Chunk = n
	}
	if o.allInstanceStore || o.allEBS {
		kind := raid.KindInstanceStore
		if o.allEBS {
			kind = raid.KindEBS
		}
		for _, d := range inv {
			if d.Kind != kind || d.Root {
				continue
			}
			if d.Usable || belongsToVolume(d, s) {
				s.Devices = append(s.Devices, d.Path)
			} else {
				fmt.Fprintf(errOut, "skipping %s: %s\n", d.Path, strings.Join(d.Reasons, ", "))
			}
		}
		if len(s.Devices) == 0 {
			return s, usageErrorf("no usable %s devices found (see --list); nothing was changed", kind)
		}
	}
	return s, nil
}

// belongsToVolume reports whether d already belongs to the volume the spec describes.
func belongsToVolume(d raid.Device, s raid.Spec) bool {
	if s.Striping == raid.StripingBtrfs {
		return d.Signature == "btrfs" && d.Label == s.Name
	}
	return slices.Equal(d.Holders, []string{s.Name})
}

func runRaidTeardown(ctx context.Context, f *Factory, deps raidDeps, opts *raidOptions, inv []raid.Device) error {
	name := opts.name
	engine := raid.Striping(opts.engine)
	if engine == raid.StripingBtrfs && !opts.nameSet {
		name = "striped"
	}
	spec := raid.TeardownSpec{Striping: engine, Name: name, Mount: opts.mount, FstabFile: opts.fstabFile, Wipe: opts.wipe, Members: opts.devices}
	for _, d := range inv {
		if d.Root {
			spec.Protected = append(spec.Protected, d.Path)
		}
		if len(opts.devices) == 0 && belongsToVolume(d, raid.Spec{Striping: engine, Name: name}) {
			spec.Members = append(spec.Members, d.Path)
		}
	}
	steps, err := raid.TeardownSteps(spec)
	if err != nil {
		return usageError(err)
	}
	if !opts.asJSON {
		printRaidPlan(f.IO.Out, steps, false)
	}
	if opts.dryRun {
		if opts.asJSON {
			return writeRaidJSON(f.IO.Out, map[string]any{"teardown": steps})
		}
		return nil
	}
	what := "This unmounts " + spec.Mount
	if opts.wipe {
		what += " and erases the array's members; its data is lost"
	}
	if err := confirmRaid(f, opts, what+"."); err != nil {
		return err
	}
	if err := raidPreflight(deps, raid.TeardownTools(spec)); err != nil {
		return err
	}
	res, err := raid.Teardown(ctx, spec, raid.Env{Runner: deps.runner, MountInfo: deps.system.MountInfo, Report: raidReporter(f.IO.ErrOut)})
	if err != nil {
		return err
	}
	if opts.asJSON {
		return writeRaidJSON(f.IO.Out, res)
	}
	if !res.Changed() {
		fmt.Fprintln(f.IO.Out, "nothing to tear down")
		return nil
	}
	fmt.Fprintf(f.IO.Out, "torn down: %s\n", spec.Mount)
	return nil
}

// confirmRaid passes with --yes, asks on a terminal, and refuses otherwise.
func confirmRaid(f *Factory, opts *raidOptions, what string) error {
	if opts.yes {
		return nil
	}
	if !f.IO.InTTY {
		return usageErrorf("not running the plan without --yes (stdin is not a terminal); nothing was changed")
	}
	fmt.Fprintf(f.IO.ErrOut, "%s Run these commands? [y/N] ", what)
	line, err := bufio.NewReader(f.IO.In).ReadString('\n')
	if err != nil && line == "" {
		return &ExitError{Code: ExitFailed, Err: errors.New("no answer; nothing was changed")}
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return &ExitError{Code: ExitFailed, Err: errors.New("aborted; nothing was changed")}
	}
	return nil
}

// raidPreflight checks for root and the tools before anything runs.
func raidPreflight(deps raidDeps, tools []string) error {
	if deps.geteuid() != 0 {
		return errors.New("raid-setup changes disks and must run as root (try sudo); nothing was changed")
	}
	if err := raid.CheckTools(tools, deps.lookPath); err != nil {
		return fmt.Errorf("%w; nothing was changed", err)
	}
	return nil
}

// raidReporter prints each step's outcome as it happens.
func raidReporter(w io.Writer) func(raid.Outcome) {
	return func(o raid.Outcome) {
		s := o.Step.String()
		if o.Step.Action == raid.ActFstabRemove {
			s = "remove " + o.Step.File + " lines for the mount point"
		}
		if o.Changed {
			fmt.Fprintf(w, "done: %s\n", s)
		} else {
			fmt.Fprintf(w, "skip: %s (%s)\n", s, o.Note)
		}
	}
}

func printRaidPlan(w io.Writer, steps []raid.Step, inPlace bool) {
	fmt.Fprintln(w, "plan:")
	for _, s := range steps {
		fmt.Fprintf(w, "  %s\n", s)
	}
	if inPlace {
		fmt.Fprintln(w, "(the devices already belong to this volume; steps found done are skipped)")
	}
}

func printRaidDevices(w io.Writer, inv []raid.Device) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tSIZE\tKIND\tMODEL\tUSABLE\tWHY NOT")
	for _, d := range inv {
		usable, why := "yes", strings.Join(d.Reasons, "; ")
		if !d.Usable {
			usable = "no"
		}
		if d.Unchecked != "" {
			why = strings.TrimPrefix(why+"; "+d.Unchecked, "; ")
		}
		model := d.Model
		if model == "" {
			model = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.Path, raid.HumanBytes(d.Size), d.Kind, model, usable, why)
	}
	return tw.Flush()
}

// raidPlanJSON is the --json form of a plan and, after Apply, its result.
func raidPlanJSON(p *raid.Plan, res *raid.Result) map[string]any {
	var cmds []string
	for _, s := range p.Steps() {
		cmds = append(cmds, s.String())
	}
	out := map[string]any{
		"engine": p.Spec.Striping, "target": p.Target, "members": raidMembers(p), "mount": p.Spec.Mount,
		"fs": p.Spec.FS, "in_place": p.InPlace, "steps": p.Steps(), "commands": cmds, "warnings": p.Warnings,
		"stripe_bytes": p.Stripe(), "part_size": p.PartSize(), "get": raidGetLine(p),
	}
	if res != nil {
		out["result"] = res
	}
	return out
}

func raidMembers(p *raid.Plan) []string {
	var out []string
	for _, d := range p.Members {
		out = append(out, d.Path)
	}
	return out
}

func writeRaidJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
