// Package memtooltest is the conformance suite every memtool.FS must pass:
// the exact result of every command in every situation, FS contract checks,
// and concurrency checks, all through the engine. Backends call Run from
// their tests:
//
//	func TestConformance(t *testing.T) {
//		memtooltest.Run(t, func(t *testing.T) memtool.FS { return newBackend(t) })
//	}
//
// A backend that cannot hold every file (only UTF-8 text, or a size limit)
// declares it with RunWith and Capabilities: the cases that cannot apply are
// adapted to check the backend's refusal instead, never skipped.
//
// The suite assumes nothing about empty directories persisting (a store
// backend only has directories implied by file names) and nothing about
// symbolic links (backend-specific).
package memtooltest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove/memtool"
)

// J encodes a tool input; it panics on values that cannot be marshalled.
func J(kv map[string]any) []byte {
	b, err := json.Marshal(kv)
	if err != nil {
		panic(err)
	}
	return b
}

func create(path, text string) []byte {
	return J(map[string]any{"command": "create", "path": path, "file_text": text})
}
func view(path string) []byte { return J(map[string]any{"command": "view", "path": path}) }
func viewRange(path string, r any) []byte {
	return J(map[string]any{"command": "view", "path": path, "view_range": r})
}
func strReplace(path, old, new string) []byte {
	return J(map[string]any{"command": "str_replace", "path": path, "old_str": old, "new_str": new})
}
func insert(path string, line any, text string) []byte {
	return J(map[string]any{"command": "insert", "path": path, "insert_line": line, "insert_text": text})
}
func del(path string) []byte { return J(map[string]any{"command": "delete", "path": path}) }
func rename(o, n string) []byte {
	return J(map[string]any{"command": "rename", "old_path": o, "new_path": n})
}

// Tree returns every file of fsys (relative name -> content), walking with
// ReadDir and reading with ReadFile.
func Tree(t testing.TB, fsys memtool.FS) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	var walk func(string)
	walk = func(dir string) {
		entries, err := fsys.ReadDir(ctx, dir)
		if err != nil {
			t.Fatalf("ReadDir(%q): %v", dir, err)
		}
		for _, e := range entries {
			name := e.Name
			if dir != "" {
				name = dir + "/" + e.Name
			}
			switch e.Kind {
			case memtool.KindDir:
				walk(name)
			case memtool.KindFile:
				data, _, err := fsys.ReadFile(ctx, name, -1)
				if err != nil {
					t.Fatalf("ReadFile(%q): %v", name, err)
				}
				out[name] = string(data)
			}
		}
	}
	walk("")
	return out
}

const (
	listHdr  = "Here're the files and directories up to 2 levels deep in "
	listTail = ", excluding hidden items and node_modules:\n"
	fileHdr  = "Here's the content of "
	snipHdr  = "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
)

type tcase struct {
	name    string
	refused string // set by adapt: the result must be the backend's refusal of this "command path"
	opts    memtool.Options
	files   map[string]string // written with FS.WriteFile first (bytes the JSON input cannot carry)
	setup   [][]byte          // each must succeed
	input   []byte
	want    string
	isErr   bool
	tree    map[string]string // if non-nil, the files afterwards
	absent  []string          // relative names that must not exist afterwards
}

// pngBytes is a minimal PNG signature followed by junk (only the magic is
// checked).
var pngBytes = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"

const fiveLines = "alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\n"

func tenLines() string {
	var sb strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&sb, "line %d\n", i)
	}
	return sb.String()
}

func numbered(from int, lines ...string) string {
	var out []string
	for i, l := range lines {
		out = append(out, fmt.Sprintf("%6d\t%s", from+i, l))
	}
	return strings.Join(out, "\n")
}

