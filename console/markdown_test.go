package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trovehq/trove"
)

// hostileMarkdown is a Markdown memory an attacker could have made an
// agent write: script as raw HTML, a javascript: link, an event handler,
// and an image on another origin (a tracking pixel).
const hostileMarkdown = "# Plan\n\nSome *emphasis*, a [safe link](https://example.com/x) and a [bad link](javascript:window.pwned=1).\n\n" +
	"<script>window.pwned=2</script>\n\n<img src=x onerror=\"window.pwned=3\">\n\n![pixel](http://evil.example/pixel.png)\n\n" +
	"| a | b |\n|---|---|\n| 1 | 2 |\n"

// testMarkdownPreview opens a Markdown memory's preview: the document is
// rendered (heading, emphasis, table), nothing in it runs or loads from
// another origin, and a memory that is not Markdown offers no preview.
func testMarkdownPreview(t *testing.T, bctx context.Context) {
	e := newEnv(t, nil)
	ctx := context.Background()
	st, err := e.api.CreateStore(ctx, trove.CreateStoreParams{Name: "md"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.api.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/notes/plan.md", Content: hostileMarkdown})
	if err != nil {
		t.Fatal(err)
	}
	txt, err := e.api.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/notes/plain.txt", Content: "# not a heading\n"})
	if err != nil {
		t.Fatal(err)
	}
	base := e.url + "/console/stores/" + st.ID + "/memories/"
	tb := newTab(t, bctx)
	e.signIn(t, tb, e.key)

	tb.run(t, "source first", chromedp.Navigate(base+m.ID), waitVisible("#memory-content"))
	if got := tb.text(t, "#memory-content"); got != hostileMarkdown {
		t.Errorf("source view shows %q", got)
	}
	tb.run(t, "preview", click("#show-preview"), waitVisible("#memory-preview"))
	if got := tb.text(t, "#memory-preview h1"); got != "Plan" {
		t.Errorf("preview heading %q, want Plan", got)
	}
	if got := tb.text(t, "#memory-preview em"); got != "emphasis" {
		t.Errorf("preview emphasis %q", got)
	}
	if n := eval[int](t, tb, `document.querySelectorAll("#memory-preview table td").length`); n != 2 {
		t.Errorf("preview table has %d cells, want 2", n)
	}
	if n := eval[int](t, tb, `document.querySelectorAll("#memory-preview script, #memory-preview [onerror]").length`); n != 0 {
		t.Errorf("preview holds %d script elements or handlers", n)
	}
	if got := eval[string](t, tb, `String(window.pwned)`); got != "undefined" {
		t.Errorf("the memory's script ran: window.pwned = %s", got)
	}
	links := eval[[]string](t, tb, `Array.from(document.querySelectorAll("#memory-preview a")).map(a => a.getAttribute("href"))`)
	for _, h := range links {
		if strings.HasPrefix(strings.ToLower(h), "javascript:") {
			t.Errorf("preview keeps the link %q", h)
		}
	}
	if !strings.Contains(strings.Join(links, " "), "https://example.com/x") {
		t.Errorf("preview links %q lack the safe link", links)
	}
	if f := tb.foreign(e.url); len(f) > 0 {
		t.Errorf("the preview made requests to other origins: %q", f)
	}
	if got := tb.text(t, "#memory-preview a.image"); got != "image: pixel" {
		t.Errorf("the image shows as %q, want a link \"image: pixel\"", got)
	}
	tb.quiet(t) // no dialog, console call, error or CSP refusal
	tb.run(t, "back to source", click("#show-source"), waitVisible("#memory-content"))

	tb.run(t, "plain text", chromedp.Navigate(base+txt.ID), waitVisible("#memory-content"))
	if n := eval[int](t, tb, `document.querySelectorAll("#show-preview").length`); n != 0 {
		t.Errorf("a .txt memory offers a Markdown preview")
	}
}
