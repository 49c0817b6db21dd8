package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestLegacyArgs(t *testing.T) {
	tests := []struct {
		args []string
		get  bool // rewritten to get
	}{
		{[]string{"s3://b/p/", "dest"}, true},
		{[]string{"--workers=40", "--threads", "32", "s3://b/p/", "dest"}, true},
		{[]string{"--quiet", "s3://b/p", "-"}, true},
		{[]string{"completion", "bash"}, false},
		{[]string{"completion", "zsh"}, false},
		{[]string{"help", "get"}, false},
		{[]string{"__complete", "get", "--ver"}, false},
		{[]string{"cp", "a", "b"}, false},
		{[]string{"get", "s3://b/k", "d"}, false},
		{[]string{"./a", "./b"}, false}, // local to local needs copy
		{[]string{"--help", "s3://b/k", "d"}, false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			root := NewCmdRoot(&Factory{IO: &IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}})
			root.InitDefaultHelpCmd()
			root.InitDefaultCompletionCmd()
			got := legacyArgs(root, tt.args)
			want := tt.args
			if tt.get {
				want = append([]string{"get"}, tt.args...)
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

// TestCommandSurface runs whole command lines through Execute and checks
// the exit code and the one line on stderr.
func TestCommandSurface(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stdout string // a substring of stdout
		stderr string // a substring of stderr
	}{
		{[]string{"completion", "bash"}, 0, "bash completion", ""},
		{[]string{"completion", "zsh"}, 0, "#compdef s3pd", ""},
		{[]string{"completion", "fish"}, 0, "complete -c s3pd", ""},
		{[]string{"completion", "powershell"}, 0, "Register-ArgumentCompleter", ""},
		{[]string{"help", "get"}, 0, "Download an object or every object", ""},
		{[]string{"__complete", "get", "--no-res"}, 0, "--no-resume", ""},
		{[]string{"cp", "--help"}, 0, "Copy a file", ""},
		{[]string{"gte", "s3://b/k", "d"}, 2, "", "did you mean get?"},
		{[]string{"sync", "s3://b/p/", "d"}, 2, "", `"s3pd get s3://b/p/ d" fetches what is new or changed and skips what DEST already has, as aws s3 sync does; add --delete`},
		{[]string{"download", "s3://b/p/", "d"}, 2, "", `s3pd has no download command: "s3pd get s3://b/p/ d" downloads`},
		{[]string{"download", "org/model"}, 2, "", `"s3pd get s3://BUCKET/PREFIX/ DEST" downloads`},
		{[]string{"get", "--region", "s3://b/data/", "./x"}, 2, "", "--region took s3://b/data/ as its value: give --region a value of its own"},
		{[]string{"s3://b/data/", "./x", "--endpoint-url"}, 2, "", ""},
		{[]string{"get", "--preset", "p4d.24xlarge", "s3://bucket/p/", "d"}, 2, "", "preset p4d.24xlarge sets nics en0,en1,en2,en3, which this machine cannot use (en0: unknown interface"},
		{[]string{"raid-setup", "--devices", "/dev/vda", "--mount", "/abs", "--dry-run"}, 2, "", "plan: one device (/dev/vda): striping needs at least 2"},
		{[]string{"version"}, 2, "", `"s3pd --version" prints it`},
		{[]string{"presign", "s3://b/k"}, 2, "", "aws s3 presign"},
		{[]string{"mb", "s3://b/x"}, 2, "", "neither makes nor removes buckets"},
		{[]string{"get", "--concurrency", "64", "s3://b/p/", "d"}, 2, "", "unknown flag: --concurrency: s3pd writes --max-concurrent-requests"},
		{[]string{"cp", "--numworkers", "8", "s3://b/p/", "d"}, 2, "", "unknown flag: --numworkers: s3pd writes --workers"},
		{[]string{"get", "--local-dir", "x", "s3://b/p/"}, 2, "", "DEST, the second argument"},
		{[]string{"./a", "./b"}, 2, "", "s3pd copy SRC DEST"},
		{[]string{"get", "--worker", "3", "s3://b/k", "d"}, 2, "", "did you mean --workers?"},
		{[]string{"frob"}, 2, "", "s3pd --help"},
		{[]string{"config", "list"}, 2, "", `unknown command "list" for "s3pd config": did you mean "s3pd config show"?`},
		{[]string{"config", "file"}, 2, "", `did you mean "s3pd config show"?`},
		{[]string{"config"}, 0, "Inspect s3pd's configuration", ""},
		{[]string{"shards", "frob"}, 2, "", `unknown command "frob" for "s3pd shards"`},
		{[]string{"sync", "./a", "s3://b/a/"}, 2, "", `"s3pd copy ./a s3://b/a/" copies what is new or changed`},
		{[]string{"mv", "s3://b/k", "d"}, 2, "", `s3pd has no mv command: "s3pd copy s3://b/k d" copies`},
		{[]string{"rm", "s3://b/k"}, 2, "", "s3pd has no rm command"},
		{[]string{"get", "--partsize", "16M", "s3://bucket/p/", "d"}, 2, "", "did you mean 16MiB?"},
		{[]string{"bench", "disk", "--partsize", "16M", "."}, 2, "", "--partsize: invalid size \"16M\""},
		{[]string{"bench", "disk", "--network-rate", "12.5GB", "."}, 2, "", "want a rate such as 100Gb/s"},
		{[]string{"bench", "serve", "--dataset", "x:1:16M"}, 2, "", "did you mean 16MiB?"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Execute(context.Background(), &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, "test", tt.args)
			if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errOut.String(), tt.stderr) {
				t.Errorf("exit %d, want %d; stdout %.200q (want %q); stderr %q (want %q)", code, tt.code, out.String(), tt.stdout, errOut.String(), tt.stderr)
			}
			if n := strings.Count(strings.TrimSpace(errOut.String()), "\n"); tt.code != 0 && n > 0 {
				t.Errorf("stderr has %d lines, want one: %q", n+1, errOut.String())
			}
		})
	}
}