func cases() []tcase {
	const secret = "AKIAIOSFODNN7EXAMPLE"
	big := strings.Repeat("x", memtool.DefaultMaxFileSize)
	return []tcase{
		// ---- view: directories ----
		{name: "view/empty-root", input: view("/memories"),
			want: listHdr + "/memories" + listTail + "4.0K\t/memories"},
		{name: "view/empty-root-slash", input: view("/memories/"),
			want: listHdr + "/memories/" + listTail + "4.0K\t/memories/"},
		{name: "view/listing-order-sizes-depth", setup: [][]byte{
			create("/memories/10.txt", "x"),
			create("/memories/9.txt", ""),
			create("/memories/B.txt", strings.Repeat("b", 1024)),
			create("/memories/a.txt", "hello"),
			create("/memories/b/c.txt", strings.Repeat("c", 1280)),
			create("/memories/b/d/e.txt", "deep"),
			create("/memories/.hidden", "h"),
			create("/memories/.git/config", "h"),
			create("/memories/node_modules/x.js", "n"),
			create("/memories/node_modules2/y", "yy"),
			create("/memories/\U0001F600.txt", "smile"),
			create("/memories/\uFF5E.txt", "tilde"),
		}, input: view("/memories"),
			want: listHdr + "/memories" + listTail + strings.Join([]string{
				"4.0K\t/memories",
				"1B\t/memories/10.txt",
				"0B\t/memories/9.txt",
				"1.0K\t/memories/B.txt",
				"5B\t/memories/a.txt",
				"4.0K\t/memories/b/",
				"1.3K\t/memories/b/c.txt",
				"4.0K\t/memories/b/d/",
				"4.0K\t/memories/node_modules2/",
				"2B\t/memories/node_modules2/y",
				"5B\t/memories/\U0001F600.txt",
				"5B\t/memories/\uFF5E.txt",
			}, "\n")},
		// The seed's example listing, byte for byte.
		{name: "view/seed-example", setup: [][]byte{
			create("/memories/customer_service_guidelines.xml", strings.Repeat("g", 1536)),
			create("/memories/refund_policies.xml", strings.Repeat("r", 2048)),
		}, input: view("/memories"),
			want: "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n4.0K\t/memories\n1.5K\t/memories/customer_service_guidelines.xml\n2.0K\t/memories/refund_policies.xml"},
		{name: "view/subdir", setup: [][]byte{
			create("/memories/b/c.txt", "cc"),
			create("/memories/b/d/e.txt", "eee"),
			create("/memories/b/d/f/g.txt", "too deep"),
		}, input: view("/memories/b"),
			want: listHdr + "/memories/b" + listTail + "4.0K\t/memories/b\n2B\t/memories/b/c.txt\n4.0K\t/memories/b/d/\n3B\t/memories/b/d/e.txt\n4.0K\t/memories/b/d/f/"},
		{name: "view/subdir-trailing-slash", setup: [][]byte{create("/memories/b/c.txt", "cc")},
			input: view("/memories/b/"),
			want:  listHdr + "/memories/b/" + listTail + "4.0K\t/memories/b/\n2B\t/memories/b/c.txt"},
		{name: "view/hidden-dir-viewable", setup: [][]byte{create("/memories/.git/config", "x")},
			input: view("/memories/.git"),
			want:  listHdr + "/memories/.git" + listTail + "4.0K\t/memories/.git\n1B\t/memories/.git/config"},

		// ---- view: files ----
		{name: "view/file", setup: [][]byte{create("/memories/notes.txt", "Hello World\nThis is line two\n")},
			input: view("/memories/notes.txt"),
			want:  fileHdr + "/memories/notes.txt with line numbers:\n" + numbered(1, "Hello World", "This is line two", "")},
		{name: "view/empty-file", setup: [][]byte{create("/memories/e.txt", "")},
			input: view("/memories/e.txt"), want: fileHdr + "/memories/e.txt with line numbers:\n     1\t"},
		{name: "view/crlf-and-bom", setup: [][]byte{create("/memories/w.txt", "\uFEFFa\r\nb")},
			input: view("/memories/w.txt"), want: fileHdr + "/memories/w.txt with line numbers:\n     1\t\uFEFFa\r\n     2\tb"},
		{name: "view/hidden-file", setup: [][]byte{create("/memories/.h", "x")},
			input: view("/memories/.h"), want: fileHdr + "/memories/.h with line numbers:\n     1\tx"},
		{name: "view/missing", input: view("/memories/nope.txt"), isErr: true,
			want: "The path /memories/nope.txt does not exist. Please provide a valid path."},
		{name: "view/through-file", setup: [][]byte{create("/memories/a.txt", "x")},
			input: view("/memories/a.txt/b"), isErr: true,
			want: "The path /memories/a.txt/b does not exist. Please provide a valid path."},
		{name: "view/file-trailing-slash", setup: [][]byte{create("/memories/a.txt", "x")},
			input: view("/memories/a.txt/"), isErr: true,
			want: "Error: The path /memories/a.txt/ is a file, not a directory; remove the trailing \"/\" to view it."},
		{name: "view/range", setup: [][]byte{create("/memories/t.txt", tenLines())},
			input: viewRange("/memories/t.txt", []int{2, 4}),
			want:  fileHdr + "/memories/t.txt with line numbers:\n" + numbered(2, "line 2", "line 3", "line 4")},
		{name: "view/range-to-end", setup: [][]byte{create("/memories/t.txt", tenLines())},
			input: viewRange("/memories/t.txt", []int{8, -1}),
			want:  fileHdr + "/memories/t.txt with line numbers:\n" + numbered(8, "line 8", "line 9", "line 10", "")},
		{name: "view/range-end-clamped", setup: [][]byte{create("/memories/t.txt", tenLines())},
			input: viewRange("/memories/t.txt", []int{10, 100}),
			want:  fileHdr + "/memories/t.txt with line numbers:\n" + numbered(10, "line 10", "")},
		{name: "view/range-last-element", setup: [][]byte{create("/memories/t.txt", tenLines())},
			input: viewRange("/memories/t.txt", []int{11, 11}),
			want:  fileHdr + "/memories/t.txt with line numbers:\n    11\t"},
		{name: "view/range-float-integral", setup: [][]byte{create("/memories/t.txt", tenLines())},
			input: []byte(`{"command":"view","path":"/memories/t.txt","view_range":[2.0,2]}`),
			want:  fileHdr + "/memories/t.txt with line numbers:\n" + numbered(2, "line 2")},
		{name: "view/range-null-is-whole-file", setup: [][]byte{create("/memories/t.txt", "a")},
			input: []byte(`{"command":"view","path":"/memories/t.txt","view_range":null}`),
			want:  fileHdr + "/memories/t.txt with line numbers:\n     1\ta"},
		{name: "view/range-start-zero", setup: [][]byte{create("/memories/t.txt", tenLines())},
			input: viewRange("/memories/t.txt", []int{0, 2}), isErr: true,
			want: "Error: Invalid view_range [0, 2]: start_line must be at least 1 (lines are numbered from 1)."},
		{name: "view/range-reversed", setup: [][]byte{create("/memories/t.txt", tenLines())},
			input: viewRange("/memories/t.txt", []int{5, 3}), isErr: true,
			want: "Error: Invalid view_range [5, 3]: end_line must be -1 (end of file) or at least start_line 5."},
		{name: "view/range-negative-end", setup: [][]byte{create("/memories/t.txt", tenLines())},
			input: viewRange("/memories/t.txt", []int{3, -2}), isErr: true,
			want: "Error: Invalid view_range [3, -2]: end_line must be -1 (end of file) or at least start_line 3."},
		{name: "view/range-beyond", setup: [][]byte{create("/memories/t.txt", tenLines())},
			input: viewRange("/memories/t.txt", []int{12, -1}), isErr: true,
			want: "Error: Invalid view_range [12, -1]: start_line 12 is beyond the end of /memories/t.txt, which has 11 lines."},
		{name: "view/range-one-element", setup: [][]byte{create("/memories/t.txt", tenLines())},
			input: viewRange("/memories/t.txt", []int{3}), isErr: true,
			want: "Error: Invalid view_range [3]: it must be an array of two integers [start_line, end_line], e.g. [1, 50], or [start_line, -1] to read to the end of the file."},
		{name: "view/range-strings", setup: [][]byte{create("/memories/t.txt", tenLines())},
			input: viewRange("/memories/t.txt", []string{"2", "4"}), isErr: true,
			want: "Error: Invalid view_range [\"2\",\"4\"]: it must be an array of two integers [start_line, end_line], e.g. [1, 50], or [start_line, -1] to read to the end of the file."},
		{name: "view/range-fraction", setup: [][]byte{create("/memories/t.txt", tenLines())},
			input: []byte(`{"command":"view","path":"/memories/t.txt","view_range":[2.5,4]}`), isErr: true,
			want: "Error: Invalid view_range [2.5,4]: it must be an array of two integers [start_line, end_line], e.g. [1, 50], or [start_line, -1] to read to the end of the file."},
		{name: "view/range-not-array", setup: [][]byte{create("/memories/t.txt", tenLines())},
			input: []byte(`{"command":"view","path":"/memories/t.txt","view_range":"1-3"}`), isErr: true,
			want: "Error: Invalid view_range \"1-3\": it must be an array of two integers [start_line, end_line], e.g. [1, 50], or [start_line, -1] to read to the end of the file."},
		{name: "view/png", files: map[string]string{"img/pic.PNG": pngBytes},
			input: view("/memories/img/pic.PNG"),
			want:  "[image image/png, " + fmt.Sprint(base64.StdEncoding.EncodedLen(len(pngBytes))) + " base64 characters]"},
		{name: "view/png-bad-magic", setup: [][]byte{create("/memories/fake.png", "not a png")},
			input: view("/memories/fake.png"), isErr: true,
			want: "Error: The file /memories/fake.png has an image extension but its content is not a valid png image; it cannot be shown."},
		{name: "view/jpeg", files: map[string]string{"p.jpeg": "\xff\xd8\xff\xe0"},
			input: view("/memories/p.jpeg"), want: "[image image/jpeg, 8 base64 characters]"},
		{name: "view/binary", files: map[string]string{"b.bin": "a\x00b"},
			input: view("/memories/b.bin"), isErr: true,
			want: "Error: The file /memories/b.bin is not a UTF-8 text file (3 bytes of binary data); the memory tool can only show text files and .jpg, .jpeg or .png images."},

		// ---- create ----
		{name: "create/ok", input: create("/memories/notes.txt", "Meeting notes:\n"),
			want: "File created successfully at: /memories/notes.txt",
			tree: map[string]string{"notes.txt": "Meeting notes:\n"}},
		{name: "create/nested-parents", input: create("/memories/a/b/c.md", "x"),
			want: "File created successfully at: /memories/a/b/c.md", tree: map[string]string{"a/b/c.md": "x"}},
		{name: "create/empty-text", input: create("/memories/e", ""),
			want: "File created successfully at: /memories/e", tree: map[string]string{"e": ""}},
		{name: "create/exists", setup: [][]byte{create("/memories/n.txt", "old")},
			input: create("/memories/n.txt", "new"), isErr: true,
			want: "Error: File /memories/n.txt already exists", tree: map[string]string{"n.txt": "old"}},
		{name: "create/over-dir", setup: [][]byte{create("/memories/d/f", "x")},
			input: create("/memories/d", "new"), isErr: true,
			want: "Error: File /memories/d already exists", tree: map[string]string{"d/f": "x"}},
		{name: "create/root", input: create("/memories", "x"), isErr: true,
			want: "Error: File /memories already exists"},
		{name: "create/trailing-slash", input: create("/memories/dir/", "x"), isErr: true,
			want: "Error: Invalid path /memories/dir/: create needs a file path, which cannot end with \"/\".",
			tree: map[string]string{}},
		{name: "create/parent-is-file", setup: [][]byte{create("/memories/a.txt", "x")},
			input: create("/memories/a.txt/b.txt", "y"), isErr: true,
			want: "Error: Cannot create /memories/a.txt/b.txt: a parent of this path is a file, not a directory. Choose another path.",
			tree: map[string]string{"a.txt": "x"}},
		{name: "create/missing-text", input: J(map[string]any{"command": "create", "path": "/memories/x"}), isErr: true,
			want: "Error: Missing required parameter \"file_text\" for create: give the full content of the file (it may be empty).",
			tree: map[string]string{}},
		{name: "create/text-not-string", input: J(map[string]any{"command": "create", "path": "/memories/x", "file_text": 42}), isErr: true,
			want: "Error: Invalid parameter \"file_text\" for create: expected a string, got a number.",
			tree: map[string]string{}},
		{name: "create/max-size-ok", input: create("/memories/big", big),
			want: "File created successfully at: /memories/big"},
		{name: "create/too-large", input: create("/memories/big", big+"x"), isErr: true,
			want: "Error: The content of /memories/big would be 102,401 bytes, more than the maximum file size of 102,400 bytes; nothing was written. Keep memory files small: split the content into several files.",
			tree: map[string]string{}},
		{name: "create/secret", input: create("/memories/keys.txt", "aws: "+secret+"\n"), isErr: true,
			want: "Error: Refused to write /memories/keys.txt: the text appears to contain an AWS access key ID. Secrets must not be stored in memory; remove it (or replace it with a placeholder) and try again.",
			tree: map[string]string{}},
		{name: "create/overwrite-option", opts: memtool.Options{Overwrite: true},
			setup: [][]byte{create("/memories/n.txt", "old")}, input: create("/memories/n.txt", "new"),
			want: "File overwritten successfully at: /memories/n.txt", tree: map[string]string{"n.txt": "new"}},
		{name: "create/overwrite-option-new", opts: memtool.Options{Overwrite: true},
			input: create("/memories/n.txt", "new"),
			want:  "File created successfully at: /memories/n.txt", tree: map[string]string{"n.txt": "new"}},
		{name: "create/overwrite-option-dir", opts: memtool.Options{Overwrite: true},
			setup: [][]byte{create("/memories/d/f", "x")}, input: create("/memories/d", "new"), isErr: true,
			want: "Error: Cannot create /memories/d: it is an existing directory, which create cannot overwrite.",
			tree: map[string]string{"d/f": "x"}},

		// ---- str_replace ----
		{name: "str_replace/ok", setup: [][]byte{create("/memories/f.txt", fiveLines)},
			input: strReplace("/memories/f.txt", "delta", "DELTA"),
			want:  snipHdr + numbered(2, "beta", "gamma", "DELTA", "epsilon", "zeta"),
			tree:  map[string]string{"f.txt": "alpha\nbeta\ngamma\nDELTA\nepsilon\nzeta\n"}},
		{name: "str_replace/first-line", setup: [][]byte{create("/memories/f.txt", fiveLines)},
			input: strReplace("/memories/f.txt", "alpha", "A"),
			want:  snipHdr + numbered(1, "A", "beta", "gamma")},
		{name: "str_replace/multiline", setup: [][]byte{create("/memories/f.txt", fiveLines)},
			input: strReplace("/memories/f.txt", "beta\ngamma", "B\nG\nX"),
			want:  snipHdr + numbered(1, "alpha", "B", "G", "X", "delta", "epsilon"),
			tree:  map[string]string{"f.txt": "alpha\nB\nG\nX\ndelta\nepsilon\nzeta\n"}},
		{name: "str_replace/not-found", setup: [][]byte{create("/memories/f.txt", fiveLines)},
			input: strReplace("/memories/f.txt", "nope", "x"), isErr: true,
			want: "No replacement was performed, old_str `nope` did not appear verbatim in /memories/f.txt.",
			tree: map[string]string{"f.txt": fiveLines}},
		{name: "str_replace/multiple", setup: [][]byte{create("/memories/f.txt", "foo\nbar foo\nfoo foo\n")},
			input: strReplace("/memories/f.txt", "foo", "x"), isErr: true,
			want: "No replacement was performed. Multiple occurrences of old_str `foo` in lines: 1, 2, 3, 3. Please ensure it is unique"},
		{name: "str_replace/overlapping", setup: [][]byte{create("/memories/f.txt", "aaa")},
			input: strReplace("/memories/f.txt", "aa", "b"), isErr: true,
			want: "No replacement was performed. Multiple occurrences of old_str `aa` in lines: 1, 1. Please ensure it is unique"},
		{name: "str_replace/empty-old", setup: [][]byte{create("/memories/f.txt", "solo")},
			input: strReplace("/memories/f.txt", "", "x"), isErr: true,
			want: "Error: Invalid parameter \"old_str\" for str_replace: it must not be empty. Give the exact text to replace (to add text, use insert).",
			tree: map[string]string{"f.txt": "solo"}},
		{name: "str_replace/new-str-omitted", setup: [][]byte{create("/memories/f.txt", "keep drop keep")},
			input: J(map[string]any{"command": "str_replace", "path": "/memories/f.txt", "old_str": " drop"}),
			want:  snipHdr + numbered(1, "keep keep"), tree: map[string]string{"f.txt": "keep keep"}},
		{name: "str_replace/new-str-not-string", setup: [][]byte{create("/memories/f.txt", "a")},
			input: J(map[string]any{"command": "str_replace", "path": "/memories/f.txt", "old_str": "a", "new_str": []int{1}}), isErr: true,
			want: "Error: Invalid parameter \"new_str\" for str_replace: expected a string, got an array."},
		{name: "str_replace/missing-old", setup: [][]byte{create("/memories/f.txt", "a")},
			input: J(map[string]any{"command": "str_replace", "path": "/memories/f.txt"}), isErr: true,
			want: "Error: Missing required parameter \"old_str\" for str_replace: give the exact text to replace."},
		{name: "str_replace/missing-file", input: strReplace("/memories/x.txt", "a", "b"), isErr: true,
			want: "Error: The path /memories/x.txt does not exist. Please provide a valid path."},
		{name: "str_replace/dir", setup: [][]byte{create("/memories/d/f", "a")},
			input: strReplace("/memories/d", "a", "b"), isErr: true,
			want: "Error: The path /memories/d does not exist. Please provide a valid path."},
		{name: "str_replace/root", input: strReplace("/memories", "a", "b"), isErr: true,
			want: "Error: The path /memories does not exist. Please provide a valid path."},
		{name: "str_replace/crlf-preserved", setup: [][]byte{create("/memories/w.txt", "a\r\nb\r\nc\r\n")},
			input: strReplace("/memories/w.txt", "b", "B"),
			want:  snipHdr + numbered(1, "a\r", "B\r", "c\r", ""), tree: map[string]string{"w.txt": "a\r\nB\r\nc\r\n"}},
		{name: "str_replace/dollar-literal", setup: [][]byte{create("/memories/f.txt", "price")},
			input: strReplace("/memories/f.txt", "price", "$& $1 $$"),
			want:  snipHdr + numbered(1, "$& $1 $$"), tree: map[string]string{"f.txt": "$& $1 $$"}},
		{name: "str_replace/secret", setup: [][]byte{create("/memories/f.txt", "token: X")},
			input: strReplace("/memories/f.txt", "X", "ghp_"+strings.Repeat("a", 36)), isErr: true,
			want: "Error: Refused to write /memories/f.txt: the text appears to contain a GitHub token. Secrets must not be stored in memory; remove it (or replace it with a placeholder) and try again.",
			tree: map[string]string{"f.txt": "token: X"}},
		{name: "str_replace/many-occurrences", setup: [][]byte{create("/memories/f.txt", big[:100])},
			input: strReplace("/memories/f.txt", "xx", big), isErr: true,
			want: "No replacement was performed. Multiple occurrences of old_str `xx` in lines: " + strings.TrimSuffix(strings.Repeat("1, ", 99), ", ") + ". Please ensure it is unique"},
		{name: "str_replace/result-too-large", setup: [][]byte{create("/memories/f.txt", "a"+big[:100])},
			input: strReplace("/memories/f.txt", "a", big), isErr: true,
			want: "Error: The content of /memories/f.txt would be 102,500 bytes, more than the maximum file size of 102,400 bytes; nothing was written. Keep memory files small: split the content into several files."},
		{name: "str_replace/trailing-slash", setup: [][]byte{create("/memories/f.txt", "a")},
			input: strReplace("/memories/f.txt/", "a", "b"), isErr: true,
			want: "Error: Invalid path /memories/f.txt/: str_replace needs a file path, which cannot end with \"/\"."},
		{name: "str_replace/binary", files: map[string]string{"b.bin": "a\x00b"},
			input: strReplace("/memories/b.bin", "a", "c"), isErr: true,
			want: "Error: The file /memories/b.bin is not a UTF-8 text file, so str_replace cannot edit it. Delete it or replace it with create."},

		// ---- insert ----
		{name: "insert/after-trailing-newline", setup: [][]byte{create("/memories/f.txt", "Hello World\nThis is line two\n")},
			input: insert("/memories/f.txt", 3, "X"), want: "The file /memories/f.txt has been edited.",
			tree: map[string]string{"f.txt": "Hello World\nThis is line two\n\nX"}},
		{name: "insert/at-zero", setup: [][]byte{create("/memories/f.txt", "a\nb")},
			input: insert("/memories/f.txt", 0, "X\n"), want: "The file /memories/f.txt has been edited.",
			tree: map[string]string{"f.txt": "X\na\nb"}},
		{name: "insert/middle-strips-one-newline", setup: [][]byte{create("/memories/f.txt", "a\nb")},
			input: insert("/memories/f.txt", 1, "m1\nm2\n\n"), want: "The file /memories/f.txt has been edited.",
			tree: map[string]string{"f.txt": "a\nm1\nm2\n\nb"}},
		{name: "insert/empty-file", setup: [][]byte{create("/memories/f.txt", "")},
			input: insert("/memories/f.txt", 0, "E"), want: "The file /memories/f.txt has been edited.",
			tree: map[string]string{"f.txt": "E\n"}},
		{name: "insert/crlf", setup: [][]byte{create("/memories/f.txt", "a\r\nb")},
			input: insert("/memories/f.txt", 1, "X"), want: "The file /memories/f.txt has been edited.",
			tree: map[string]string{"f.txt": "a\r\nX\nb"}},
		{name: "insert/integral-float", setup: [][]byte{create("/memories/f.txt", "a\nb")},
			input: []byte(`{"command":"insert","path":"/memories/f.txt","insert_line":1.0,"insert_text":"X"}`),
			want:  "The file /memories/f.txt has been edited.", tree: map[string]string{"f.txt": "a\nX\nb"}},
		{name: "insert/out-of-range", setup: [][]byte{create("/memories/f.txt", "a\nb")},
			input: insert("/memories/f.txt", 5, "X"), isErr: true,
			want: "Error: Invalid `insert_line` parameter: 5. It should be within the range of lines of the file: [0, 2]",
			tree: map[string]string{"f.txt": "a\nb"}},
		{name: "insert/negative", setup: [][]byte{create("/memories/f.txt", "a\n")},
			input: insert("/memories/f.txt", -1, "X"), isErr: true,
			want: "Error: Invalid `insert_line` parameter: -1. It should be within the range of lines of the file: [0, 2]"},
		{name: "insert/line-string", setup: [][]byte{create("/memories/f.txt", "a")},
			input: insert("/memories/f.txt", "1", "X"), isErr: true,
			want: "Error: Invalid `insert_line` parameter: \"1\". It must be an integer: the line number after which to insert (0 inserts at the beginning of the file)."},
		{name: "insert/line-fraction", setup: [][]byte{create("/memories/f.txt", "a")},
			input: insert("/memories/f.txt", 1.5, "X"), isErr: true,
			want: "Error: Invalid `insert_line` parameter: 1.5. It must be an integer: the line number after which to insert (0 inserts at the beginning of the file)."},
		{name: "insert/line-missing", setup: [][]byte{create("/memories/f.txt", "a")},
			input: J(map[string]any{"command": "insert", "path": "/memories/f.txt", "insert_text": "X"}), isErr: true,
			want: "Error: Missing required parameter \"insert_line\" for insert: give the line number after which to insert (0 inserts at the beginning of the file)."},
		{name: "insert/text-missing", setup: [][]byte{create("/memories/f.txt", "a")},
			input: J(map[string]any{"command": "insert", "path": "/memories/f.txt", "insert_line": 0}), isErr: true,
			want: "Error: Missing required parameter \"insert_text\" for insert: give the text to insert."},
		{name: "insert/missing-file", input: insert("/memories/x.txt", 0, "X"), isErr: true,
			want: "Error: The path /memories/x.txt does not exist", absent: []string{"x.txt"}},
		{name: "insert/dir", setup: [][]byte{create("/memories/d/f", "a")},
			input: insert("/memories/d", 0, "X"), isErr: true, want: "Error: The path /memories/d does not exist"},
		{name: "insert/secret", setup: [][]byte{create("/memories/f.txt", "a")},
			input: insert("/memories/f.txt", 1, "-----BEGIN OPENSSH PRIVATE KEY-----\nabc"), isErr: true,
			want: "Error: Refused to write /memories/f.txt: the text appears to contain a PEM private key. Secrets must not be stored in memory; remove it (or replace it with a placeholder) and try again.",
			tree: map[string]string{"f.txt": "a"}},

		// ---- delete ----
		{name: "delete/file", setup: [][]byte{create("/memories/f.txt", "a"), create("/memories/g.txt", "b")},
			input: del("/memories/f.txt"), want: "Successfully deleted /memories/f.txt",
			tree: map[string]string{"g.txt": "b"}},
		{name: "delete/dir-recursive", setup: [][]byte{create("/memories/d/a", "a"), create("/memories/d/e/b", "b"), create("/memories/keep", "k")},
			input: del("/memories/d"), want: "Successfully deleted /memories/d",
			tree: map[string]string{"keep": "k"}, absent: []string{"d", "d/e"}},
		{name: "delete/dir-trailing-slash", setup: [][]byte{create("/memories/d/a", "a")},
			input: del("/memories/d/"), want: "Successfully deleted /memories/d/", tree: map[string]string{}},
		{name: "delete/file-trailing-slash", setup: [][]byte{create("/memories/f", "a")},
			input: del("/memories/f/"), isErr: true,
			want: "Error: The path /memories/f/ is not a directory; remove the trailing \"/\" to delete it.",
			tree: map[string]string{"f": "a"}},
		{name: "delete/missing", input: del("/memories/x"), isErr: true, want: "Error: The path /memories/x does not exist"},
		{name: "delete/root", setup: [][]byte{create("/memories/f", "a")}, input: del("/memories"), isErr: true,
			want: "Error: Cannot delete the /memories directory itself. Delete the files and directories inside it instead.",
			tree: map[string]string{"f": "a"}},
		{name: "delete/root-slash", setup: [][]byte{create("/memories/f", "a")}, input: del("/memories/"), isErr: true,
			want: "Error: Cannot delete the /memories directory itself. Delete the files and directories inside it instead.",
			tree: map[string]string{"f": "a"}},
		{name: "delete/root-dot", setup: [][]byte{create("/memories/f", "a")}, input: del("/memories/."), isErr: true,
			want: "Error: Invalid path /memories/.: \".\" and \"..\" segments are not allowed; write the path without them, e.g. /memories/notes.md.",
			tree: map[string]string{"f": "a"}},
		{name: "delete/root-dotdot", setup: [][]byte{create("/memories/x/f", "a")}, input: del("/memories/x/.."), isErr: true,
			want: "Error: Invalid path /memories/x/..: \".\" and \"..\" segments are not allowed; write the path without them, e.g. /memories/notes.md.",
			tree: map[string]string{"x/f": "a"}},

		// ---- rename ----
		{name: "rename/file", setup: [][]byte{create("/memories/a.txt", "A")},
			input: rename("/memories/a.txt", "/memories/x/y/b.txt"),
			want:  "Successfully renamed /memories/a.txt to /memories/x/y/b.txt", tree: map[string]string{"x/y/b.txt": "A"}},
		{name: "rename/dir", setup: [][]byte{create("/memories/d/a", "A"), create("/memories/d/e/b", "B")},
			input: rename("/memories/d", "/memories/n"),
			want:  "Successfully renamed /memories/d to /memories/n", tree: map[string]string{"n/a": "A", "n/e/b": "B"}},
		{name: "rename/dest-exists", setup: [][]byte{create("/memories/a", "A"), create("/memories/b", "B")},
			input: rename("/memories/a", "/memories/b"), isErr: true,
			want: "Error: The destination /memories/b already exists", tree: map[string]string{"a": "A", "b": "B"}},
		{name: "rename/dest-is-dir", setup: [][]byte{create("/memories/a", "A"), create("/memories/d/f", "F")},
			input: rename("/memories/a", "/memories/d"), isErr: true,
			want: "Error: The destination /memories/d already exists", tree: map[string]string{"a": "A", "d/f": "F"}},
		{name: "rename/same", setup: [][]byte{create("/memories/a", "A")},
			input: rename("/memories/a", "/memories/a"), isErr: true, want: "Error: The destination /memories/a already exists"},
		{name: "rename/missing-source", input: rename("/memories/nope", "/memories/new/dir/x"), isErr: true,
			want: "Error: The path /memories/nope does not exist", absent: []string{"new", "new/dir"}},
		{name: "rename/root", input: rename("/memories", "/memories/x"), isErr: true,
			want: "Error: Cannot rename the /memories directory itself. Rename the files and directories inside it instead."},
		{name: "rename/root-slash", input: rename("/memories/", "/memories/x"), isErr: true,
			want: "Error: Cannot rename the /memories directory itself. Rename the files and directories inside it instead."},
		{name: "rename/onto-root", setup: [][]byte{create("/memories/a", "A")},
			input: rename("/memories/a", "/memories"), isErr: true, want: "Error: The destination /memories already exists"},
		{name: "rename/into-itself", setup: [][]byte{create("/memories/d/f", "F")},
			input: rename("/memories/d", "/memories/d/sub"), isErr: true,
			want: "Error: Cannot rename /memories/d to /memories/d/sub: the destination is inside the source. Choose a destination outside /memories/d.",
			tree: map[string]string{"d/f": "F"}},
		{name: "rename/dest-parent-file", setup: [][]byte{create("/memories/a", "A"), create("/memories/f", "F")},
			input: rename("/memories/a", "/memories/f/a"), isErr: true,
			want: "Error: Cannot rename /memories/a to /memories/f/a: a parent of the destination is a file, not a directory. Choose another destination.",
			tree: map[string]string{"a": "A", "f": "F"}},
		{name: "rename/trailing-slash", setup: [][]byte{create("/memories/a", "A")},
			input: rename("/memories/a", "/memories/b/"), isErr: true,
			want: "Error: Invalid path /memories/b/: rename paths cannot end with \"/\".", tree: map[string]string{"a": "A"}},
		{name: "rename/bad-new-path", setup: [][]byte{create("/memories/a", "A")},
			input: rename("/memories/a", "/memories/../b"), isErr: true,
			want: "Error: Invalid path /memories/../b: \".\" and \"..\" segments are not allowed; write the path without them, e.g. /memories/notes.md."},

		// ---- paths and dispatch ----
		{name: "path/sibling-prefix", input: create("/memoriesevil.txt", "x"), isErr: true,
			want: "Error: Invalid path /memoriesevil.txt: memory paths must be /memories or start with /memories/ (for example /memories/notes.md).",
			tree: map[string]string{}},
		{name: "path/outside", input: view("/etc/passwd"), isErr: true,
			want: "Error: Invalid path /etc/passwd: memory paths must be /memories or start with /memories/ (for example /memories/notes.md)."},
		{name: "path/traversal", input: view("/memories/../../etc/passwd"), isErr: true,
			want: "Error: Invalid path /memories/../../etc/passwd: \".\" and \"..\" segments are not allowed; write the path without them, e.g. /memories/notes.md."},
		{name: "path/double-slash", input: view("/memories//notes.txt"), isErr: true,
			want: "Error: Invalid path /memories//notes.txt: empty path segments (\"//\") are not allowed."},
		{name: "path/backslash", input: create("/memories/a\\b.txt", "x"), isErr: true,
			want: "Error: Invalid path /memories/a\\b.txt: backslashes are not allowed; use \"/\" to separate directories."},
		{name: "path/percent", input: view("/memories/%2E%2e%2fetc"), isErr: true,
			want: "Error: Invalid path /memories/%2E%2e%2fetc: percent-encoded '.', '/', '\\', '%' or control characters (such as %2e or %2f) are not allowed; write names literally."},
		{name: "path/newline", input: create("/memories/x\n4.0K\t/memories/FAKE.txt", "x"), isErr: true,
			want: "Error: Invalid path \"/memories/x\\n4.0K\\t/memories/FAKE.txt\": control characters (including newlines, tabs and U+2028/U+2029) are not allowed in paths."},
		{name: "path/nul", input: view("/memories/a\x00b"), isErr: true,
			want: "Error: Invalid path \"/memories/a\\x00b\": control characters (including newlines, tabs and U+2028/U+2029) are not allowed in paths."},
		{name: "path/too-long", input: view("/memories/" + strings.Repeat("a/", 510)), isErr: true,
			want: "Error: Invalid path: the path is 1030 bytes long; the maximum is 1024 bytes. Use shorter directory and file names."},
		{name: "path/not-string", input: J(map[string]any{"command": "view", "path": 7}), isErr: true,
			want: "Error: Invalid parameter \"path\" for view: expected a string, got a number."},
		{name: "path/missing", input: J(map[string]any{"command": "delete"}), isErr: true,
			want: "Error: Missing required parameter \"path\" for delete: give a path under /memories."},
		{name: "dispatch/unknown", input: J(map[string]any{"command": "toString"}), isErr: true,
			want: "Error: Unknown command \"toString\": use one of view, create, str_replace, insert, delete, rename."},
		{name: "dispatch/missing-command", input: J(map[string]any{"path": "/memories"}), isErr: true,
			want: "Error: Missing required parameter \"command\": use one of view, create, str_replace, insert, delete, rename."},
		{name: "dispatch/command-not-string", input: J(map[string]any{"command": 1}), isErr: true,
			want: "Error: Invalid parameter \"command\": expected a string, got a number."},
		{name: "dispatch/not-json", input: []byte(`{"command":`), isErr: true,
			want: "Error: The tool input must be a JSON object with a \"command\" field (one of view, create, str_replace, insert, delete, rename)."},
		{name: "dispatch/array", input: []byte(`[1]`), isErr: true,
			want: "Error: The tool input must be a JSON object with a \"command\" field (one of view, create, str_replace, insert, delete, rename)."},
		{name: "dispatch/null", input: []byte(`null`), isErr: true,
			want: "Error: The tool input must be a JSON object with a \"command\" field (one of view, create, str_replace, insert, delete, rename)."},
	}
}

