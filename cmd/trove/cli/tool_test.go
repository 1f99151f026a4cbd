package cli

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestToolJSONLines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mem")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	png := "\x89PNG\r\n\x1a\nxx"
	if err := os.WriteFile(filepath.Join(dir, "p.png"), []byte(png), 0o600); err != nil {
		t.Fatal(err)
	}
	stdin := strings.Join([]string{
		`{"command":"create","path":"/memories/a.md","file_text":"x < y & z\n"}`,
		``,
		`this is not json`,
		`{"type":"tool_use","id":"toolu_1","name":"memory","input":{"command":"view","path":"/memories/a.md"}}`,
		`{"command":"view","path":"/memories/p.png"}`,
		`{"command":"delete","path":"/memories"}`,
		`{"command":"view","path":"/memories"}`, // no final newline
	}, "\n")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"tool", "--root", dir}, strings.NewReader(stdin), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	want := strings.Join([]string{
		`{"is_error":false,"content":"File created successfully at: /memories/a.md"}`,
		`{"is_error":true,"content":"Error: The tool input must be a JSON object with a \"command\" field (one of view, create, str_replace, insert, delete, rename)."}`,
		`{"is_error":false,"content":"Here's the content of /memories/a.md with line numbers:\n     1\tx < y & z\n     2\t"}`,
		`{"is_error":false,"content":[{"source":{"data":"` + base64.StdEncoding.EncodeToString([]byte(png)) + `","media_type":"image/png","type":"base64"},"type":"image"}]}`,
		`{"is_error":true,"content":"Error: Cannot delete the /memories directory itself. Delete the files and directories inside it instead."}`,
		`{"is_error":false,"content":"Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n4.0K\t/memories\n10B\t/memories/a.md\n10B\t/memories/p.png"}`,
	}, "\n") + "\n"
	if diff := cmp.Diff(want, stdout.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
}

func TestToolRequiresRoot(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"tool"}, strings.NewReader(""), &stdout, &stderr); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "--root") {
		t.Errorf("stderr %q does not mention --root", stderr.String())
	}
}
