package cli

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestToolGuardFlags runs trove tool with each guard flag and without it:
// the flag must change the outcome.
func TestToolGuardFlags(t *testing.T) {
	const secret = `{"command":"create","path":"/memories/k.md","file_text":"aws AKIAIOSFODNN7EXAMPLE\n"}`
	tests := []struct {
		name  string
		flags []string
		stdin []string
		want  []string
	}{
		{"max-file-size/default", nil,
			[]string{`{"command":"create","path":"/memories/a.md","file_text":"` + strings.Repeat("x", 102401) + `"}`},
			[]string{`{"is_error":true,"content":"Error: The content of /memories/a.md would be 102,401 bytes, more than the maximum file size of 102,400 bytes; nothing was written. Keep memory files small: split the content into several files."}`}},
		{"max-file-size/10", []string{"--max-file-size", "10"},
			[]string{
				`{"command":"create","path":"/memories/a.md","file_text":"0123456789"}`,
				`{"command":"create","path":"/memories/b.md","file_text":"0123456789a"}`,
			},
			[]string{
				`{"is_error":false,"content":"File created successfully at: /memories/a.md"}`,
				`{"is_error":true,"content":"Error: The content of /memories/b.md would be 11 bytes, more than the maximum file size of 10 bytes; nothing was written. Keep memory files small: split the content into several files."}`,
			}},
		{"secret-filter/default", nil, []string{secret},
			[]string{`{"is_error":true,"content":"Error: Refused to write /memories/k.md: the text appears to contain an AWS access key ID. Secrets must not be stored in memory; remove it (or replace it with a placeholder) and try again."}`}},
		{"secret-filter/off", []string{"--no-secret-filter"}, []string{secret},
			[]string{`{"is_error":false,"content":"File created successfully at: /memories/k.md"}`}},
		{"overwrite/default", nil,
			[]string{`{"command":"create","path":"/memories/a.md","file_text":"1"}`, `{"command":"create","path":"/memories/a.md","file_text":"2"}`},
			[]string{`{"is_error":false,"content":"File created successfully at: /memories/a.md"}`, `{"is_error":true,"content":"Error: File /memories/a.md already exists"}`}},
		{"overwrite/on", []string{"--overwrite"},
			[]string{`{"command":"create","path":"/memories/a.md","file_text":"1"}`, `{"command":"create","path":"/memories/a.md","file_text":"2"}`},
			[]string{`{"is_error":false,"content":"File created successfully at: /memories/a.md"}`, `{"is_error":false,"content":"File overwritten successfully at: /memories/a.md"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			args := append([]string{"tool", "--root", dir}, tt.flags...)
			if code := Main(args, strings.NewReader(strings.Join(tt.stdin, "\n")), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d, stderr %s", code, stderr.String())
			}
			if diff := cmp.Diff(strings.Join(tt.want, "\n")+"\n", stdout.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
		})
	}
}

// TestToolExpireAfter: --expire-after deletes, before the first line is
// read, the files whose access time is older than the period, and names
// them on stderr; without the flag nothing is swept.
func TestToolExpireAfter(t *testing.T) {
	for _, tt := range []struct {
		flags      []string
		wantStderr string
		wantOld    bool
	}{
		{nil, "", true},
		{[]string{"--expire-after", "720h"}, "[expire] deleted /memories/d/old.md (not read for 720h0m0s)\n", false},
	} {
		dir := t.TempDir()
		old, fresh := filepath.Join(dir, "d", "old.md"), filepath.Join(dir, "fresh.md")
		if err := os.MkdirAll(filepath.Dir(old), 0o700); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{old, fresh} {
			if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		longAgo := time.Now().Add(-1000 * time.Hour)
		if err := os.Chtimes(old, longAgo, longAgo); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		args := append([]string{"tool", "--root", dir}, tt.flags...)
		// The view shows the state after the sweep.
		if code := Main(args, strings.NewReader(`{"command":"view","path":"/memories"}`), &stdout, &stderr); code != 0 {
			t.Fatalf("%q: exit %d, stderr %s", tt.flags, code, stderr.String())
		}
		if got := stderr.String(); got != tt.wantStderr {
			t.Errorf("%q: stderr = %q, want %q", tt.flags, got, tt.wantStderr)
		}
		_, err := os.Stat(old)
		if gotOld := err == nil; gotOld != tt.wantOld {
			t.Errorf("%q: old.md exists = %v, want %v (%v)", tt.flags, gotOld, tt.wantOld, err)
		}
		if _, err := os.Stat(fresh); err != nil {
			t.Errorf("%q: fresh.md: %v", tt.flags, err)
		}
		if strings.Contains(stdout.String(), "old.md") == !tt.wantOld {
			t.Errorf("%q: listing %s", tt.flags, stdout.String())
		}
	}
}

func TestToolGuardFlagsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--max-file-size", "0"},
		{"--max-file-size", "-1"},
		{"--expire-after", "-1h"},
		{"--expire-after", "30d"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(append([]string{"tool", "--root", t.TempDir()}, args...), strings.NewReader(""), &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), args[0]) {
			t.Errorf("%q: exit %d, stderr %q; want a failure naming %s", args, code, stderr.String(), args[0])
		}
	}
}
