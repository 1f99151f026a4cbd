package trove_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/trovehq/trove"

// forbidden maps a package directory (relative to the module root; a
// trailing "/..." covers subpackages) to the module packages its non-test
// files must not import. It keeps the layout of docs/ARCHITECTURE.md true:
// adapters talk to the services only through the root interfaces, drivers
// are chosen only in cmd, and the domain depends on nothing of ours.
var forbidden = map[string][]string{
	".":                    {"/..."},
	"storage":              {"/core", "/httpapi", "/storage/sqlite", "/storage/postgres"},
	"storage/sqlite/...":   {"/core", "/httpapi", "/storage/postgres"},
	"storage/postgres/...": {"/core", "/httpapi", "/storage/sqlite"},
	"core/...":             {"/httpapi", "/storage/sqlite", "/storage/postgres", "/memtool", "/syncer", "/vfs", "/fusefs", "/mcpserver"},
	"httpapi/...":          {"/core", "/storage", "/storage/sqlite", "/storage/postgres"},
	"memtool/...":          {"/core", "/storage", "/storage/sqlite", "/storage/postgres", "/httpapi"},
	"syncer/...":           {"/core", "/storage", "/storage/sqlite", "/storage/postgres", "/httpapi"},
	"vfs/...":              {"/core", "/storage", "/storage/sqlite", "/storage/postgres", "/httpapi"},
	"fusefs/...":           {"/core", "/storage", "/storage/sqlite", "/storage/postgres", "/httpapi"},
	"mcpserver/...":        {"/core", "/storage", "/storage/sqlite", "/storage/postgres", "/httpapi"},
	"internal/loadgen":     {"/..."},
	"internal/bench":       {"/..."}, // benchmarks live in its test files
}

// TestBinaryLinksNoBenchmark: the trove binary links no benchmark code, no
// load generator and no second HTTP transport (go list -deps ./cmd/trove).
func TestBinaryLinksNoBenchmark(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./cmd/trove").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/trove: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	if !slices.Contains(pkgs, module+"/httpapi") {
		t.Fatalf("go list -deps ./cmd/trove lacks httpapi; is it the binary?\n%s", out)
	}
	for _, p := range pkgs {
		for _, bad := range []string{module + "/internal/bench", module + "/internal/loadgen", "github.com/valyala/fasthttp"} {
			if p == bad || strings.HasPrefix(p, bad+"/") {
				t.Errorf("the trove binary links %s", p)
			}
		}
		if strings.Contains(p, "bench") {
			t.Errorf("the trove binary links %s, a benchmark package by its name", p)
		}
	}
}

func TestDependencyDirections(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		rules := rulesFor(dir)
		if len(rules) == 0 {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if !strings.HasPrefix(p, module+"/") {
				continue
			}
			if bad := forbiddenImport(rules, strings.TrimPrefix(p, module)); bad != "" {
				t.Errorf("%s imports %s, which the layout forbids (rule %q)", path, p, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// forbiddenImport returns the rule that forbids importing rel (a module path
// relative to the module root, such as "/core"), or "". A rule forbids the
// package it names and its subpackages; "/..." forbids every package.
func forbiddenImport(rules []string, rel string) string {
	for _, bad := range rules {
		if bad == "/..." || rel == bad || strings.HasPrefix(rel, bad+"/") {
			return bad
		}
	}
	return ""
}

func TestForbiddenImport(t *testing.T) {
	tests := []struct {
		dir, rel string
		want     bool
	}{
		{"httpapi", "/core", true},
		{"httpapi", "/storage/sqlite", true},
		{"httpapi/wire", "/core", true},
		{"httpapi", "/memtool", false},
		{"syncer", "/httpapi", true},
		{".", "/core", true},
		{"core", "/storage", false},
		{"cmd/trove/cli", "/core", false},
		{"storage/sqlite", "/storage/postgres", true},
	}
	for _, tt := range tests {
		if got := forbiddenImport(rulesFor(tt.dir), tt.rel) != ""; got != tt.want {
			t.Errorf("%s importing %s: forbidden=%v, want %v", tt.dir, tt.rel, got, tt.want)
		}
	}
}

// rulesFor returns the forbidden imports for a package directory: its own
// entry plus those of every "/..." entry above it.
func rulesFor(dir string) []string {
	var out []string
	for k, v := range forbidden {
		switch {
		case k == dir:
			out = append(out, v...)
		case strings.HasSuffix(k, "/..."):
			base := strings.TrimSuffix(k, "/...")
			if dir == base || strings.HasPrefix(dir, base+"/") {
				out = append(out, v...)
			}
		}
	}
	return out
}
