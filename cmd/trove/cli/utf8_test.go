package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteAndImportRefuseInvalidUTF8: trove memories write and trove
// import refuse content that is not valid UTF-8 the same way against a
// server as against a local database (exit status and message alike), and
// store nothing: JSON would have replaced each invalid byte with U+FFFD.
func TestWriteAndImportRefuseInvalidUTF8(t *testing.T) {
	t.Setenv("TROVE_URL", "")
	t.Setenv("TROVE_API_KEY", "")
	t.Setenv("TROVE_DATA", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	served := t.TempDir()
	s := startServe(t, "--data", served)
	raw, err := os.ReadFile(filepath.Join(served, "api_key"))
	if err != nil {
		t.Fatal(err)
	}
	remote := []string{"--url", s.url, "--api-key", strings.TrimSpace(string(raw))}
	local := []string{"--data", t.TempDir()}

	files := t.TempDir()
	inputs := map[string]string{"latin-1": "caf\xe9\n", "random bytes": "\xff\xfe\x81\x00binary\xc3"}
	for name, content := range inputs {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(files, strings.ReplaceAll(name, " ", "_"))
			if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			type result struct {
				code   int
				stderr string
			}
			got := map[string]result{}
			for where, target := range map[string][]string{"remote": remote, "local": local} {
				if code, out, errOut := runTrove(t, append([]string{"stores", "create", "u8_" + strings.ReplaceAll(name, " ", "_")}, target...)...); code != 0 {
					t.Fatalf("%s: stores create = %d: %s%s", where, code, out, errOut)
				}
				code, out, errOut := runTrove(t, append([]string{"memories", "write", "u8_" + strings.ReplaceAll(name, " ", "_"), "/x.md", f}, target...)...)
				got[where] = result{code, errOut}
				if code == 0 {
					t.Errorf("%s: memories write of invalid UTF-8 succeeded: %s", where, out)
				}
				if !strings.Contains(errOut, "content must be valid UTF-8 text") {
					t.Errorf("%s: stderr %q does not say why", where, errOut)
				}
				if code, out, _ := runTrove(t, append([]string{"memories", "ls", "u8_" + strings.ReplaceAll(name, " ", "_")}, target...)...); code != 0 || !strings.Contains(out, "is empty") {
					t.Errorf("%s: after the refusal the store holds: %s", where, out)
				}
			}
			if got["remote"] != got["local"] {
				t.Errorf("remote and local differ: remote %+v, local %+v", got["remote"], got["local"])
			}
		})
	}
}