// Capabilities describe what a backend cannot store; the zero value is a
// backend that holds any bytes of any size (a directory, memory).
type Capabilities struct {
	// TextOnly: the backend holds only valid UTF-8 content and refuses
	// anything else with a *memtool.Refusal (a memory store). Images then
	// cannot exist: the image cases check that writing one is refused and
	// that view reports the path missing.
	TextOnly bool
	// MaxFileBytes, if positive, is the largest content the backend holds;
	// a larger write is refused with a *memtool.Refusal. The cases that need
	// bigger files (the 999,999-line limit) check the refusal instead and
	// view a file of exactly MaxFileBytes bytes.
	MaxFileBytes int
}

// Run runs the whole suite for a backend without storage restrictions;
// newFS must return a new, empty FS each call.
func Run(t *testing.T, newFS func(t *testing.T) memtool.FS) {
	RunWith(t, newFS, Capabilities{})
}

// RunWith runs the whole suite for a backend with the restrictions caps;
// newFS must return a new, empty FS each call.
func RunWith(t *testing.T, newFS func(t *testing.T) memtool.FS, caps Capabilities) {
	t.Run("Commands", func(t *testing.T) { runCases(t, newFS, caps) })
	t.Run("LineLimit", func(t *testing.T) { testLineLimit(t, newFS, caps) })
	t.Run("Truncation", func(t *testing.T) { testTruncation(t, newFS) })
	t.Run("Contract", func(t *testing.T) { testContract(t, newFS) })
	// Conflict and Concurrency run with and without CombineEdits: the
	// edits' results and the files they leave are the same either way.
	for _, combine := range []bool{false, true} {
		name := ""
		if combine {
			name = "/CombineEdits"
		}
		t.Run("Conflict"+name, func(t *testing.T) { testConflict(t, newFS, combine) })
		t.Run("Concurrency"+name, func(t *testing.T) { testConcurrency(t, newFS, combine) })
	}
	t.Run("ImageContent", func(t *testing.T) { testImage(t, newFS, caps) })
	t.Run("Sweep", func(t *testing.T) { testSweep(t, newFS) })
}

