package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportRules holds the dependency rules of docs/ARCHITECTURE.md:
// nothing imports cmd; only cmd uses cobra, viper, zap and the progress
// bar; the engine depends on nothing of s3pd but the checksum math; and
// adapters depend on the engine, never the reverse.
func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/s3pd/s3pd/"
	edgeOnly := []string{"github.com/spf13/cobra", "github.com/spf13/viper", "go.uber.org/zap", "github.com/schollz/progressbar"}
	allowedForEngine := map[string]bool{mod + "pkg/checksum": true}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := strings.TrimPrefix(fields[0], mod), fields[1:]
		for _, imp := range imports {
			if imp == mod+"cmd" && pkg != "github.com/s3pd/s3pd" {
				t.Errorf("%s imports cmd: nothing but main may", pkg)
			}
			for _, edge := range edgeOnly {
				if strings.HasPrefix(imp, edge) && pkg != "cmd" {
					t.Errorf("%s imports %s: only cmd may", pkg, imp)
				}
			}
			if pkg == "pkg/transfer" && strings.HasPrefix(imp, mod) && !allowedForEngine[imp] {
				t.Errorf("the engine imports %s: it may import only the checksum math", imp)
			}
			if pkg == "pkg/transfer" && (strings.Contains(imp, "aws-sdk-go") || strings.Contains(imp, "gofakes3")) {
				t.Errorf("the engine imports %s: S3 belongs to the adapters", imp)
			}
			if strings.HasPrefix(pkg, "pkg/") && strings.HasPrefix(imp, mod+"internal/") {
				t.Errorf("%s imports %s: internal/ holds test harnesses and references only", pkg, imp)
			}
		}
	}
}
