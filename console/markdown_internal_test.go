package console

import (
	"strings"
	"testing"
)

func TestRenderMarkdown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src     string
		want, notWant []string
	}{
		{"heading and emphasis", "# Plan\n\nsome *em*\n", []string{"<h1>Plan</h1>", "<em>em</em>"}, nil},
		{"table", "| a | b |\n|---|---|\n| 1 | 2 |\n", []string{"<table>", "<td>1</td>"}, nil},
		{"raw html dropped", "<script>alert(1)</script>\n\nx <b onclick=alert(1)>y</b>\n", []string{"raw HTML omitted"}, []string{"<script", "onclick"}},
		{"javascript link emptied", "[x](javascript:alert(1))\n", []string{`<a href="">x</a>`}, []string{"javascript:"}},
		{"image as link", "![a <b> pixel](http://evil.example/p.png)\n", []string{`<a class="image" href="http://evil.example/p.png">image: a  pixel</a>`}, []string{"<img", "<b>"}},
		{"javascript image emptied", "![x](javascript:alert(1))\n", []string{`<a class="image" href="">image: x</a>`}, []string{"javascript:"}},
		{"text escaped", "a < b & \"c\"\n", []string{"a &lt; b &amp; &quot;c&quot;"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := renderMarkdown(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("renderMarkdown(%q) = %q, want it to contain %q", tc.src, got, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(strings.ToLower(string(got)), strings.ToLower(w)) {
					t.Errorf("renderMarkdown(%q) = %q, must not contain %q", tc.src, got, w)
				}
			}
		})
	}
}

func TestIsMarkdown(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{"/a.md": true, "/A.MD": true, "/x/readme.markdown": true, "/a.txt": false, "/md": false, "/a.md/b": false} {
		if got := isMarkdown(p); got != want {
			t.Errorf("isMarkdown(%q) = %v, want %v", p, got, want)
		}
	}
}
