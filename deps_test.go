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
	".":                    {"!/internal/pathrune", "/..."},
	"storage":              {"/core", "/httpapi", "/storage/sqlite", "/storage/postgres"},
	"storage/sqlite/...":   {"/core", "/httpapi", "/storage/postgres"},
	"storage/postgres/...": {"/core", "/httpapi", "/storage/sqlite"},
	"storage/storagetest":  {"/core", "/httpapi", "/storage/sqlite", "/storage/postgres"},
	"core/...":             {"/httpapi", "/storage/sqlite", "/storage/postgres", "/memtool", "/syncer", "/vfs", "/fusefs", "/mcpserver"},
	"httpapi/...":          {"/core", "/storage", "/storage/sqlite", "/storage/postgres"},
	"memtool/...":          {"/core", "/storage", "/storage/sqlite", "/storage/postgres", "/httpapi"},
	"syncer/...":           {"/core", "/storage", "/storage/sqlite", "/storage/postgres", "/httpapi"},
	"vfs/...":              {"/core", "/storage", "/storage/sqlite", "/storage/postgres", "/httpapi"},
	"fusefs/...":           {"/core", "/storage", "/storage/sqlite", "/storage/postgres", "/httpapi"},
	"mcpserver/...":        {"/core", "/storage", "/storage/sqlite", "/storage/postgres", "/httpapi"},
	"sessionrun/...":       {"/core", "/storage", "/storage/sqlite", "/storage/postgres", "/httpapi", "/memtool", "/mcpserver", "/cmd"},
	"internal/loadgen":     {"/..."},
	"internal/pathrune":    {"/..."},
	"internal/follow":      {"/..."}, // the change feed's follow loop, shared by storetree and httpapi
	"storetree/...":        {"!/internal/follow", "/core", "/storage", "/httpapi", "/memtool", "/syncer", "/vfs", "/fusefs", "/mcpserver", "/cmd", "/internal"},
	"archive/...":          {"!/internal/atomicfile", "/..."},
	"apply/...":            {"!/internal/atomicfile", "/..."},
	"internal/atomicfile":  {"/..."},
	"console/...":          {"!/internal/textdiff", "!/dreamdiff", "/..."},
	"internal/textdiff":    {"/..."},
	"internal/certfile":    {"/..."},
	"internal/bench":       {"/..."},                                                                 // benchmarks live in its test files
	"internal/scale":       {"/httpapi", "/storage/sqlite", "/storage/postgres", "/console", "/cmd"}, // its tests open the drivers
	"internal/pgtest":      {"!/internal/skipnote", "/..."},
	"internal/skipnote":    {"/..."},
	"internal/racechild":   {"/..."},
	"dreamdiff/...":        {"/..."}, // the root only: TestLinks
	"dreamrun/...":         {"/httpapi", "/storage", "/storage/sqlite", "/storage/postgres", "/syncer", "/vfs", "/fusefs", "/mcpserver", "/sessionrun", "/cmd"},
	"internal/claudetest":  {"/..."},
	"agentloop/...":        {"/httpapi", "/storage", "/storage/sqlite", "/storage/postgres", "/syncer", "/vfs", "/fusefs", "/mcpserver", "/sessionrun", "/cmd", "/memtool", "/dreamrun", "/dreamdiff"},
	"internal/release":     {"/..."}, // the release builder; never linked into trove
	"internal/crosscheck":  {"/..."}, // .ci/run's type check for other systems; never linked into trove
	"webhook/...":          {"/httpapi", "/storage", "/storage/sqlite", "/storage/postgres", "/syncer", "/vfs", "/fusefs", "/mcpserver", "/sessionrun", "/cmd", "/memtool", "/dreamrun", "/dreamdiff", "/console"},
	"backup/...":           {"/core", "/httpapi", "/storage/sqlite", "/storage/postgres", "/cmd"},
}

// testKits are conformance suites and test helpers that only tests may
// import: no non-test file outside the kit itself imports them.
var testKits = []string{"/core/coretest", "/storage/storagetest", "/internal/pgtest", "/internal/claudetest", "/internal/skipnote", "/internal/racechild", "/storage/sqlite/sqlitetest", "/internal/scale"}

// testKitImport returns the kit that a non-test file in dir must not import
// as rel (a module path relative to the module root), or "". A kit may use
// another (pgtest reports its skips through skipnote).
func testKitImport(dir, rel string) string {
	if slices.Contains(testKits, "/"+dir) {
		return ""
	}
	for _, kit := range testKits {
		if rel == kit && dir != strings.TrimPrefix(kit, "/") {
			return kit
		}
	}
	return ""
}

