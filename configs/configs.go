// Package configs holds s3pd's ready presets (`--preset NAME`), one YAML
// file per machine, embedded in the binary. A preset uses the same keys as
// the s3pd config file's top level; see docs/CONFIG.md.
package configs

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.yaml
var files embed.FS

// Names returns the presets' names (file names without .yaml), sorted.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// Read returns the YAML of the preset called name.
func Read(name string) ([]byte, error) {
	if name == "" || strings.ContainsAny(name, "/\\") {
		return nil, fmt.Errorf("read preset %q: no such preset (have %s)", name, strings.Join(Names(), ", "))
	}
	b, err := files.ReadFile(name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("read preset %q: no such preset (have %s)", name, strings.Join(Names(), ", "))
	}
	return b, nil
}
