package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNamesMatchFiles(t *testing.T) {
	paths, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range paths {
		want = append(want, strings.TrimSuffix(p, ".yaml"))
	}
	if got := strings.Join(Names(), ","); got != strings.Join(want, ",") {
		t.Errorf("Names() = %s, want %s", got, strings.Join(want, ","))
	}
	for _, need := range []string{"default", "m5n.24xlarge", "m6in.32xlarge", "dl1.24xlarge", "p4d.24xlarge"} {
		if !strings.Contains(","+strings.Join(Names(), ",")+",", ","+need+",") {
			t.Errorf("preset %s missing", need)
		}
	}
}

func TestRead(t *testing.T) {
	for _, name := range Names() {
		got, err := Read(name)
		if err != nil {
			t.Fatalf("Read(%s): %v", name, err)
		}
		want, err := os.ReadFile(name + ".yaml")
		if err != nil || string(got) != string(want) {
			t.Errorf("Read(%s) differs from the file (%v)", name, err)
		}
	}
	for _, bad := range []string{"", "nope", "../go", "default.yaml"} {
		if _, err := Read(bad); err == nil || !strings.Contains(err.Error(), "no such preset") {
			t.Errorf("Read(%q) = %v, want no such preset", bad, err)
		}
	}
}
