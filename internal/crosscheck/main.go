// Command crosscheck type-checks every package of the module (tests left
// out) for other operating systems, from source, without compiling
// anything: what a cross build catches in Trove's own code (an API one
// system lacks, a file its build tags leave out, a name defined for one
// system only) at a fraction of a cold cross build's cost, because nothing
// is compiled: a cross build compiles every dependency afresh per target,
// SQLite's translated C above all (minutes on 2 cores).
//
// Function bodies are type-checked in the module's own packages only; a
// dependency is checked for its declarations (what our code can refer to),
// its bodies dropped as it is parsed, and its errors are not reported (a
// dependency without its bodies has unused imports, which is not our code's
// concern). What it cannot catch, a link error, is the release build's
// (internal/release builds all six targets).
//
//	go run ./internal/crosscheck darwin/arm64 windows/amd64
//
// It lives under internal/ and is never linked into trove.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/tools/go/packages"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/crosscheck GOOS/GOARCH...")
		os.Exit(2)
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "crosscheck:", err)
		os.Exit(2)
	}
	failed := false
	for _, target := range os.Args[1:] {
		goos, goarch, ok := strings.Cut(target, "/")
		if !ok || goos == "" || goarch == "" {
			fmt.Fprintf(os.Stderr, "crosscheck: %q is not GOOS/GOARCH\n", target)
			os.Exit(2)
		}
		start := time.Now()
		n, errs, err := check(root, goos, goarch)
		if err != nil {
			fmt.Fprintf(os.Stderr, "crosscheck %s: %v\n", target, err)
			os.Exit(2)
		}
		for _, e := range errs {
			fmt.Fprintf(os.Stderr, "%s: %s\n", target, e)
		}
		if len(errs) > 0 {
			failed = true
		}
		fmt.Printf("%s: %d packages type-checked, %d errors (%s)\n", target, n, len(errs), time.Since(start).Round(time.Millisecond))
	}
	if failed {
		os.Exit(1)
	}
}

// check loads ./... of the module at root for goos/goarch without cgo, as
// the release builds it, and returns how many of the module's packages it
// type-checked and their errors (a package go list could not load counts
// as an error too).
func check(root, goos, goarch string) (int, []string, error) {
	inModule := func(filename string) bool {
		rel, err := filepath.Rel(root, filename)
		return err == nil && !strings.HasPrefix(rel, "..")
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps |
			packages.NeedSyntax | packages.NeedTypes | packages.NeedModule,
		Dir: root,
		Env: append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly"),
		ParseFile: func(fset *token.FileSet, filename string, src []byte) (*ast.File, error) {
			f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
			if err != nil || inModule(filename) {
				return f, err
			}
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok {
					fd.Body = nil
				}
			}
			return f, nil
		},
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return 0, nil, err
	}
	var errs []string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
	}
	return len(pkgs), errs, nil
}

// moduleRoot is the directory of the go.mod that governs the working
// directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		dir = parent
	}
}
