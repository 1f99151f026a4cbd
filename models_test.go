package trove_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/trovehq/trove"
)

// sdkModels reads the Model constants of the official Go SDK this module
// uses (message.go): each model's name and its doc comment, where the SDK
// writes "Deprecated: Will reach end-of-life on …".
func sdkModels(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/anthropics/anthropic-sdk-go/v2").Output()
	if err != nil {
		t.Fatalf("locating the SDK module: %v", err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(strings.TrimSpace(string(out)), "message.go"), nil, parser.ParseComments)
	if err != nil {
		t.Fatalf("parsing the SDK's message.go: %v", err)
	}
	models := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Model" {
				continue
			}
			for i, name := range v.Names {
				lit, ok := v.Values[i].(*ast.BasicLit)
				if !ok || !strings.HasPrefix(name.Name, "ModelClaude") {
					continue
				}
				model, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				models[model] = v.Doc.Text()
			}
		}
	}
	if len(models) < 5 {
		t.Fatalf("found %d Model constants in the SDK's message.go; has its layout changed?", len(models))
	}
	return models
}

// TestModelDefaultsAreCurrent fails when a model default is one the SDK no
// longer lists or marks deprecated (it names the successor then): the
// defaults age with each SDK upgrade, and this is where they are caught.
func TestModelDefaultsAreCurrent(t *testing.T) {
	models := sdkModels(t)
	for _, tc := range []struct{ name, model string }{
		{"agent", trove.DefaultAgentModel},
		{"dream", trove.DefaultDreamModel},
		{"session", trove.DefaultSessionModel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, ok := models[tc.model]
			switch {
			case !ok:
				t.Errorf("the default %s model %q is not one of the SDK's models", tc.name, tc.model)
			case strings.Contains(doc, "Deprecated:"):
				t.Errorf("the default %s model %q is deprecated; move models.go to its successor:\n%s", tc.name, tc.model, doc)
			}
		})
	}
}

func TestModelFromEnv(t *testing.T) {
	for _, tc := range []struct{ name, env, want string }{
		{"unset", "", trove.DefaultDreamModel},
		{"blank", "  ", trove.DefaultDreamModel},
		{"set", "claude-opus-5-5", "claude-opus-5-5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(trove.DreamModelEnv, tc.env)
			if got := trove.ModelFromEnv(trove.DreamModelEnv, trove.DefaultDreamModel); got != tc.want {
				t.Errorf("ModelFromEnv = %q; want %q", got, tc.want)
			}
		})
	}
}
