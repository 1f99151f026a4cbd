//go:build linux

package syncer

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCreateNew: a new file is written whole at its name with the stat key
// a scan of it computes, and an existing name is never replaced (errRace,
// the file untouched); neither leaves any other entry in the directory.
func TestCreateNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		existing string // content already at the name ("" : none)
		wantErr  error
		want     string
	}{
		{name: "absent", want: "new bytes\n"},
		{name: "exists", existing: "the user's bytes\n", wantErr: errRace, want: "the user's bytes\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.existing != "" {
				if err := os.WriteFile(filepath.Join(dir, "d", "f.md"), []byte(tc.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			e := &Engine{root: root}
			t.Cleanup(func() { e.closeDirRoots(); root.Close() })
			key, ok, err := e.createNew("d", "f.md", []byte("new bytes\n"))
			if !ok {
				t.Skip("no O_TMPFILE here: writeLocal uses a temp file and a rename")
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("createNew: %v, want %v", err, tc.wantErr)
			}
			got, err := os.ReadFile(filepath.Join(dir, "d", "f.md"))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("file holds %q, want %q", got, tc.want)
			}
			ents, err := os.ReadDir(filepath.Join(dir, "d"))
			if err != nil {
				t.Fatal(err)
			}
			if len(ents) != 1 {
				t.Errorf("directory holds %d entries, want 1", len(ents))
			}
			if tc.wantErr == nil {
				fi, err := os.Lstat(filepath.Join(dir, "d", "f.md"))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(statKey(fi), key); diff != "" {
					t.Errorf("stat key (-scan +createNew):\n%s", diff)
				}
			}
		})
	}
}
