package cmd

import "runtime/debug"

// resolveVersion is the version s3pd reports: the one set by ldflags
// (release builds), else the module's from the build info (`go install
// github.com/s3pd/s3pd@v1.2.3` reports v1.2.3), else "dev".
func resolveVersion(ldflags string, info func() (*debug.BuildInfo, bool)) string {
	if ldflags != "" && ldflags != "dev" {
		return ldflags
	}
	if bi, ok := info(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
