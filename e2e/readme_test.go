package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// readmeCommands returns the s3pd command lines of README.md: every line
// of a sh block that runs s3pd, and every inline code span that is a
// whole command (it names an s3:// URL, a flag, a local path or a
// redirection, and no placeholder such as DEST or [...]).
func readmeCommands(t *testing.T) []string {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	inBlock := false
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			inBlock = !inBlock && strings.TrimPrefix(l, "```") == "sh"
		case inBlock:
			if i := strings.Index(l, "s3pd "); i >= 0 && !strings.HasPrefix(strings.TrimSpace(l), "#") {
				cmds = append(cmds, strings.TrimPrefix(l[i:], "./"))
			}
		}
	}
	span := regexp.MustCompile("`(s3pd [^`]+)`")
	placeholder := regexp.MustCompile(`\b(DEST|SRC|DST)\b|\[|[^ ]\|[^ ]`)
	for _, m := range span.FindAllStringSubmatch(strings.ReplaceAll(string(b), "\n", " "), -1) {
		c := m[1]
		runnable := strings.Contains(c, "s3://") || strings.Contains(c, " --") || strings.Contains(c, "./") || strings.Contains(c, " > ")
		if runnable && !placeholder.MatchString(c) {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// rewrite points a README command at the emulator: every bucket becomes
// the emulator's, its endpoint flags follow the subcommand, absolute
// paths move under root, a command with --nics (cards of a larger
// machine) runs as a dry run, with its --nics, and bench without a URL
// gets a small dataset.
func rewrite(c, endpoint, bucket, root string) string {
	words := strings.Fields(c)
	var out []string
	nics := false
	for i := 0; i < len(words); i++ {
		w := words[i]
		w = strings.NewReplacer("s3://my-bucket", "s3://"+bucket, "s3://bucket/", "s3://"+bucket+"/").Replace(w)
		switch {
		case w == "--nics":
			// The cards are a larger machine's: the command runs as a
			// dry run, which plans without them.
			nics = true
		case strings.HasPrefix(w, "/"):
			w = filepath.Join(root, w)
		}
		out = append(out, w)
	}
	at := 1 // after "s3pd", or after its subcommand
	if len(out) > 1 && !strings.HasPrefix(out[1], "-") && !strings.HasPrefix(out[1], "s3://") {
		at = 2
	}
	var extra []string
	switch {
	case strings.Contains(c, "s3://"):
		extra = []string{"--endpoint-url", endpoint, "--no-sign-request", "--region", "us-east-1", "--quiet"}
	case len(out) > 1 && out[1] == "bench":
		extra = []string{"--dataset", "model:2:4MiB,small:16:64KiB", "--quiet"}
	}
	if nics {
		extra = append(extra, "--dry-run")
	}
	out = append(out[:at], append(extra, out[at:]...)...)
	return strings.Join(out, " ")
}

// TestReadmeQuotesWildcards: a README line with "*" or "?" in a URL
// quotes it, or zsh (and bash with a matching file) would expand it.
func TestReadmeQuotesWildcards(t *testing.T) {
	for _, c := range readmeCommands(t) {
		for _, w := range strings.Fields(c) {
			if strings.HasPrefix(w, "s3://") && strings.ContainsAny(w, "*?") {
				t.Errorf("README: %s: quote %s ('%s')", c, w, w)
			}
		}
	}
}

// TestReadmeExamples runs every s3pd command line of README.md, in order
// and in one working directory, against the emulator.
func TestReadmeExamples(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	tw.WriteHeader(&tar.Header{Name: "hello.txt", Mode: 0o644, Size: 5})
	tw.Write([]byte("hello"))
	tw.Close()
	for k, v := range map[string][]byte{
		"deepseek-v3-0324/model-00001-of-00002.safetensors": randomBytes(101, 3*mib),
		"deepseek-v3-0324/model-00002-of-00002.safetensors": randomBytes(102, 1*mib),
		"deepseek-v3-0324/config.json":                      []byte(`{"model":"x"}`),
		"data/a":                                            randomBytes(103, 1000),
		"data/sub/b":                                        randomBytes(104, 2000),
		"x.tar":                                             tarball.Bytes(),
		"2GiB/part0":                                        randomBytes(105, 2*mib),
		"prefix/a":                                          []byte("a"),
		"key":                                               []byte("k"),
	} {
		s.put(t, k, v)
	}
	cwd, home := t.TempDir(), t.TempDir()
	writeTree(t, cwd, map[string][]byte{"a/f": []byte("local")})
	cmds := readmeCommands(t)
	if len(cmds) < 10 {
		t.Fatalf("found %d commands in README.md, want at least 10: %q", len(cmds), cmds)
	}
	env := append(baseEnv(t), "HOME="+home, "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
	for _, c := range cmds {
		line := rewrite(c, s.endpoint, s.bucket, cwd)
		// A redirection's directory exists, as it would on a user's machine.
		if _, target, ok := strings.Cut(line, " > "); ok {
			os.MkdirAll(filepath.Dir(strings.Replace(strings.Fields(target)[0], "~", home, 1)), 0o755)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", line)
		cmd.Dir, cmd.Env = cwd, env
		// A pipe for the command that reads standard input (its producer,
		// left of the "|", is not run): /dev/null would be refused.
		cmd.Stdin = strings.NewReader("piped\n")
		out, err := cmd.CombinedOutput()
		cancel()
		t.Logf("%s", line)
		if err != nil {
			t.Errorf("README: %s\nran: %s\n%v\n%s", c, line, err, out)
		}
	}
	// What the pipe and the wildcard examples should have left.
	if b, err := os.ReadFile(filepath.Join(cwd, "hello.txt")); err != nil || string(b) != "hello" {
		t.Errorf("get x.tar - | tar x: hello.txt %q, %v", b, err)
	}
	got := tree(t, filepath.Join(cwd, "weights"))
	if len(got) != 2 {
		t.Errorf("get .../*.safetensors ./weights: got %v, want the two .safetensors files", got)
	}
}