// linkRules say what a package links, all imports followed (go list
// -deps), where the one-step rules of forbidden are not enough: what a
// binary carries, and packages kept light for their importers' sake. A
// path starting with "/" is relative to the module root; any other is an
// import path. A path also covers the packages under it.
var linkRules = []struct {
	pkg  string
	want string   // a package the listing must hold: proof that it is of the right thing
	bad  []string // what it must not link
	// rootOnly: it links nothing but the standard library, the root
	// package and what the root links.
	rootOnly bool
	badWord  string // no linked package's path may contain it
}{
	// The binary: no benchmark code, no load generator, no second HTTP
	// transport, no release tooling.
	{
		pkg: "./cmd/trove", want: "/httpapi",
		bad:     []string{"/internal/bench", "/internal/loadgen", "/internal/scale", "/internal/release", "/internal/crosscheck", "golang.org/x/tools/go/packages", "github.com/valyala/fasthttp", "github.com/google/go-containerregistry", "github.com/CycloneDX/cyclonedx-go"},
		badWord: "bench",
	},
	// The console shows a dream's change set (dreamdiff) and never runs
	// one; it reaches the services through the root's interfaces only.
	{
		pkg: "./console", want: "/dreamdiff",
		bad: []string{"/core", "/storage", "/dreamrun", "/memtool", "/httpapi", "github.com/anthropics/anthropic-sdk-go"},
	},
	// A dream's change set is pure: the console and the CLI link it
	// without the runner.
	{pkg: "./dreamdiff", want: module, rootOnly: true},
}

// TestLinks checks linkRules.
func TestLinks(t *testing.T) {
	pkgs := []string{"."}
	for _, r := range linkRules {
		pkgs = append(pkgs, r.pkg)
	}
	// One go list for all: each line is a package and what it links.
	out, err := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", pkgs, err, out)
	}
	deps := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 0 {
			deps[f[0]] = f[1:]
		}
	}
	full := func(p string) string {
		if strings.HasPrefix(p, "/") {
			return module + p
		}
		return p
	}
	covers := func(rule, p string) bool {
		rule = full(rule)
		return p == rule || strings.HasPrefix(p, rule+"/")
	}
	rootLinks := map[string]bool{module: true}
	for _, p := range deps[module] {
		rootLinks[p] = true
	}
	for _, r := range linkRules {
		t.Run(strings.TrimPrefix(r.pkg, "./"), func(t *testing.T) {
			path := module + strings.TrimPrefix(r.pkg, ".")
			linked, ok := deps[path]
			if !ok {
				t.Fatalf("go list did not list %s:\n%s", path, out)
			}
			if !slices.Contains(linked, full(r.want)) {
				t.Fatalf("%s does not link %s; is the listing of the right package?", path, full(r.want))
			}
			for _, bad := range r.bad {
				if hits := slices.DeleteFunc(slices.Clone(linked), func(p string) bool { return !covers(bad, p) }); len(hits) > 0 {
					t.Errorf("%s links %s (%d packages: %s)", path, bad, len(hits), strings.Join(hits, " "))
				}
			}
			for _, p := range linked {
				if r.badWord != "" && strings.Contains(p, r.badWord) {
					t.Errorf("%s links %s, whose path says %q", path, p, r.badWord)
				}
				std := !strings.Contains(strings.Split(p, "/")[0], ".")
				if r.rootOnly && !std && !rootLinks[p] {
					t.Errorf("%s links %s: only the standard library, the root package and what the root links are allowed", path, p)
				}
			}
		})
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
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if !strings.HasPrefix(p, module+"/") {
				continue
			}
			rel := strings.TrimPrefix(p, module)
			if bad := forbiddenImport(rules, rel); bad != "" {
				t.Errorf("%s imports %s, which the layout forbids (rule %q)", path, p, bad)
			}
			if kit := testKitImport(dir, rel); kit != "" {
				t.Errorf("%s imports the test kit %s, which only tests may import", path, p)
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
// package it names and its subpackages; "/..." forbids every package; a rule
// "!/x" allows exactly package /x whatever the other rules say.
func forbiddenImport(rules []string, rel string) string {
	for _, r := range rules {
		if r == "!"+rel {
			return ""
		}
	}
	for _, bad := range rules {
		if strings.HasPrefix(bad, "!") {
			continue
		}
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
		{".", "/internal/pathrune", false},
		{".", "/internal/loadgen", true},
		{"memtool", "/internal/pathrune", false},
		{"sessionrun", "/syncer", false},
		{"sessionrun", "/fusefs", false},
		{"sessionrun", "/core", true},
		{"sessionrun", "/cmd/trove/cli", true},
		{"cmd/trove/cli", "/sessionrun", false},
		{"storage/storagetest", "/core", true},
		{"core/coretest", "/storage/sqlite", true},
		{"core/coretest", "/storage", false},
	}
	for _, tt := range tests {
		if got := forbiddenImport(rulesFor(tt.dir), tt.rel) != ""; got != tt.want {
			t.Errorf("%s importing %s: forbidden=%v, want %v", tt.dir, tt.rel, got, tt.want)
		}
	}
}

func TestTestKitImport(t *testing.T) {
	tests := []struct {
		dir, rel string
		want     bool
	}{
		{"core", "/core/coretest", true},
		{"cmd/trove/cli", "/storage/storagetest", true},
		{"core/coretest", "/core/coretest", false},
		{"core/coretest", "/storage", false},
		{"storage/sqlite", "/storage", false},
		{"storage/postgres", "/internal/pgtest", true},
		{"internal/pgtest", "/internal/pgtest", false},
	}
	for _, tt := range tests {
		if got := testKitImport(tt.dir, tt.rel) != ""; got != tt.want {
			t.Errorf("%s importing %s: test kit=%v, want %v", tt.dir, tt.rel, got, tt.want)
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
