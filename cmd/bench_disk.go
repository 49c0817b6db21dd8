package cmd

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/diskbench"
)

// diskOptions are the flags of `s3pd bench disk`.
type diskOptions struct {
	opts           diskbench.Options
	fileSize, part string
	networkRate    string
	asJSON         bool
}

// NewCmdBenchDisk builds `s3pd bench disk DIR`. runF, when set, runs
// instead of runBenchDisk with the parsed options and DIR (tests).
func NewCmdBenchDisk(f *Factory, runF func(o *diskOptions, dir string) error) *cobra.Command {
	o := &diskOptions{}
	c := &cobra.Command{
		Use:   "disk [flags] DIR",
		Short: "Measure how fast DIR takes s3pd's writes, and whether disk or network bounds a pull",
		Long: `Write files into DIR the way get does (pre-sized files, parts written by
parallel writers with pwrite, fsync at the end) and report the rate to
durable data for buffered writes with ftruncate, buffered writes with
fallocate, and O_DIRECT with fallocate where the file system allows it.
It then compares the best with the network's rate (the link speed of the
cards on the default route, or --network-rate) and says which would bound
a pull into DIR. The files are removed at the end.

On a loop device the "disk" is a file in the page cache of the file
system beneath, so the figures measure memory, not a disk.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("bench disk takes one directory, got %d argument(s)", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o, args[0])
			}
			return runBenchDisk(c, f, o, args[0])
		},
	}
	fs := c.Flags()
	fs.IntVar(&o.opts.Files, "files", 4, "files written at once")
	fs.StringVar(&o.fileSize, "file-size", "256MiB", "size of each file")
	fs.StringVar(&o.part, "partsize", "8MiB", "size of one part (a range of a download), as get's --partsize")
	// The name this flag had before it was spelled as everywhere else.
	fs.StringVar(&o.part, "part-size", "8MiB", "alias of --partsize")
	_ = fs.MarkHidden("part-size")
	fs.IntVar(&o.opts.Writers, "writers", 16, "parts written at once (requests in flight)")
	fs.StringVar(&o.networkRate, "network-rate", "", "the network's rate to compare with, as --max-bandwidth reads it (100Gb/s in bits, 12GB/s in bytes); default: the link speed of the cards on the default route")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON line per mode and one with the verdict")
	return c
}

// diskLine is one --json line per mode measured.
type diskLine struct {
	header
	Mode           string  `json:"mode"`
	Direct         bool    `json:"direct"`
	Fallocate      bool    `json:"fallocate"`
	Bytes          int64   `json:"bytes"`
	WriteSeconds   float64 `json:"write_seconds"`
	SyncSeconds    float64 `json:"sync_seconds"`
	Seconds        float64 `json:"seconds"`
	BytesPerSecond float64 `json:"bytes_per_second"`
	Unsupported    string  `json:"unsupported,omitempty"`
}

// diskVerdictLine is the last --json line of bench disk.
type diskVerdictLine struct {
	header
	Dir                   string  `json:"dir"`
	LoopDevice            bool    `json:"loop_device"`
	NetworkBytesPerSecond float64 `json:"network_bytes_per_second"`
	Verdict               string  `json:"verdict"`
}

func runBenchDisk(c *cobra.Command, f *Factory, o *diskOptions, dir string) error {
	var err error
	if o.opts.FileSize, err = config.ParseSize(o.fileSize); err != nil {
		return usageErrorf("--file-size: %w", err)
	}
	if o.opts.FileSize < 1<<20 {
		return usageErrorf("--file-size %q: want at least 1MiB", o.fileSize)
	}
	if o.opts.PartSize, err = config.ParseSize(o.part); err != nil {
		return usageErrorf("--partsize: %w", err)
	}
	if o.opts.PartSize < 4096 || o.opts.PartSize%4096 != 0 {
		return usageErrorf("--partsize %q: want a multiple of 4KiB", o.part)
	}
	if o.opts.Files < 1 || o.opts.Writers < 1 {
		return usageErrorf("--files and --writers must be at least 1")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usageErrorf("bench disk: %s is not a directory", dir)
	}
	network := 0.0
	if o.networkRate != "" {
		n, err := config.ParseRate(o.networkRate)
		if err != nil || n <= 0 {
			return usageErrorf("--network-rate %q: want a rate such as 100Gb/s (bits) or 12GB/s (bytes)", o.networkRate)
		}
		network = float64(n)
	} else {
		for _, n := range machine(config.Settings{}).NICs {
			if n.Used && n.SpeedMbps > 0 {
				network += float64(n.SpeedMbps) * 1e6 / 8
			}
		}
	}
	loop := diskbench.OnLoopDevice(dir)
	out := f.IO.Out
	if !o.asJSON {
		fmt.Fprintf(out, "disk: %s, %s of %s in %s parts, %s\n", dir, plural(int64(o.opts.Files), "file"), config.FormatSize(o.opts.FileSize), config.FormatSize(o.opts.PartSize), plural(int64(o.opts.Writers), "writer"))
		if loop {
			fmt.Fprintln(out, "note: on a loop device: this measures the backing file's page cache, not a disk")
		}
	}
	results, err := diskbench.Run(c.Context(), dir, o.opts, diskbench.Modes)
	if err != nil {
		if c.Context().Err() != nil {
			return &ExitError{Code: ExitInterrupted}
		}
		return err
	}
	verdict := diskbench.Bound(results, network)
	for _, r := range results {
		if o.asJSON {
			writeJSONLine(out, diskLine{header: newHeader("disk"), Mode: r.Mode.String(), Direct: r.Direct, Fallocate: r.Fallocate,
				Bytes: r.Bytes, WriteSeconds: r.Write.Seconds(), SyncSeconds: r.Sync.Seconds(), Seconds: r.Elapsed.Seconds(),
				BytesPerSecond: r.BytesPerSecond(), Unsupported: r.Unsupported})
			continue
		}
		if r.Unsupported != "" {
			fmt.Fprintf(out, "%-22s not measured: %s\n", r.Mode, r.Unsupported)
			continue
		}
		fmt.Fprintf(out, "%-22s %s in %s (writes %s, fsync %s): %s\n", r.Mode, humanBytes(r.Bytes), humanSeconds(r.Elapsed.Seconds()),
			humanSeconds(r.Write.Seconds()), humanSeconds(r.Sync.Seconds()), humanRate(r.BytesPerSecond()))
	}
	if o.asJSON {
		writeJSONLine(out, diskVerdictLine{header: newHeader("disk_verdict"), Dir: dir, LoopDevice: loop, NetworkBytesPerSecond: network, Verdict: verdict})
		return nil
	}
	fmt.Fprintf(out, "verdict: %s\n", verdict)
	return nil
}
