package cmd

import (
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/config"
)

func TestReportSettingsHideCredentials(t *testing.T) {
	s := config.Defaults()
	s.EndpointURL = "https://AKIDEXAMPLE:wJalrXUtnFEMI@minio.example:9000/"
	for _, st := range redactedSettings(s, nil) {
		if strings.Contains(st.Value, "wJalrXUtnFEMI") || strings.Contains(st.Value, "AKIDEXAMPLE") {
			t.Errorf("setting %s shows %q: want credentials redacted", st.Name, st.Value)
		}
		if st.Name == "endpoint_url" && !strings.Contains(st.Value, "minio.example:9000") {
			t.Errorf("endpoint_url shows %q: want the host kept", st.Value)
		}
	}
}

func TestReportFlagsRefuseDest(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		path, dest string
		ok         bool
	}{
		{dir + "/r.html", dir + "/out", true},
		{dir + "/out/r.html", dir + "/out", false},
		{dir + "/out/a/b/r.html", dir + "/out/", false},
		{dir + "/output.html", dir + "/out", true},
		{dir, "", false},                    // a directory
		{dir + "/missing/r.html", "", true}, // created on the way, like DEST
	}
	for _, tt := range tests {
		r := reportFlags{path: tt.path, interval: 1}
		err := r.check(tt.dest)
		if (err == nil) != tt.ok {
			t.Errorf("--report %s with DEST %q: %v, want ok=%v", tt.path, tt.dest, err, tt.ok)
		}
		if err != nil && exitCode(err) != ExitUsage {
			t.Errorf("--report %s: exit %d, want %d", tt.path, exitCode(err), ExitUsage)
		}
	}
}