// holds reports whether the backend can store content.
func (c Capabilities) holds(content string) bool {
	return (!c.TextOnly || utf8.ValidString(content)) && (c.MaxFileBytes <= 0 || len(content) <= c.MaxFileBytes)
}

// adapt rewrites a case the backend cannot run as is: a view of a file the
// backend cannot hold finds nothing (runCases checks that writing it was
// refused), and a create of content it cannot hold must be refused by the
// backend.
func (c Capabilities) adapt(tc tcase) tcase {
	var in struct {
		Command  string `json:"command"`
		Path     string `json:"path"`
		FileText string `json:"file_text"`
	}
	_ = json.Unmarshal(tc.input, &in)
	for _, content := range tc.files {
		if !c.holds(content) && in.Command == "view" {
			tc.want, tc.isErr = "The path "+in.Path+" does not exist. Please provide a valid path.", true
			tc.tree = nil
		}
	}
	maxSize := tc.opts.MaxFileSize
	if maxSize == 0 {
		maxSize = memtool.DefaultMaxFileSize
	}
	if in.Command == "create" && !c.holds(in.FileText) && (maxSize < 0 || int64(len(in.FileText)) <= maxSize) {
		tc.refused, tc.want, tc.isErr, tc.tree = "create "+in.Path, "", true, nil
	}
	return tc
}