func TestResolveVersion(t *testing.T) {
	info := func(v string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Path: "github.com/s3pd/s3pd", Version: v}}, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	vcs := func(rev, modified string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Path: "github.com/s3pd/s3pd", Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}}, true
		}
	}
	tests := []struct {
		ldflags string
		info    func() (*debug.BuildInfo, bool)
		want    string
	}{
		{"1.4.0", info("v9.9.9"), "1.4.0"},
		{"", info("v1.2.3"), "v1.2.3"},
		{"dev", info("v1.2.3"), "v1.2.3"},
		{"", info("(devel)"), "dev"},
		{"", none, "dev"},
		{"", vcs("0123456789abcdef0123", "false"), "dev-0123456789ab"},
		{"dev", vcs("0123456789abcdef0123", "true"), "dev-0123456789ab-dirty"},
		{"", vcs("", "true"), "dev"},
		{"1.4.0", vcs("0123456789abcdef0123", "true"), "1.4.0"},
	}
	for _, tt := range tests {
		if got := resolveVersion(tt.ldflags, tt.info); got != tt.want {
			t.Errorf("resolveVersion(%q): got %q, want %q", tt.ldflags, got, tt.want)
		}
	}
}

// TestHelpShowsOneDefault: no flag's help line says two defaults (its
// usage text giving one and pflag adding another).
func TestHelpShowsOneDefault(t *testing.T) {
	root := NewCmdRoot(&Factory{IO: &IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, l := range strings.Split(c.LocalFlags().FlagUsages(), "\n") {
			if strings.Count(l, "(default") > 1 {
				t.Errorf("%s: %s", c.CommandPath(), strings.TrimSpace(l))
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// TestManPages: the hidden man command writes one page per command.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := Execute(context.Background(), &IOStreams{Out: &out, ErrOut: &errOut}, "1.0.0", []string{"man", dir}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, page := range []string{"s3pd.1", "s3pd-get.1", "s3pd-copy.1", "s3pd-ls.1", "s3pd-du.1", "s3pd-cat.1"} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil {
			t.Errorf("%s: %v", page, err)
			continue
		}
		if !bytes.HasPrefix(b, []byte(".nh\n.TH")) && !bytes.Contains(b, []byte(".TH \"S3PD\"")) {
			t.Errorf("%s is not a man page: %.80q", page, b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "s3pd-get.1")); !bytes.Contains(b, []byte("no-clobber")) {
		t.Error("s3pd-get.1 does not list get's flags")
	}
	if _, err := os.Stat(filepath.Join(dir, "s3pd-man.1")); err == nil {
		t.Error("the hidden man command has a page of its own")
	}
}

// TestEveryCommandHasExamples: every visible command's --help shows
// examples, each a command line of s3pd.
func TestEveryCommandHasExamples(t *testing.T) {
	root := NewCmdRoot(&Factory{IO: &IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		if c.Example == "" {
			t.Errorf("%s: no examples", c.CommandPath())
		}
		for _, l := range strings.Split(c.Example, "\n") {
			l = strings.TrimPrefix(strings.TrimSpace(l), "sudo ")
			if l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "s3pd ") {
				t.Errorf("%s: example %q is not an s3pd command line", c.CommandPath(), l)
			}
			for _, w := range strings.Fields(l) {
				if strings.HasPrefix(w, "s3://") && strings.ContainsAny(w, "*?") {
					t.Errorf("%s: example %q leaves %s to the shell: quote it", c.CommandPath(), l, w)
				}
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// TestErrorLineFollowsTheRoute: once a run has opened where its JSON
// lines go, the error line of a run that fails before any transfer goes
// there too, --json-file included, and the human line to stderr.
func TestErrorLineFollowsTheRoute(t *testing.T) {
	copyEnv(t)
	lines := filepath.Join(t.TempDir(), "lines.json")
	var out, errOut bytes.Buffer
	code := Execute(context.Background(), &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, "test",
		[]string{"get", "--json-file", lines, "--log-level", "loud", "s3://bucket/k", t.TempDir()})
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d; stderr %q", code, ExitUsage, errOut.String())
	}
	b, err := os.ReadFile(lines)
	if err != nil || !strings.Contains(string(b), `"type":"error"`) || !strings.Contains(string(b), "loud") {
		t.Errorf("--json-file holds %q (%v), want the error line; stderr %q", b, err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "s3pd: ") || out.Len() != 0 {
		t.Errorf("stdout %q, stderr %q; want only the error line on stderr", out.String(), errOut.String())
	}
}
