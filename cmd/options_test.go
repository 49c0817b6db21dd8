package cmd

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// parse runs the command c builds with args and no network: its runF
// captured the options. It returns the command's error.
func parse(t *testing.T, c *cobra.Command, args ...string) error {
	t.Helper()
	c.SilenceUsage, c.SilenceErrors = true, true
	c.SetArgs(args)
	c.SetOut(&bytes.Buffer{})
	c.SetErr(&bytes.Buffer{})
	return c.ExecuteContext(context.Background())
}

func optionsFactory() *Factory {
	return &Factory{IO: &IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, Getenv: func(string) string { return "" }}
}

// TestGetOptions: get's and cat's flags and arguments, as the options
// runGet receives.
func TestGetOptions(t *testing.T) {
	for _, tt := range []struct {
		cmd  string
		args []string
		want string // the options that matter, as getSummary prints them
	}{
		{"get", []string{"s3://b/p/", "out"}, "src=s3://b/p/ dest=out bench=false delete=false verify=auto stall=30s version= overwrite=false noclobber=false"},
		{"get", []string{"--benchmark", "s3://b/k"}, "src=s3://b/k dest= bench=true delete=false verify=auto stall=30s version= overwrite=false noclobber=false"},
		{"get", []string{"--delete", "--verify", "full", "--stall-timeout", "5s", "s3://b/p/", "out"}, "src=s3://b/p/ dest=out bench=false delete=true verify=full stall=5s version= overwrite=false noclobber=false"},
		{"get", []string{"--version-id", "v1", "--overwrite", "s3://b/k", "-"}, "src=s3://b/k dest=- bench=false delete=false verify=auto stall=30s version=v1 overwrite=true noclobber=false"},
		{"get", []string{"--no-clobber", "s3://b/k", "out/"}, "src=s3://b/k dest=out/ bench=false delete=false verify=auto stall=30s version= overwrite=false noclobber=true"},
		{"cat", []string{"s3://b/k"}, "src=s3://b/k dest=- bench=false delete=false verify=auto stall=30s version= overwrite=false noclobber=false"},
		{"cat", []string{"--verify", "off", "--version-id", "v2", "s3://b/k"}, "src=s3://b/k dest=- bench=false delete=false verify=off stall=30s version=v2 overwrite=false noclobber=false"},
	} {
		t.Run(tt.cmd+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			var got *getOptions
			runF := func(_ context.Context, o *getOptions) error { got = o; return nil }
			c := NewCmdGet(optionsFactory(), runF)
			if tt.cmd == "cat" {
				c = NewCmdCat(optionsFactory(), runF)
			}
			if err := parse(t, c, tt.args...); err != nil {
				t.Fatal(err)
			}
			if s := getSummary(got); s != tt.want {
				t.Errorf("got  %s\nwant %s", s, tt.want)
			}
			if got.flags == nil {
				t.Errorf("no flags for the settings")
			}
		})
	}
}

func getSummary(o *getOptions) string {
	return fmt.Sprintf("src=%s dest=%s bench=%v delete=%v verify=%s stall=%s version=%s overwrite=%v noclobber=%v",
		o.src, o.dest, o.benchmark, o.delete, o.output.verify, o.output.stall, o.versionID, o.sink.Overwrite, o.sink.NoClobber)
}

// TestGetArgs: the number of arguments is checked before runF.
func TestGetArgs(t *testing.T) {
	for _, args := range [][]string{{"s3://b/k"}, {"s3://b/k", "a", "b"}, {"--benchmark"}} {
		called := false
		err := parse(t, NewCmdGet(optionsFactory(), func(context.Context, *getOptions) error { called = true; return nil }), args...)
		if err == nil || called || exitCode(err) != ExitUsage {
			t.Errorf("get %q: error %v (exit %d), run %v; want a usage error and no run", args, err, exitCode(err), called)
		}
	}
}

