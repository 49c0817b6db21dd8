package cmd

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// flagValues are a value each of get's flag types takes, by the type's
// name (settings take any string: their loader checks them later).
var flagValues = map[string]string{
	"bool": "true", "string": "v1", "int": "3", "duration": "7s", "size": "16MiB", "rate": "100MB",
	"path": "/nonexistent/ca.pem", "url": "http://127.0.0.1:9", "pattern": "*.bin", "list": "eth0",
	"debug|info|warn|error": "debug",
}

// getFlags are the flags of the real get command.
func getFlags(t *testing.T) []*pflag.Flag {
	t.Helper()
	var out []*pflag.Flag
	NewCmdGet(optionsFactory(), nil).Flags().VisitAll(func(f *pflag.Flag) { out = append(out, f) })
	if len(out) < 40 {
		t.Fatalf("get has %d flags, want the ~60 there are", len(out))
	}
	return out
}

// flagArg is --NAME=VALUE with a value f's type takes.
func flagArg(t *testing.T, f *pflag.Flag) string {
	t.Helper()
	v, ok := flagValues[f.Value.Type()]
	if !ok {
		t.Fatalf("--%s: no value for its type %q: add one to flagValues", f.Name, f.Value.Type())
	}
	return "--" + f.Name + "=" + v
}

// parseCopy parses `copy args...` and returns the options runCopy gets.
func parseCopy(t *testing.T, args ...string) *copyOptions {
	t.Helper()
	var got *copyOptions
	if err := parse(t, NewCmdCopy(optionsFactory(), func(_ context.Context, o *copyOptions) error { got = o; return nil }), args...); err != nil {
		t.Fatalf("copy %s: %v", strings.Join(args, " "), err)
	}
	return got
}

// TestCopyToLocalHasEveryGetFlag walks get's flags: copy from S3 to a
// local folder (and a --benchmark of S3) defines each with get's type
// and default, accepts it, routes the run to get, and hands get options
// equal to those get itself parses from the same command line.
func TestCopyToLocalHasEveryGetFlag(t *testing.T) {
	copyFlags := NewCmdCopy(optionsFactory(), nil).Flags()
	for _, gf := range getFlags(t) {
		t.Run(gf.Name, func(t *testing.T) {
			cf := copyFlags.Lookup(gf.Name)
			if cf == nil {
				t.Fatalf("copy does not define --%s", gf.Name)
			}
			if cf.Value.Type() != gf.Value.Type() || cf.DefValue != gf.DefValue || cf.Shorthand != gf.Shorthand || cf.NoOptDefVal != gf.NoOptDefVal || cf.Hidden != gf.Hidden {
				t.Errorf("copy --%s: type %s, default %q, shorthand %q, no-value %q, hidden %v; get's: %s, %q, %q, %q, %v",
					gf.Name, cf.Value.Type(), cf.DefValue, cf.Shorthand, cf.NoOptDefVal, cf.Hidden,
					gf.Value.Type(), gf.DefValue, gf.Shorthand, gf.NoOptDefVal, gf.Hidden)
			}
			for _, args := range [][]string{{flagArg(t, gf), "s3://bkt/p/", "out"}, {"--benchmark", flagArg(t, gf), "s3://bkt/p/"}} {
				var g *getOptions
				if err := parse(t, NewCmdGet(optionsFactory(), func(_ context.Context, o *getOptions) error { g = o; return nil }), args...); err != nil {
					t.Fatalf("get %s: %v", strings.Join(args, " "), err)
				}
				c := parseCopy(t, args...)
				if _, err := c.check(); err != nil {
					t.Errorf("copy %s refused: %v", strings.Join(args, " "), err)
				}
				if _, err := c.checkStdin(); err != nil {
					t.Errorf("copy %s refused: %v", strings.Join(args, " "), err)
				}
				if !c.download() {
					t.Errorf("copy %s does not run as get", strings.Join(args, " "))
				}
				cv, gv := c.flags.Lookup(gf.Name), g.flags.Lookup(gf.Name)
				if !cv.Changed || cv.Value.String() != gv.Value.String() {
					t.Errorf("copy %s: --%s changed %v, %q; get's %q", strings.Join(args, " "), gf.Name, cv.Changed, cv.Value, gv.Value)
				}
				co := c.getOptions
				co.flags, g.flags = nil, nil
				if !reflect.DeepEqual(co, *g) {
					t.Errorf("copy %s hands get\n%+v\nget parses\n%+v", strings.Join(args, " "), co, *g)
				}
			}
		})
	}
}

// TestCopyRefusesDownloadFlagsElsewhere: the flags of get that only a
// download has are refused on copy's other routes, each with one line
// naming the flag and the route; get's other flags are not.
func TestCopyRefusesDownloadFlagsElsewhere(t *testing.T) {
	routes := []struct{ name, src, dst string }{
		{"local to local", "in", "out"},
		{"local to S3", "in", "s3://bkt/p/"},
		{"S3 to S3", "s3://bkt/a/", "s3://bkt/b/"},
		{"standard input to S3", "-", "s3://bkt/k"},
		{"a --benchmark of local files", "in", ""},
	}
	var only []string
	for _, gf := range getFlags(t) {
		if downloadOnly(gf) {
			only = append(only, gf.Name)
		}
		for _, r := range routes {
			args := []string{flagArg(t, gf), r.src, r.dst}
			if r.dst == "" {
				args = []string{"--benchmark", flagArg(t, gf), r.src}
			}
			_, err := parseCopy(t, args...).check()
			refused := err != nil && strings.Contains(err.Error(), "--"+gf.Name+" applies to copies from S3 to local files (as get), not "+r.name)
			if refused != downloadOnly(gf) || refused && exitCode(err) != ExitUsage {
				t.Errorf("copy %s: error %v (exit %d); download only: %v", strings.Join(args, " "), err, exitCode(err), downloadOnly(gf))
			}
		}
	}
	want := []string{"checksum", "conflict-suffix", "fleet", "fleet-ca", "fleet-linger", "fleet-port", "fleet-tls-cert", "fleet-tls-key", "fleet-token-file", "fleet-trust-peers",
		"input-file", "interval", "no-resume", "no-space-check", "peers", "report", "verify-existing", "version-id"}
	if !reflect.DeepEqual(only, want) {
		t.Errorf("get's download-only flags: %v, want %v", only, want)
	}
}