// checkRefused checks that r is the engine's rendering of a backend's
// *memtool.Refusal of cmdPath ("create /memories/x"): the refuser, the
// command, the path, a message and the no-write note.
func checkRefused(t *testing.T, r memtool.Result, cmdPath string) {
	t.Helper()
	cmd, path, _ := strings.Cut(cmdPath, " ")
	prefix := " refused the " + cmd + " of " + path + ": "
	text := r.String()
	_, msg, found := strings.Cut(text, prefix)
	if !r.IsError || !strings.HasPrefix(text, "Error: The ") || !found || len(msg) <= len(". Nothing was written.") || !strings.HasSuffix(msg, ". Nothing was written.") {
		t.Errorf("got IsError=%v %q, want the backend's refusal: \"Error: The {backend}%s{message}. Nothing was written.\"", r.IsError, text, prefix)
	}
}

// writeFile stores content at name directly; content the backend cannot hold
// must be refused with a *memtool.Refusal, and then writeFile reports false.
func writeFile(t *testing.T, fsys memtool.FS, caps Capabilities, name, content string) bool {
	t.Helper()
	_, err := fsys.WriteFile(context.Background(), name, []byte(content), "")
	if caps.holds(content) {
		if err != nil {
			t.Fatalf("WriteFile(%q): %v", name, err)
		}
		return true
	}
	var ref *memtool.Refusal
	if !errors.As(err, &ref) || ref.Message == "" {
		t.Fatalf("WriteFile(%q) of %d bytes the backend cannot hold = %v, want a *memtool.Refusal with a message", name, len(content), err)
	}
	if _, err := fsys.Stat(context.Background(), name); !errors.Is(err, memtool.ErrNotExist) {
		t.Fatalf("after the refused WriteFile(%q): Stat err = %v, want ErrNotExist", name, err)
	}
	return false
}