// TestCopyOptions: copy's flags and arguments, as runCopy receives them.
func TestCopyOptions(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"a", "b"}, "src=a dst=b bench=false delete=false follow=true nofollow=false threshold=5GiB source= sse= checksum=CRC64NVME"},
		{[]string{"--benchmark", "s3://b/p/"}, "src=s3://b/p/ dst= bench=true delete=false follow=true nofollow=false threshold=5GiB source= sse= checksum=CRC64NVME"},
		{[]string{"--delete", "--no-follow-symlinks", "dir", "s3://b/p/"}, "src=dir dst=s3://b/p/ bench=false delete=true follow=true nofollow=true threshold=5GiB source= sse= checksum=CRC64NVME"},
		{[]string{"--source-endpoint-url", "http://x", "--copy-threshold", "1GiB", "--sse", "AES256", "--checksum-algorithm", "CRC32C", "s3://a/k", "s3://b/k"},
			"src=s3://a/k dst=s3://b/k bench=false delete=false follow=true nofollow=false threshold=1GiB source=http://x sse=AES256 checksum=CRC32C"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var got *copyOptions
			if err := parse(t, NewCmdCopy(optionsFactory(), func(_ context.Context, o *copyOptions) error { got = o; return nil }), tt.args...); err != nil {
				t.Fatal(err)
			}
			s := fmt.Sprintf("src=%s dst=%s bench=%v delete=%v follow=%v nofollow=%v threshold=%s source=%s sse=%s checksum=%s",
				got.src, got.dest, got.benchmark, got.delete, got.followSymlinks, got.noFollowSymlinks, got.copyThreshold,
				got.source.endpoint, got.upload.SSE, got.upload.ChecksumAlgorithm)
			if s != tt.want {
				t.Errorf("got  %s\nwant %s", s, tt.want)
			}
		})
	}
}

// TestBenchOptions: bench's flags and its optional URL.
func TestBenchOptions(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "url= repeat=1 dataset=" + defaultBenchDataset + " ttfb=30ms rate=90MB sweep=false"},
		{[]string{"--repeat", "3", "--ttfb", "0s", "--conn-rate", "0", "s3://b/p/"}, "url=s3://b/p/ repeat=3 dataset=" + defaultBenchDataset + " ttfb=0s rate=0 sweep=false"},
		{[]string{"--sweep", "--dataset", "a:1:1MiB"}, "url= repeat=1 dataset=a:1:1MiB ttfb=30ms rate=90MB sweep=true"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var got *benchOptions
			if err := parse(t, NewCmdBench(optionsFactory(), func(_ context.Context, o *benchOptions) error { got = o; return nil }), tt.args...); err != nil {
				t.Fatal(err)
			}
			s := fmt.Sprintf("url=%s repeat=%d dataset=%s ttfb=%s rate=%s sweep=%v", got.url, got.repeat, got.dataset, got.ttfb, got.connRate, got.sweep.on)
			if s != tt.want {
				t.Errorf("got  %s\nwant %s", s, tt.want)
			}
		})
	}
}

