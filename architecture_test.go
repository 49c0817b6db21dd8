package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// layers are the layers of docs/ARCHITECTURE.md: the s3pd packages each
// package may import. A package not named here follows only the general
// rules of TestImportRules.
var layers = map[string][]string{
	// Stand alone: nothing of s3pd.
	"pkg/checksum": nil, "pkg/s3emu": nil, "pkg/nics": nil, "pkg/config": nil, "pkg/raid": nil, "pkg/diskbench": nil,
	// The engine: only the checksum math, no adapter.
	"pkg/transfer": {"pkg/checksum"},
	// The stores' contract: openers, the registry, capabilities; of
	// s3pd only the engine's types.
	"pkg/store": {"pkg/transfer"},
	// Adapters and listers: the engine (a store also the stores'
	// contract), never each other.
	"pkg/s3store":               {"pkg/transfer", "pkg/checksum", "pkg/store"},
	"pkg/local":                 {"pkg/transfer", "pkg/checksum", "pkg/store"},
	"pkg/httpstore":             {"pkg/transfer", "pkg/store"},
	"pkg/sink":                  {"pkg/transfer", "pkg/checksum"},
	"pkg/manifest":              {"pkg/transfer"},
	"pkg/shard":                 {"pkg/transfer"},
	"pkg/extsort":               {"pkg/transfer"},
	"pkg/transfer/transfertest": {"pkg/transfer", "pkg/checksum"},
	// A fleet decorates a lane's source with its peers and splits the
	// listing as --shard does (and reads ETags with the checksum math,
	// to know what vouches for a peer's bytes); it knows no store.
	"pkg/fleet": {"pkg/transfer", "pkg/shard", "pkg/checksum"},
	// Readers of a run's outcome.
	"pkg/report": {"pkg/transfer", "pkg/config"},
	"pkg/sweep":  {"pkg/transfer", "pkg/config"},
	// The job: what to transfer and where, from the stores' contract
	// (never a store's own package: it finds sources and destinations
	// through the registry cmd builds), the engine, its sinks and the
	// listers; no command line and no configuration (cmd turns settings
	// into the job's specs).
	"internal/job": {"pkg/transfer", "pkg/store", "pkg/sink", "pkg/manifest", "pkg/shard", "pkg/extsort", "pkg/fleet"},
	// The edge: flags, settings, rendering and exit codes over the job;
	// the packages of the commands that are their own domain (raid-setup,
	// bench disk, bench serve, nics and the cards a run binds to); the
	// readers of a run's outcome; the embedded presets; of the engine
	// only the types in cmdTransferNames. The stores: their contract and
	// registry (cmd/stores.go, one line per store), and their own small
	// types for flags, checks and messages, and S3's commands without a
	// transfer (ls, du); the listers' for --shard and --manifest. Never
	// a sink: building a run is the job's.
	"cmd": {"internal/job", "pkg/config", "pkg/report", "pkg/sweep",
		"pkg/raid", "pkg/diskbench", "pkg/s3emu", "pkg/nics", "configs", "pkg/transfer",
		"pkg/store", "pkg/s3store", "pkg/local", "pkg/httpstore", "pkg/shard", "pkg/manifest", "pkg/extsort", "pkg/fleet"},
}

// cmdTransferNames are the names of pkg/transfer that cmd may use: the
// options a command sets, the summary and observer types it renders, and
// the kinds of error it turns into exit and error codes. Building and
// running the engine (New, Lane, Sink, Lister) is the job's.
var cmdTransferNames = []string{
	// Options.
	"Options", "Verify", "VerifyAuto", "VerifyFull", "VerifyOff", "VerifyRequire", "Adaptive", "AdaptiveOn", "AdaptiveOff", "Rules", "Rule",
	// Summary.
	"Summary", "Sample", "Result", "Verification", "UnverifiedNoChecksum", "UnverifiedMD5Only", "UnverifiedComposite", "UnverifiedPartsOnly", "UnverifiedLookupFailed",
	"DryRunReason", "WindowKnee", "WindowChange",
	// The adaptive window's rule, in words (flag help).
	"AdaptiveRule",
	// Observer.
	"Observer", "ListObserver", "Object",
	// Error kinds.
	"ErrChecksum", "ErrModified", "ErrNotFound", "ErrUnaccounted", "BadResponseError", "ShortBodyError",
}

// TestImportRules holds the dependency rules of docs/ARCHITECTURE.md:
// nothing imports cmd; only cmd uses cobra, viper, zap and the progress
// bar (so neither the job nor the engine does), but for pkg/config, which
// reads presets and config files with viper; the engine depends on
// nothing of s3pd but the checksum math, and on no adapter; adapters
// depend on the engine, never on each other; s3emu, nics, config and raid
// stand alone; pkg/ imports nothing of internal/.
func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/s3pd/s3pd/"
	edgeOnly := []string{"github.com/spf13/cobra", "github.com/spf13/viper", "go.uber.org/zap", "github.com/schollz/progressbar"}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := strings.TrimPrefix(fields[0], mod), fields[1:]
		seen[pkg] = true
		allowed, layered := layers[pkg]
		for _, imp := range imports {
			if imp == mod+"cmd" && pkg != "github.com/s3pd/s3pd" {
				t.Errorf("%s imports cmd: nothing but main may", pkg)
			}
			for _, edge := range edgeOnly {
				viperInConfig := pkg == "pkg/config" && edge == "github.com/spf13/viper"
				if strings.HasPrefix(imp, edge) && pkg != "cmd" && !viperInConfig {
					t.Errorf("%s imports %s: only cmd may (and pkg/config viper, to read files)", pkg, imp)
				}
			}
			if pkg == "pkg/transfer" && (strings.Contains(imp, "aws-sdk-go") || strings.Contains(imp, "gofakes3")) {
				t.Errorf("the engine imports %s: S3 belongs to the adapters", imp)
			}
			if strings.HasPrefix(pkg, "pkg/") && strings.HasPrefix(imp, mod+"internal/") {
				t.Errorf("%s imports %s: internal/ holds the job, test harnesses and reference clients, which pkg/ does not use", pkg, imp)
			}
			if own, ok := strings.CutPrefix(imp, mod); ok && layered && !slices.Contains(allowed, own) {
				t.Errorf("%s imports %s: it may import only %v of s3pd (docs/ARCHITECTURE.md)", pkg, own, allowed)
			}
		}
	}
	for pkg := range layers {
		if !seen[pkg] {
			t.Errorf("the layering names %s, which does not exist: update layers and docs/ARCHITECTURE.md", pkg)
		}
	}
}