func mustOK(t *testing.T, tool *memtool.Tool, in []byte) memtool.Result {
	t.Helper()
	r := tool.Execute(context.Background(), in)
	if r.IsError {
		t.Fatalf("setup %s: %s", in, r.String())
	}
	return r
}

func runCases(t *testing.T, newFS func(t *testing.T) memtool.FS, caps Capabilities) {
	for _, tc := range cases() {
		tc = caps.adapt(tc)
		t.Run(tc.name, func(t *testing.T) {
			fsys := newFS(t)
			tool := memtool.New(fsys, tc.opts)
			for name, content := range tc.files {
				writeFile(t, fsys, caps, name, content)
			}
			for _, in := range tc.setup {
				mustOK(t, tool, in)
			}
			r := tool.Execute(context.Background(), tc.input)
			if tc.refused != "" {
				checkRefused(t, r, tc.refused)
			} else if diff := cmp.Diff(tc.want, r.String()); diff != "" {
				t.Errorf("Execute(%s) content mismatch (-want +got):\n%s", tc.input, diff)
			}
			if r.IsError != tc.isErr {
				t.Errorf("Execute(%s).IsError = %v, want %v", tc.input, r.IsError, tc.isErr)
			}
			if tc.tree != nil {
				if diff := cmp.Diff(tc.tree, Tree(t, fsys)); diff != "" {
					t.Errorf("files after Execute(%s) (-want +got):\n%s", tc.input, diff)
				}
			}
			for _, name := range tc.absent {
				if _, err := fsys.Stat(context.Background(), name); !errors.Is(err, memtool.ErrNotExist) {
					t.Errorf("Stat(%q) = %v, want ErrNotExist", name, err)
				}
			}
		})
	}
}

func testLineLimit(t *testing.T, newFS func(t *testing.T) memtool.FS, caps Capabilities) {
	ctx := context.Background()
	if !caps.holds(strings.Repeat("\n", 1000000)) {
		// The backend cannot hold a file with that many lines: the largest
		// file it holds views fine, one byte more is refused, directly and
		// through create (the engine's own size limit lifted).
		fsys := newFS(t)
		tool := memtool.New(fsys, memtool.Options{MaxFileSize: -1})
		writeFile(t, fsys, caps, "max.txt", strings.Repeat("\n", caps.MaxFileBytes))
		if r := tool.Execute(ctx, view("/memories/max.txt")); r.IsError {
			t.Errorf("view of a %d-byte file: %.200s", caps.MaxFileBytes, r.String())
		}
		writeFile(t, fsys, caps, "big.txt", strings.Repeat("\n", caps.MaxFileBytes+1))
		checkRefused(t, tool.Execute(ctx, create("/memories/big.txt", strings.Repeat("\n", caps.MaxFileBytes+1))), "create /memories/big.txt")
		if _, err := fsys.Stat(ctx, "big.txt"); !errors.Is(err, memtool.ErrNotExist) {
			t.Errorf("after the refused create: Stat err = %v, want ErrNotExist", err)
		}
		return
	}
	for _, tc := range []struct {
		lines int
		isErr bool
	}{{999999, false}, {1000000, true}} {
		fsys := newFS(t)
		writeFile(t, fsys, caps, "big.txt", strings.Repeat("\n", tc.lines))
		r := memtool.New(fsys, memtool.Options{}).Execute(ctx, view("/memories/big.txt"))
		if r.IsError != tc.isErr {
			t.Errorf("%d lines: IsError = %v, want %v (%.200s)", tc.lines, r.IsError, tc.isErr, r.String())
		}
		if tc.isErr {
			if diff := cmp.Diff("File /memories/big.txt exceeds maximum line limit of 999,999 lines.", r.String()); diff != "" {
				t.Errorf("line limit message (-want +got):\n%s", diff)
			}
		}
	}
}

// testTruncation checks the 16,000-character cut against an independent
// computation: the shown lines are exactly the longest prefix that fits.
func testTruncation(t *testing.T, newFS func(t *testing.T) memtool.FS) {
	ctx := context.Background()
	var lines []string
	for i := 1; i <= 900; i++ {
		lines = append(lines, fmt.Sprintf("entry %03d %s", i, strings.Repeat("é", i%50)))
	}
	content := strings.Join(lines, "\n")
	fsys := newFS(t)
	tool := memtool.New(fsys, memtool.Options{})
	mustOK(t, tool, create("/memories/long.txt", content))

	for _, start := range []int{1, 150} {
		in := view("/memories/long.txt")
		if start > 1 {
			in = viewRange("/memories/long.txt", []int{start, -1})
		}
		r := tool.Execute(ctx, in)
		if r.IsError {
			t.Fatalf("view: %s", r.String())
		}
		header := "Here's the content of /memories/long.txt with line numbers:\n"
		used, last := len([]rune(header)), start-1
		var want strings.Builder
		want.WriteString(header)
		for i := start; i <= len(lines); i++ {
			e := fmt.Sprintf("%6d\t%s", i, lines[i-1])
			if i > start {
				e = "\n" + e
			}
			if used+len([]rune(e)) > memtool.DefaultMaxViewChars {
				break
			}
			used += len([]rune(e))
			want.WriteString(e)
			last = i
		}
		if last == len(lines) {
			t.Fatalf("test content too short to be truncated")
		}
		want.WriteString(fmt.Sprintf("\n[Output truncated: a view shows at most 16,000 characters. Shown: lines %d-%d of %d. To read the rest, call view with \"view_range\": [%d, -1] (or a smaller range).]", start, last, len(lines), last+1))
		if diff := cmp.Diff(want.String(), r.String()); diff != "" {
			t.Errorf("view from %d (-want +got):\n%s", start, diff)
		}
	}

	// A line that does not fit is cut inside; view_range cannot show the
	// rest of it (it selects whole lines), so the notice says so and only
	// offers view_range for the lines after it.
	const split = " view cannot show the rest of that line, with or without view_range; to read it, first split the line with str_replace (replace a fragment near the cut with itself plus a newline), or make do with the part shown."
	hdr := func(name string) string { return "Here's the content of /memories/" + name + " with line numbers:\n" }
	long := strings.Repeat("x", 20000)
	for _, tc := range []struct {
		name, content string
		viewRange     []int
		want          string
	}{
		{"one.txt", long + "\nnext", nil,
			hdr("one.txt") + "     1\t" + strings.Repeat("x", 15934) +
				"\n[Output truncated: line 1 is longer than 16,000 characters (20,000) and was cut after character 15,934." + split +
				" To read from line 2 on, call view with \"view_range\": [2, -1].]"},
		{"last.txt", "a\n" + long, []int{2, -1},
			hdr("last.txt") + "     2\t" + strings.Repeat("x", 15933) +
				"\n[Output truncated: line 2 is longer than 16,000 characters (20,000) and was cut after character 15,933." + split + "]"},
		{"tight.txt", strings.Repeat("é", 15990) + "\n", []int{1, 1},
			hdr("tight.txt") + "     1\t" + strings.Repeat("é", 15932) +
				"\n[Output truncated: line 1 (15,990 characters) does not fit in one view of at most 16,000 characters with its header and was cut after character 15,932." + split +
				" To read from line 2 on, call view with \"view_range\": [2, -1].]"},
	} {
		mustOK(t, tool, create("/memories/"+tc.name, tc.content))
		in := view("/memories/" + tc.name)
		if tc.viewRange != nil {
			in = viewRange("/memories/"+tc.name, tc.viewRange)
		}
		r := tool.Execute(ctx, in)
		if diff := cmp.Diff(tc.want, r.String()); diff != "" || r.IsError {
			t.Errorf("%s: IsError=%v (-want +got):\n%s", tc.name, r.IsError, diff)
		}
		if got := len([]rune(r.String())) - len([]rune(tc.want[strings.Index(tc.want, "\n[Output"):])); got != memtool.DefaultMaxViewChars {
			t.Errorf("%s: %d characters before the notice, want %d", tc.name, got, memtool.DefaultMaxViewChars)
		}
	}
}