// TestBrowseOptions: ls's and du's flags and URL.
func TestBrowseOptions(t *testing.T) {
	for _, tt := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"ls", nil, "url= recursive=false human=false summarize=false json=false"},
		{"ls", []string{"-r", "-H", "--summarize", "s3://b/p/"}, "url=s3://b/p/ recursive=true human=true summarize=true json=false"},
		{"du", []string{"--json", "s3://b/p/"}, "url=s3://b/p/ json=true bytes=false human=false"},
		{"du", []string{"-b", "s3://b/"}, "url=s3://b/ json=false bytes=true human=false"},
		{"du", []string{"-H", "s3://b/"}, "url=s3://b/ json=false bytes=false human=true"},
		{"du", []string{"--human-readable", "s3://b/"}, "url=s3://b/ json=false bytes=false human=true"},
	} {
		t.Run(tt.cmd+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			var got string
			var c *cobra.Command
			if tt.cmd == "ls" {
				c = NewCmdLs(optionsFactory(), func(_ context.Context, o *lsOptions) error {
					got = fmt.Sprintf("url=%s recursive=%v human=%v summarize=%v json=%v", o.url, o.recursive, o.human, o.summarize, o.asJSON)
					return nil
				})
			} else {
				c = NewCmdDu(optionsFactory(), func(_ context.Context, o *duOptions) error {
					got = fmt.Sprintf("url=%s json=%v bytes=%v human=%v", o.url, o.asJSON, o.bytes, o.human)
					return nil
				})
			}
			if err := parse(t, c, tt.args...); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestListingHelpHasNoTransferFlags: ls's and du's help lists where the
// server is and how to sign, not how a transfer runs; they still accept
// a transfer setting (a preset or config file sets it for every
// command).
func TestListingHelpHasNoTransferFlags(t *testing.T) {
	for _, c := range []*cobra.Command{NewCmdLs(optionsFactory(), nil), NewCmdDu(optionsFactory(), nil)} {
		help := c.LocalFlags().FlagUsages()
		for _, flag := range []string{"--workers", "--threads", "--partsize", "--max-concurrent-requests", "--multipart-threshold", "--max-bandwidth", "--target-bandwidth"} {
			if strings.Contains(help, flag+" ") {
				t.Errorf("%s --help lists %s", c.Name(), flag)
			}
		}
		for _, flag := range []string{"--endpoint-url", "--region", "--no-sign-request", "--profile"} {
			if !strings.Contains(help, flag+" ") {
				t.Errorf("%s --help lacks %s", c.Name(), flag)
			}
		}
		if err := c.Flags().Parse([]string{"--workers", "8"}); err != nil {
			t.Errorf("%s refuses --workers: %v", c.Name(), err)
		}
	}
}

// TestBenchSubcommandOptions: bench compare's files and bench serve's
// flags, as their runs receive them.
func TestBenchSubcommandOptions(t *testing.T) {
	var cmp *compareOptions
	if err := parse(t, NewCmdBenchCompare(optionsFactory(), func(o *compareOptions) error { cmp = o; return nil }),
		"--fail-on-regression", "a.json", "b.json"); err != nil {
		t.Fatal(err)
	}
	if cmp.a != "a.json" || cmp.b != "b.json" || !cmp.failOnRegression {
		t.Errorf("compare: got %+v, want a.json, b.json, fail on regression", *cmp)
	}
	var srv *benchServeOptions
	if err := parse(t, NewCmdBenchServe(optionsFactory(), func(_ context.Context, o *benchServeOptions) error { srv = o; return nil }),
		"--listen", "127.0.0.1:0", "--backend", "memory", "--ttfb", "30ms", "--bucket", "x", "--bucket", "y"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%s %s %s %v", srv.listen, srv.backend, srv.ttfb, srv.buckets); got != "127.0.0.1:0 memory 30ms [x y]" {
		t.Errorf("serve: got %s, want 127.0.0.1:0 memory 30ms [x y]", got)
	}
}

// TestOtherCommandOptions: config show, shards check, bench disk and
// nics hand their runs what their flags and arguments say.
func TestOtherCommandOptions(t *testing.T) {
	var show *configShowOptions
	if err := parse(t, NewCmdConfig(optionsFactory(), func(o *configShowOptions) error { show = o; return nil }), "show", "--json", "--workers", "4"); err != nil {
		t.Fatal(err)
	}
	if !show.asJSON || !show.flags.Changed("workers") {
		t.Errorf("config show: json %v, --workers changed %v; want both", show.asJSON, show.flags.Changed("workers"))
	}
	var files []string
	if err := parse(t, NewCmdShards(optionsFactory(), func(f []string) error { files = f; return nil }), "check", "a.json", "b.json"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(files, ",") != "a.json,b.json" {
		t.Errorf("shards check: files %q, want a.json, b.json", files)
	}
	var disk *diskOptions
	var dir string
	if err := parse(t, NewCmdBenchDisk(optionsFactory(), func(o *diskOptions, d string) error { disk, dir = o, d; return nil }), "--files", "2", "--file-size", "1GiB", "/mnt"); err != nil {
		t.Fatal(err)
	}
	if disk.opts.Files != 2 || disk.fileSize != "1GiB" || dir != "/mnt" {
		t.Errorf("bench disk: files %d size %q dir %q, want 2, 1GiB, /mnt", disk.opts.Files, disk.fileSize, dir)
	}
	var nicsOpts *nicsOptions
	if err := parse(t, NewCmdNics(optionsFactory(), func(_ context.Context, o *nicsOptions) error { nicsOpts = o; return nil }), "--json"); err != nil {
		t.Fatal(err)
	}
	if !nicsOpts.asJSON {
		t.Errorf("nics: json not set")
	}
}