// TestCmdUsesOnlyListedEngineNames parses cmd's files (not its tests)
// and checks that every pkg/transfer name they use is in
// cmdTransferNames.
func TestCmdUsesOnlyListedEngineNames(t *testing.T) {
	fset, files := parseSources(t, "cmd")
	used := 0
	for _, f := range files {
		local := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/s3pd/s3pd/pkg/transfer" {
				local = "transfer"
				if imp.Name != nil {
					local = imp.Name.Name
				}
			}
		}
		if local == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == local && id.Obj == nil {
				used++
				if !slices.Contains(cmdTransferNames, sel.Sel.Name) {
					t.Errorf("%s: cmd uses transfer.%s, which is not in cmdTransferNames: build and run the engine in internal/job",
						fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
	if used == 0 {
		t.Error("cmd uses no pkg/transfer name: the check reads nothing (is the import path right?)")
	}
}

// storeAdapters are the packages of the stores: each one package with an
// opener that the registry (cmd/stores.go) names; the job finds them
// there and they never know the job.
var storeAdapters = []string{"pkg/s3store", "pkg/local", "pkg/httpstore"}

// goList is `go list -f {{.ImportPath}} {{join .Imports " "}}` of pkgs,
// by package: their imports, tests left out.
func goList(t *testing.T, pkgs ...string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", pkgs, err)
	}
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		got[strings.TrimPrefix(fields[0], "github.com/s3pd/s3pd/")] = fields[1:]
	}
	return got
}

// TestArchitectureJobImportsNoStore: the job reaches the stores only
// through the registry (pkg/store), never through a store's package
// (pkg/s3store, pkg/local, ...) nor the AWS SDK itself: its sources,
// destinations and server-side copies are what the registry's entries
// open.
func TestArchitectureJobImportsNoStore(t *testing.T) {
	imports := goList(t, "./internal/job")["internal/job"]
	if len(imports) == 0 {
		t.Fatal("go list gave internal/job no imports: the check reads nothing")
	}
	for _, imp := range imports {
		if strings.HasPrefix(imp, "github.com/aws/") {
			t.Errorf("internal/job imports %s: S3's SDK belongs to pkg/s3store", imp)
		}
		if own, ok := strings.CutPrefix(imp, "github.com/s3pd/s3pd/"); ok && slices.Contains(storeAdapters, own) {
			t.Errorf("internal/job imports %s: the job finds stores through the registry (pkg/store), which cmd/stores.go builds", own)
		}
	}
}

// TestArchitectureJobHoldsNoStoreTypes parses internal/job's files (not
// its tests): no type alias of another package's type, and no constant
// or variable that only re-exports another package's, so that the job
// does not re-export the stores, the engine or the listers.
func TestArchitectureJobHoldsNoStoreTypes(t *testing.T) {
	fset, files := parseSources(t, "internal/job")
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Assign.IsValid() && foreign(s.Type) {
						t.Errorf("%s: type %s is an alias of another package's type: use that package where it is needed", fset.Position(s.Pos()), s.Name.Name)
					}
				case *ast.ValueSpec:
					for i, v := range s.Values {
						if foreign(v) && s.Names[i].IsExported() {
							t.Errorf("%s: %s re-exports another package's name: use that package where it is needed", fset.Position(s.Pos()), s.Names[i].Name)
						}
					}
				}
			}
		}
	}
}

// parseSources parses the Go files of dir, not its tests; it fails the
// test when there is none, so that a check never reads nothing.
func parseSources(t *testing.T, dir string) (*token.FileSet, []*ast.File) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatalf("%s: no Go file to read", dir)
	}
	return fset, files
}

// foreign reports whether e names another package's declaration
// (pkg.Name, or a pointer to one).
func foreign(e ast.Expr) bool {
	if st, ok := e.(*ast.StarExpr); ok {
		e = st.X
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	_, isIdent := sel.X.(*ast.Ident)
	return isIdent
}

// TestArchitectureAdaptersStayBelowTheJob: a store's package never
// imports the job (nor cmd): it plugs in through its opener.
func TestArchitectureAdaptersStayBelowTheJob(t *testing.T) {
	all := goList(t, "./pkg/...")
	found := 0
	for _, pkg := range storeAdapters {
		imports, ok := all[pkg]
		if !ok {
			continue // a store not written yet
		}
		found++
		for _, imp := range imports {
			if own, ok := strings.CutPrefix(imp, "github.com/s3pd/s3pd/"); ok && (strings.HasPrefix(own, "internal/") || own == "cmd") {
				t.Errorf("%s imports %s: a store depends on the engine and the stores' contract, never on the job", pkg, own)
			}
		}
	}
	if found < 2 {
		t.Errorf("found %d of the stores %v: the check reads nothing (renamed?)", found, storeAdapters)
	}
}
