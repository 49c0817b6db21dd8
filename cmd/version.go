package cmd

import "runtime/debug"

// resolveVersion is the version s3pd reports: the one set by ldflags
// (release builds), else the module's from the build info (`go install
// github.com/s3pd/s3pd@v1.2.3` reports v1.2.3), else the commit the
// build info records (`go build` in a clone: "dev-0123456789ab", with
// "-dirty" when the tree had changes), else "dev".
func resolveVersion(ldflags string, info func() (*debug.BuildInfo, bool)) string {
	if ldflags != "" && ldflags != "dev" {
		return ldflags
	}
	bi, ok := info()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var revision, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if revision == "" {
		return "dev"
	}
	v := "dev-" + revision[:min(len(revision), 12)]
	if modified == "true" {
		v += "-dirty"
	}
	return v
}
