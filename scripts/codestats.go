//go:build ignore

// codestats prints the shape figures the code reviews compare: function
// length (p50, p90, max), parameters per function (p90, max), the project
// packages cmd imports, and the non-test line count. Complexity comes
// from gocyclo: `go run github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0
// -over 15 $(git ls-files '*.go' | grep -v _test.go)`.
//
//	go run scripts/codestats.go
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

func main() {
	out, err := exec.Command("git", "ls-files", "*.go").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "codestats: git ls-files:", err)
		os.Exit(1)
	}
	module := "github.com/"
	if b, err := os.ReadFile("go.mod"); err == nil {
		module = strings.Fields(strings.SplitN(string(b), "\n", 2)[0])[1] + "/"
	}
	var lengths, params []int
	var lines int
	imports := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range strings.Fields(string(out)) {
		if strings.HasSuffix(path, "_test.go") || strings.HasPrefix(path, "scripts/") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "codestats:", err)
			os.Exit(1)
		}
		lines += fset.File(f.Pos()).LineCount()
		if strings.HasPrefix(path, "cmd/") {
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(p, module) {
					imports[strings.TrimPrefix(p, module)] = true
				}
			}
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			lengths = append(lengths, fset.Position(fn.End()).Line-fset.Position(fn.Pos()).Line+1)
			n := 0
			for _, field := range fn.Type.Params.List {
				if len(field.Names) == 0 {
					n++
				}
				n += len(field.Names)
			}
			params = append(params, n)
		}
	}
	sort.Ints(lengths)
	sort.Ints(params)
	names := make([]string, 0, len(imports))
	for p := range imports {
		names = append(names, p)
	}
	sort.Strings(names)
	fmt.Printf("non-test lines        %d\n", lines)
	fmt.Printf("functions             %d\n", len(lengths))
	fmt.Printf("length p50/p90/max    %d / %d / %d\n", pct(lengths, 50), pct(lengths, 90), lengths[len(lengths)-1])
	fmt.Printf("parameters p90/max    %d / %d\n", pct(params, 90), params[len(params)-1])
	fmt.Printf("cmd imports           %d: %s\n", len(names), strings.Join(names, " "))
}

// pct is the nearest-rank percentile of sorted xs.
func pct(xs []int, p int) int {
	i := (p*len(xs) + 99) / 100
	if i < 1 {
		i = 1
	}
	return xs[i-1]
}
