package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestEnumFlagsComplete: Tab after every flag that takes one of a few
// words offers those words, on every command that has the flag, and no
// file names.
func TestEnumFlagsComplete(t *testing.T) {
	home := t.TempDir()
	saved := filepath.Join(home, ".config", "s3pd", "presets")
	if err := os.MkdirAll(saved, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(saved, "mine.yaml"), []byte("workers: 8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"log-level":                 {"debug", "info", "warn", "error"},
		"log-format":                {"console", "json"},
		"addressing-style":          {"auto", "path", "virtual"},
		"preferred-transfer-client": {"auto", "crt", "classic"},
		"verify":                    {"auto", "full", "require", "off"},
		"adaptive":                  {"on", "off"},
		"preset":                    {"default", "dl1.24xlarge", "m5n.24xlarge", "m6in.32xlarge", "p4d.24xlarge", "mine"},
		"request-payer":             {"requester"},
		"checksum-algorithm":        {"CRC64NVME", "CRC32C"},
		"sse":                       {"AES256", "aws:kms", "aws:kms:dsse"},
		"storage-class":             storageClasses,
		"fs":                        {"xfs", "ext4"},
		"engine":                    {"md", "btrfs"},
		"backend":                   {"synthetic", "memory", "discard"},
	}
	getenv := func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	root := NewCmdRoot(&Factory{IO: &IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, Getenv: getenv})
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			values, ok := want[fl.Name]
			if !ok {
				return
			}
			seen[fl.Name] = true
			path := strings.Fields(c.CommandPath())[1:]
			args := append(append([]string{"__complete"}, path...), "--"+fl.Name, "")
			var out bytes.Buffer
			r := NewCmdRoot(&Factory{IO: &IOStreams{Out: &out, ErrOut: &bytes.Buffer{}}, Getenv: getenv})
			r.SetArgs(args)
			if err := r.ExecuteContext(context.Background()); err != nil {
				t.Fatalf("%q: %v", args, err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			got, directive := lines[:len(lines)-1], lines[len(lines)-1]
			if !slices.Equal(got, values) || directive != ":4" {
				t.Errorf("%s --%s <Tab>: got %q, directive %s; want %q, :4 (no files)", c.CommandPath(), fl.Name, got, directive, values)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for name := range want {
		if !seen[name] {
			t.Errorf("no command has --%s", name)
		}
	}
}

// TestEnumFlagsRefuseOtherValues: a value that is none of an enum flag's
// words is a usage error (exit 2) in one line naming the flag, found
// before any request (nothing listens at the endpoint).
func TestEnumFlagsRefuseOtherValues(t *testing.T) {
	copyEnv(t)
	src := t.TempDir()
	off := []string{"--endpoint-url", "http://127.0.0.1:1", "--region", "us-east-1", "--no-sign-request"}
	get := func(flag string) []string {
		return append(append([]string{"get", "--" + flag, "bogus"}, off...), "s3://bucket/p/", t.TempDir())
	}
	upload := func(flag string) []string {
		return append(append([]string{"copy", "--" + flag, "bogus"}, off...), src, "s3://bucket/p/")
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{get("verify"), "--verify"},
		{get("adaptive"), "--adaptive"},
		{get("log-level"), "log_level"},
		{get("log-format"), "log_format"},
		{get("addressing-style"), "addressing_style"},
		{get("preferred-transfer-client"), "preferred_transfer_client"},
		{get("preset"), "preset"},
		{get("request-payer"), "--request-payer"},
		{upload("storage-class"), "--storage-class"},
		{upload("checksum-algorithm"), "--checksum-algorithm"},
		{upload("sse"), "--sse"},
		{upload("adaptive"), "--adaptive"},
		{append(append([]string{"cat", "--verify", "bogus"}, off...), "s3://bucket/k"), "--verify"},
		{[]string{"bench", "--adaptive", "bogus"}, "--adaptive"},
		{[]string{"bench", "serve", "--backend", "bogus", "--listen", "127.0.0.1:0"}, "backend"},
		{[]string{"raid-setup", "--engine", "bogus", "--devices", "/dev/null", "--mount", "/x"}, "engine"},
		{[]string{"raid-setup", "--fs", "bogus", "--devices", "/dev/null", "--mount", "/x"}, "filesystem"},
	} {
		var out, errOut bytes.Buffer
		code := Execute(context.Background(), &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, "test", tt.args)
		line := strings.TrimSpace(errOut.String())
		if code != ExitUsage || strings.Contains(line, "\n") || !strings.Contains(line, tt.want) || !strings.Contains(line, "bogus") {
			t.Errorf("%q: exit %d, stderr %q; want %d and one line naming %s", tt.args, code, errOut.String(), ExitUsage, tt.want)
		}
	}
}
