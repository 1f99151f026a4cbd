package httpapi

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// loadSpec reads the OpenAPI spec bundled in the official Go SDK, the
// authority on wire shapes.
func loadSpec(t *testing.T) map[string]any {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/anthropics/anthropic-sdk-go/v2").Output()
	if err != nil {
		t.Fatalf("locating the SDK module: %v", err)
	}
	f, err := os.Open(filepath.Join(strings.TrimSpace(string(out)), "scripts", "mock-spec.json.gz"))
	if err != nil {
		t.Fatalf("opening the bundled spec: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.NewDecoder(zr).Decode(&spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

func get(m any, keys ...string) any {
	for _, k := range keys {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[k]
	}
	return m
}

// jsonFields returns the JSON names of a struct's fields.
func jsonFields(v any) []string {
	var out []string
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func schemaProps(t *testing.T, spec map[string]any, ref string) []string {
	t.Helper()
	name := strings.TrimPrefix(ref, "#/components/schemas/")
	props, ok := get(spec, "components", "schemas", name, "properties").(map[string]any)
	if !ok {
		t.Fatalf("schema %s not in the spec", name)
	}
	var out []string
	for k := range props {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestWireShapesMatchSpec checks the wire types' fields against the spec's
// schemas, and the route table against the spec's operations.
func TestWireShapesMatchSpec(t *testing.T) {
	spec := loadSpec(t)
	types := []struct {
		schema string
		v      any
	}{
		{"BetaManagedAgentsMemoryStore", wireStore{}},
		{"BetaManagedAgentsMemory", wireMemory{}},
		{"BetaManagedAgentsMemoryPrefix", wirePrefix{}},
		{"BetaManagedAgentsMemoryVersion", wireVersion{}},
		{"BetaManagedAgentsDeletedMemory", wireDeleted{}},
		{"BetaManagedAgentsDeletedMemoryStore", wireDeleted{}},
		{"BetaManagedAgentsCreateMemoryStoreRequest", wireCreateStore{}},
		{"BetaManagedAgentsUpdateMemoryStoreRequestBody", wireUpdateStore{}},
		{"BetaManagedAgentsCreateMemoryParams", wireCreateMemory{}},
		{"BetaManagedAgentsUpdateMemoryParams", wireUpdateMemory{}},
		{"BetaManagedAgentsContentSha256Precondition", wirePrecondition{}},
		{"BetaManagedAgentsMemoryStoreResourceParam", wireSessionResourceParam{}},
		{"BetaManagedAgentsMemoryStoreResource", wireSessionResource{}},
		{"BetaManagedAgentsMemoryPathConflictError", wireErrorBody{}},
		{"BetaDream", wireDream{}},
		{"BetaCreateDreamRequest", wireCreateDream{}},
		{"BetaDreamModelConfig", wireDreamModel{}},
		{"BetaDreamModelConfigParams", wireDreamModelParam{}},
		{"BetaDreamUsage", wireDreamUsage{}},
		{"BetaDreamError", wireDreamError{}},
		{"BetaDreamMemoryStoreOutput", wireDreamOutput{}},
	}
	for _, tc := range types {
		want := schemaProps(t, spec, tc.schema)
		got := jsonFields(tc.v)
		if tc.schema == "BetaManagedAgentsMemoryPathConflictError" {
			got = slices.DeleteFunc(got, func(s string) bool { return s == "details" }) // generic mechanism
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%T vs %s (-spec +ours):\n%s", tc.v, tc.schema, diff)
		}
	}

	// Every memory store and dream operation of the spec is routed, and
	// nothing else under /v1.
	var want []string
	re := regexp.MustCompile(`\{[a-z_]+\}`)
	for path, ops := range get(spec, "paths").(map[string]any) {
		if !strings.HasPrefix(path, "/v1/memory_stores") && !strings.HasPrefix(path, "/v1/dreams") {
			continue
		}
		p := strings.TrimSuffix(path, "?beta=true")
		for m := range ops.(map[string]any) {
			want = append(want, strings.ToUpper(m)+" "+re.ReplaceAllString(p, "{}"))
		}
	}
	var got []string
	for _, r := range NewServer(Config{Dreams: (*Client)(nil)}).routes {
		if strings.Contains(r, " /v1/") {
			got = append(got, re.ReplaceAllString(r, "{}"))
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("routes (-spec +ours):\n%s", diff)
	}
}