func testImage(t *testing.T, newFS func(t *testing.T) memtool.FS, caps Capabilities) {
	fsys := newFS(t)
	tool := memtool.New(fsys, memtool.Options{})
	if !writeFile(t, fsys, caps, "p.png", pngBytes) {
		// A text-only backend refused the image (checked by writeFile):
		// there is nothing to view.
		r := tool.Execute(context.Background(), view("/memories/p.png"))
		if diff := cmp.Diff("The path /memories/p.png does not exist. Please provide a valid path.", r.String()); diff != "" || !r.IsError {
			t.Errorf("view of the refused image IsError=%v (-want +got):\n%s", r.IsError, diff)
		}
		return
	}
	r := mustOK(t, tool, view("/memories/p.png"))
	want := []memtool.Block{{Type: memtool.BlockImage, MediaType: "image/png", Data: base64.StdEncoding.EncodeToString([]byte(pngBytes))}}
	if diff := cmp.Diff(want, r.Content); diff != "" {
		t.Errorf("image content (-want +got):\n%s", diff)
	}
}

// testContract checks the FS methods directly.
func testContract(t *testing.T, newFS func(t *testing.T) memtool.FS) {
	ctx := context.Background()
	fsys := newFS(t)
	is := func(what string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: err = %v, want %v", what, err, want)
		}
	}
	if info, err := fsys.Stat(ctx, ""); err != nil || info.Kind != memtool.KindDir {
		t.Fatalf("Stat(root) = %+v, %v; want a directory", info, err)
	}
	if entries, err := fsys.ReadDir(ctx, ""); err != nil || len(entries) != 0 {
		t.Fatalf("ReadDir(root) of a new FS = %v, %v", entries, err)
	}
	v1, err := fsys.WriteFile(ctx, "d/f", []byte("one"), "")
	if err != nil || v1 == "" {
		t.Fatalf("WriteFile create = %q, %v", v1, err)
	}
	data, v, err := fsys.ReadFile(ctx, "d/f", -1)
	if err != nil || string(data) != "one" || v != v1 {
		t.Fatalf("ReadFile = %q, %q, %v; want one, %q", data, v, err, v1)
	}
	_, err = fsys.WriteFile(ctx, "d/f", []byte("x"), "")
	is("create over file", err, memtool.ErrExist)
	_, err = fsys.WriteFile(ctx, "d", []byte("x"), "")
	is("create over dir", err, memtool.ErrExist)
	_, err = fsys.WriteFile(ctx, "d/f/g", []byte("x"), "")
	is("create under file", err, memtool.ErrNotDir)
	_, err = fsys.WriteFile(ctx, "d/f", []byte("x"), memtool.Version("stale"))
	is("replace with stale version", err, memtool.ErrConflict)
	_, err = fsys.WriteFile(ctx, "d/none", []byte("x"), v1)
	is("replace missing", err, memtool.ErrConflict)
	_, err = fsys.WriteFile(ctx, "d", []byte("x"), v1)
	is("replace dir", err, memtool.ErrIsDir)
	v2, err := fsys.WriteFile(ctx, "d/f", []byte("two"), v1)
	if err != nil || v2 == v1 {
		t.Fatalf("replace = %q, %v", v2, err)
	}
	_, err = fsys.WriteFile(ctx, "d/f", []byte("three"), v1)
	is("replace with superseded version", err, memtool.ErrConflict)
	_, _, err = fsys.ReadFile(ctx, "d/f", 2)
	is("ReadFile over limit", err, memtool.ErrTooLarge)
	_, _, err = fsys.ReadFile(ctx, "d", -1)
	is("ReadFile dir", err, memtool.ErrIsDir)
	_, _, err = fsys.ReadFile(ctx, "nope", -1)
	is("ReadFile missing", err, memtool.ErrNotExist)
	_, err = fsys.Stat(ctx, "d/f/x")
	is("Stat under file", err, memtool.ErrNotDir)
	_, err = fsys.ReadDir(ctx, "d/f")
	is("ReadDir file", err, memtool.ErrNotDir)
	if info, err := fsys.Stat(ctx, "d/f"); err != nil || info.Kind != memtool.KindFile || info.Size != 3 {
		t.Errorf("Stat(d/f) = %+v, %v", info, err)
	}

	if _, err := fsys.WriteFile(ctx, "e", []byte("E"), ""); err != nil {
		t.Fatal(err)
	}
	is("rename onto file", fsys.Rename(ctx, "e", "d/f"), memtool.ErrExist)
	is("rename onto dir", fsys.Rename(ctx, "e", "d"), memtool.ErrExist)
	is("rename missing", fsys.Rename(ctx, "nope", "new/x"), memtool.ErrNotExist)
	_, err = fsys.Stat(ctx, "new")
	is("parents of a failed rename", err, memtool.ErrNotExist)
	is("rename under file", fsys.Rename(ctx, "e", "d/f/e"), memtool.ErrNotDir)
	if err := fsys.Rename(ctx, "d", "x/y"); err != nil {
		t.Fatalf("rename dir: %v", err)
	}
	is("Remove missing", fsys.Remove(ctx, "d"), memtool.ErrNotExist)
	if diff := cmp.Diff(map[string]string{"e": "E", "x/y/f": "two"}, Tree(t, fsys)); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	if err := fsys.Remove(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"e": "E"}, Tree(t, fsys)); diff != "" {
		t.Errorf("tree after Remove (-want +got):\n%s", diff)
	}
}

// racyFS changes a file behind the engine's back between its read and its
// conditional write, as another process writing the same store would: the
// next races conditional writes first replace the content with
// change(current content).
type racyFS struct {
	memtool.FS
	change func(string) string
	mu     sync.Mutex
	races  int
}

func (r *racyFS) WriteFile(ctx context.Context, name string, data []byte, ifMatch memtool.Version) (memtool.Version, error) {
	if ifMatch != "" {
		r.mu.Lock()
		race := r.races > 0
		if race {
			r.races--
		}
		r.mu.Unlock()
		if race {
			cur, v, err := r.FS.ReadFile(ctx, name, -1)
			if err != nil {
				return "", err
			}
			if _, err := r.FS.WriteFile(ctx, name, []byte(r.change(string(cur))), v); err != nil {
				return "", err
			}
		}
	}
	return r.FS.WriteFile(ctx, name, data, ifMatch)
}

// testConflict checks what an edit does when its conditional write loses a
// race: re-applied on the fresh content when it still applies cleanly,
// refused with "view the file again" when it no longer applies or keeps
// losing; never a lost update.
func testConflict(t *testing.T, newFS func(t *testing.T) memtool.FS, combine bool) {
	replaced := func(string) string { return "changed elsewhere" }
	appended := func(s string) string { return s + "\nmore" }
	const f = "/memories/f.txt"
	gaveUp := "Error: /memories/f.txt was changed by another writer while this command ran; nothing was written. View the file again and retry."
	for _, tc := range []struct {
		name     string
		initial  string // "original" if empty
		attempts int
		change   func(string) string
		races    int
		input    []byte
		want     string
		isErr    bool
		final    string
	}{
		{name: "str_replace-no-longer-applies", change: replaced, races: 1,
			input: strReplace(f, "original", "mine"), isErr: true,
			want:  "Error: /memories/f.txt was changed by another writer while this str_replace ran, and the edit no longer applies to the new content: No replacement was performed, old_str `original` did not appear verbatim in /memories/f.txt. Nothing was written; view the file again and retry.",
			final: "changed elsewhere"},
		{name: "str_replace-reapplied", change: appended, races: 1,
			input: strReplace(f, "original", "mine"),
			want:  snipHdr + numbered(1, "mine", "more"), final: "mine\nmore"},
		{name: "insert-reapplied", change: replaced, races: 1,
			input: insert(f, 0, "mine"), want: "The file /memories/f.txt has been edited.", final: "mine\nchanged elsewhere"},
		{name: "insert-out-of-range", initial: "original\nsecond", change: replaced, races: 1,
			input: insert(f, 2, "mine"), isErr: true,
			want:  "Error: /memories/f.txt was changed by another writer while this insert ran, and the edit no longer applies to the new content: Error: Invalid `insert_line` parameter: 2. It should be within the range of lines of the file: [0, 1] Nothing was written; view the file again and retry.",
			final: "changed elsewhere"},
		{name: "keeps-losing", attempts: 3, change: appended, races: 3,
			input: strReplace(f, "original", "mine"), isErr: true, want: gaveUp,
			final: "original\nmore\nmore\nmore"},
		{name: "reapply-disabled", attempts: 1, change: appended, races: 1,
			input: insert(f, 0, "mine"), isErr: true, want: gaveUp, final: "original\nmore"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := &racyFS{FS: newFS(t), change: tc.change}
			tool := memtool.New(fsys, memtool.Options{EditAttempts: tc.attempts, CombineEdits: combine})
			initial := tc.initial
			if initial == "" {
				initial = "original"
			}
			mustOK(t, tool, create(f, initial))
			fsys.races = tc.races
			r := tool.Execute(context.Background(), tc.input)
			if diff := cmp.Diff(tc.want, r.String()); diff != "" || r.IsError != tc.isErr {
				t.Errorf("Execute(%s) IsError=%v (-want +got):\n%s", tc.input, r.IsError, diff)
			}
			if fsys.races != 0 {
				t.Errorf("%d injected races did not happen", fsys.races)
			}
			if diff := cmp.Diff(map[string]string{"f.txt": tc.final}, Tree(t, fsys)); diff != "" {
				t.Errorf("tree (-want +got):\n%s", diff)
			}
		})
	}
}

