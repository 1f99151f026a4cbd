package apply

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadYAMLErrorsInTheFilesWords: a mistake in stores.yaml is reported
// at its line in the file's terms (fields as written, what was expected),
// never as the Go types it is decoded into.
func TestLoadYAMLErrorsInTheFilesWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"a typo in a store's field", "stores:\n  - name: notes\n    memries:\n      - path: /a.md\n        content: a\n",
			`stores.yaml:3: unknown field "memries" (did you mean "memories"?)`},
		{"a typo at the top level", "store:\n  - name: notes\n",
			`stores.yaml:1: unknown field "store" (did you mean "stores"?)`},
		{"an unknown field in a memory", "stores:\n  - name: notes\n    memories:\n      - path: /a.md\n        colour: red\n        content: a\n",
			`stores.yaml:5: unknown field "colour" in a memory (the fields are path, content, file)`},
		{"a mapping where a list goes", "stores:\n  name: notes\n",
			`stores.yaml:2: expected a list here, not a mapping (key: value lines)`},
		{"a list where text goes", "stores:\n  - name: [a, b]\n",
			`stores.yaml:2: expected text here, not a list`},
		{"two problems, two lines", "stores:\n  - nme: notes\n    descripton: x\n",
			"stores.yaml:2: unknown field \"nme\" (did you mean \"name\"?)\nstores.yaml:3: unknown field \"descripton\" (did you mean \"description\"?)"},
		{"a syntax error", "stores:\n  - name: notes\n\t- name: tab\n",
			`stores.yaml:2: found a tab character that violates indentation`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "stores.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(tc.want, "stores.yaml:", path+":")
			if _, err := Load(path); err == nil || err.Error() != want {
				t.Errorf("Load = %v\nwant %s", err, want)
			}
		})
	}
}
