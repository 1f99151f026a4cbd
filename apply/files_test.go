package apply_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/apply"
)

// TestApplyFileRules: a memory's file is read only when it is a regular file
// under the YAML's directory of at most the content limit; a second YAML
// document is refused. Every refusal happens in Load, before anything is
// written, and quickly (a FIFO must not hang, /dev/zero must not grow).
func TestApplyFileRules(t *testing.T) {
	t.Parallel()
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "id_ed25519")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	limit := trove.DefaultLimits().MaxContentBytes
	mem := func(file string) string {
		return "stores:\n  - name: a\n    memories:\n      - {path: /x.md, file: '" + file + "'}\n"
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the YAML
		opts  apply.LoadOptions
		want  string // error substring; "" = loads
	}{
		{"regular file under the directory", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, "seeds", "a.md"), "hello")
			return mem("seeds/a.md")
		}, apply.LoadOptions{}, ""},
		{"absolute path", func(t *testing.T, dir string) string { return mem(secret) }, apply.LoadOptions{}, "absolute path"},
		{"absolute path allowed", func(t *testing.T, dir string) string { return mem(secret) }, apply.LoadOptions{AllowOutside: true}, ""},
		{"dot-dot", func(t *testing.T, dir string) string {
			rel, _ := filepath.Rel(dir, secret)
			return mem(rel)
		}, apply.LoadOptions{}, "leaves the YAML file's directory"},
		{"dot-dot inside", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, "a.md"), "x")
			return mem("seeds/../a.md")
		}, apply.LoadOptions{}, "leaves the YAML file's directory"},
		{"symlink out", func(t *testing.T, dir string) string {
			symlink(t, secret, filepath.Join(dir, "link.md"))
			return mem("link.md")
		}, apply.LoadOptions{}, "outside the YAML file's directory"},
		{"symlink out allowed", func(t *testing.T, dir string) string {
			symlink(t, secret, filepath.Join(dir, "link.md"))
			return mem("link.md")
		}, apply.LoadOptions{AllowOutside: true}, ""},
		{"symlink inside", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, "real.md"), "x")
			symlink(t, "real.md", filepath.Join(dir, "link.md"))
			return mem("link.md")
		}, apply.LoadOptions{}, ""},
		{"directory", func(t *testing.T, dir string) string {
			os.Mkdir(filepath.Join(dir, "d"), 0o755)
			return mem("d")
		}, apply.LoadOptions{}, "is a directory"},
		{"dev zero", func(t *testing.T, dir string) string {
			if runtime.GOOS == "windows" {
				t.Skip("no /dev/zero")
			}
			symlink(t, "/dev/zero", filepath.Join(dir, "zero.md"))
			return mem("/dev/zero")
		}, apply.LoadOptions{AllowOutside: true}, "is a device"},
		{"dev zero through a link", func(t *testing.T, dir string) string {
			if runtime.GOOS == "windows" {
				t.Skip("no /dev/zero")
			}
			symlink(t, "/dev/zero", filepath.Join(dir, "zero.md"))
			return mem("zero.md")
		}, apply.LoadOptions{AllowOutside: true}, "is a device"},
		{"fifo", func(t *testing.T, dir string) string {
			if runtime.GOOS == "windows" {
				t.Skip("no FIFOs")
			}
			if err := mkfifo(filepath.Join(dir, "fifo.md")); err != nil {
				t.Skip(err)
			}
			return mem("fifo.md")
		}, apply.LoadOptions{}, "named pipe"},
		{"over the limit", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, "big.md"), strings.Repeat("x", limit+1))
			return mem("big.md")
		}, apply.LoadOptions{}, "the limit is"},
		{"at the limit", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, "big.md"), strings.Repeat("x", limit))
			return mem("big.md")
		}, apply.LoadOptions{}, ""},
		{"inline over the limit", func(t *testing.T, dir string) string {
			return "stores:\n  - name: a\n    memories:\n      - {path: /x.md, content: " + strings.Repeat("x", limit+1) + "}\n"
		}, apply.LoadOptions{}, "the limit is"},
		{"not UTF-8", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, "latin1.md"), "caf\xe9")
			return mem("latin1.md")
		}, apply.LoadOptions{}, "content must be valid UTF-8 text"},
		{"second document", func(t *testing.T, dir string) string {
			return "stores:\n  - name: a\n---\nstores:\n  - name: b\n"
		}, apply.LoadOptions{}, "more than one YAML document"},
		{"second empty document", func(t *testing.T, dir string) string {
			return "stores:\n  - name: a\n---\n# nothing\n"
		}, apply.LoadOptions{}, "more than one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			yaml := tt.setup(t, dir)
			p := writeSpec(t, dir, yaml, nil)
			done := make(chan error, 1)
			go func() {
				_, err := apply.LoadWith(p, tt.opts)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Load did not return: it is blocked on the file")
			}
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Load = %v, want success", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Load = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
}