func testConcurrency(t *testing.T, newFS func(t *testing.T) memtool.FS, combine bool) {
	ctx := context.Background()
	const n = 20
	run := func(tool *memtool.Tool, inputs [][]byte) []memtool.Result {
		res := make([]memtool.Result, len(inputs))
		var wg sync.WaitGroup
		for i, in := range inputs {
			wg.Go(func() { res[i] = tool.Execute(ctx, in) })
		}
		wg.Wait()
		return res
	}

	t.Run("str_replace-distinct-lines", func(t *testing.T) {
		fsys := newFS(t)
		tool := memtool.New(fsys, memtool.Options{CombineEdits: combine})
		var lines, want, inputs []string
		for i := range n {
			lines = append(lines, fmt.Sprintf("item-%02d: todo", i))
			want = append(want, fmt.Sprintf("item-%02d: done", i))
		}
		mustOK(t, tool, create("/memories/list.txt", strings.Join(lines, "\n")))
		var ins [][]byte
		for i := range n {
			ins = append(ins, strReplace("/memories/list.txt", fmt.Sprintf("item-%02d: todo", i), fmt.Sprintf("item-%02d: done", i)))
		}
		_ = inputs
		for i, r := range run(tool, ins) {
			if r.IsError {
				t.Errorf("call %d: %s", i, r.String())
			}
		}
		if diff := cmp.Diff(map[string]string{"list.txt": strings.Join(want, "\n")}, Tree(t, fsys)); diff != "" {
			t.Errorf("lost updates (-want +got):\n%s", diff)
		}
	})

	t.Run("inserts", func(t *testing.T) {
		fsys := newFS(t)
		tool := memtool.New(fsys, memtool.Options{CombineEdits: combine})
		mustOK(t, tool, create("/memories/log.txt", "head"))
		var ins [][]byte
		for i := range n {
			ins = append(ins, insert("/memories/log.txt", 1, fmt.Sprintf("entry %02d", i)))
		}
		for i, r := range run(tool, ins) {
			if r.IsError {
				t.Errorf("call %d: %s", i, r.String())
			}
		}
		got := strings.Split(Tree(t, fsys)["log.txt"], "\n")
		if len(got) != n+1 || got[0] != "head" {
			t.Fatalf("log has %d lines, want %d: %q", len(got), n+1, got)
		}
		seen := map[string]bool{}
		for _, l := range got[1:] {
			seen[l] = true
		}
		for i := range n {
			if !seen[fmt.Sprintf("entry %02d", i)] {
				t.Errorf("entry %02d lost", i)
			}
		}
	})

	t.Run("renames-onto-one-destination", func(t *testing.T) {
		for trial := range 50 {
			fsys := newFS(t)
			tool := memtool.New(fsys, memtool.Options{CombineEdits: combine})
			mustOK(t, tool, create("/memories/a", "A"))
			mustOK(t, tool, create("/memories/b", "B"))
			res := run(tool, [][]byte{rename("/memories/a", "/memories/dst"), rename("/memories/b", "/memories/dst")})
			ok := 0
			for _, r := range res {
				if !r.IsError {
					ok++
				} else if r.String() != "Error: The destination /memories/dst already exists" {
					t.Errorf("trial %d: unexpected error %q", trial, r.String())
				}
			}
			tree := Tree(t, fsys)
			if ok != 1 || len(tree) != 2 || (tree["dst"] != "A" && tree["dst"] != "B") {
				t.Fatalf("trial %d: %d successes, tree %v; want exactly one rename to win", trial, ok, tree)
			}
		}
	})

	t.Run("delete-dir-vs-writes-under-it", func(t *testing.T) {
		for trial := range 20 {
			fsys := newFS(t)
			tool := memtool.New(fsys, memtool.Options{CombineEdits: combine})
			mustOK(t, tool, create("/memories/d/seed", "s"))
			ins := [][]byte{del("/memories/d")}
			for i := range 5 {
				ins = append(ins, create(fmt.Sprintf("/memories/d/f%d", i), "x"))
			}
			res := run(tool, ins)
			if res[0].IsError {
				t.Fatalf("trial %d: delete failed: %s", trial, res[0].String())
			}
			// Every create either happened after the delete (file present)
			// or before it (file gone): a reported success is never a
			// half-deleted directory.
			tree := Tree(t, fsys)
			for i, r := range res[1:] {
				if r.IsError {
					t.Errorf("trial %d: create %d: %s", trial, i, r.String())
				}
			}
			if _, ok := tree["d/seed"]; ok {
				t.Fatalf("trial %d: delete reported success but d/seed survived", trial)
			}
		}
	})

	t.Run("mixed-no-error", func(t *testing.T) {
		fsys := newFS(t)
		tool := memtool.New(fsys, memtool.Options{CombineEdits: combine})
		var ins [][]byte
		for i := range n {
			p := fmt.Sprintf("/memories/dir%d/f.txt", i%4)
			ins = append(ins, create(fmt.Sprintf("/memories/dir%d/g%d.txt", i%4, i), "x"), view(p), view("/memories"))
		}
		for _, r := range run(tool, ins) {
			if strings.Contains(r.String(), "storage error") {
				t.Errorf("unexpected storage error: %s", r.String())
			}
		}
	})
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func testSweep(t *testing.T, newFS func(t *testing.T) memtool.FS) {
	fsys := newFS(t)
	if _, ok := fsys.(memtool.Toucher); !ok {
		t.Skip("FS does not track access times")
	}
	ctx := context.Background()
	day := 24 * time.Hour
	clock := &fakeClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	tool := memtool.New(fsys, memtool.Options{Now: clock.Now})
	mustOK(t, tool, create("/memories/kept.txt", "k"))
	mustOK(t, tool, create("/memories/stale.txt", "s"))
	mustOK(t, tool, create("/memories/old/deep/x.txt", "x"))
	mustOK(t, tool, create("/memories/mixed/old.txt", "o"))
	mustOK(t, tool, create("/memories/mixed/new.txt", "n"))
	clock.Advance(10 * day)
	mustOK(t, tool, view("/memories/kept.txt"))
	mustOK(t, tool, strReplace("/memories/mixed/new.txt", "n", "N"))
	clock.Advance(21 * day) // stale files are now 31 days old, kept.txt 21

	deleted, err := tool.Sweep(ctx, 30*day)
	if err != nil {
		t.Fatal(err)
	}
	wantDeleted := []string{"/memories/mixed/old.txt", "/memories/old/deep/x.txt", "/memories/stale.txt"}
	if diff := cmp.Diff(wantDeleted, deleted, cmpSorted); diff != "" {
		t.Errorf("Sweep deleted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"kept.txt": "k", "mixed/new.txt": "N"}, Tree(t, fsys)); diff != "" {
		t.Errorf("tree after sweep (-want +got):\n%s", diff)
	}
	if _, err := fsys.Stat(ctx, "old"); !errors.Is(err, memtool.ErrNotExist) {
		t.Errorf("emptied directory old: Stat err = %v, want ErrNotExist", err)
	}
	// Nothing is older than 30 days any more.
	if deleted, err := tool.Sweep(ctx, 30*day); err != nil || len(deleted) != 0 {
		t.Errorf("second Sweep = %v, %v; want nothing", deleted, err)
	}
}

var cmpSorted = cmp.Transformer("sorted", func(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})
