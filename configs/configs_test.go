package configs

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// templateVars are the ${NAME} values a job template uses.
var templateVars = regexp.MustCompile(`\$\{([A-Z_]+)\}`)

// TestJobTemplates checks that every job template under slurm/ and k8s/
// says in its header how to fill each of its ${NAME} values: a
// NAME=... in the example, and, for a template whose envsubst names
// the values to fill (a batch script, whose own $VARIABLES must stay),
// exactly those.
func TestJobTemplates(t *testing.T) {
	var paths []string
	for _, g := range []string{"slurm/*.sbatch", "k8s/*.yaml"} {
		got, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, got...)
	}
	for _, need := range []string{"slurm/pull-array.sbatch", "slurm/fleet.sbatch", "k8s/indexed-job.yaml", "k8s/fleet-job.yaml"} {
		if !slices.Contains(paths, need) {
			t.Errorf("template %s missing", need)
		}
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(b)
		used := map[string]bool{}
		for _, m := range templateVars.FindAllStringSubmatch(doc, -1) {
			used[m[1]] = true
		}
		if len(used) == 0 {
			t.Errorf("%s: no ${NAME} values", p)
		}
		var header []string
		for _, line := range strings.Split(doc, "\n") {
			if strings.HasPrefix(line, "#") {
				header = append(header, line)
			}
		}
		head := strings.Join(header, "\n")
		for name := range used {
			if !regexp.MustCompile(`(^|[\s#])` + name + `=`).MatchString(head) {
				t.Errorf("%s: the header's example does not set %s", p, name)
			}
		}
		list := regexp.MustCompile(`envsubst '([^']*)'`).FindStringSubmatch(doc)
		if strings.HasSuffix(p, ".sbatch") && list == nil {
			t.Errorf("%s: a batch script's envsubst must name its values (it has $VARIABLES of its own)", p)
		}
		if list != nil {
			named := map[string]bool{}
			for _, f := range strings.Fields(list[1]) {
				named[strings.TrimPrefix(f, "$")] = true
			}
			if !maps.Equal(named, used) {
				t.Errorf("%s: envsubst names %v, the template uses %v", p, slices.Sorted(maps.Keys(named)), slices.Sorted(maps.Keys(used)))
			}
			continue
		}
		// envsubst with no list fills every $NAME: outside comments, every
		// one must be a ${NAME} of the template.
		for i, line := range strings.Split(doc, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if bare := regexp.MustCompile(`\$[A-Za-z_]`).FindString(line); bare != "" {
				t.Errorf("%s:%d: %q would be filled by envsubst", p, i+1, bare)
			}
		}
	}
}
