package console

import (
	"bytes"
	"html/template"
	"path"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// md renders CommonMark with GitHub's tables, strikethrough, autolinks and
// task lists. It keeps goldmark's safe defaults, which are this file's
// contract: raw HTML in the source is dropped (an HTML comment says so),
// and a link whose URL has a dangerous scheme (javascript:, vbscript:,
// file:, data: other than images) gets an empty URL. Every text is
// escaped. Images become links (imageAsLink): the preview loads nothing,
// from another origin or this one. What a memory holds is untrusted (an
// agent wrote it), so the preview adds no way to run script, or to tell a
// tracker the page was opened, on top of the page's CSP.
var md = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	// goldmark's HTML renderer registers at priority 1000; a lower number
	// is registered later and wins for the kinds it renders.
	goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(imageAsLink{}, 100))),
)

// imageAsLink renders an image as a link to it, "image: <alt text>".
type imageAsLink struct{}

func (imageAsLink) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindImage, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		img := n.(*ast.Image)
		w.WriteString(`<a class="image" href="`)
		if dest := util.URLEscape(img.Destination, true); !html.IsDangerousURL(dest) {
			w.Write(util.EscapeHTML(dest))
		}
		w.WriteString(`">image: `)
		var alt bytes.Buffer
		altText(&alt, src, n)
		w.Write(util.EscapeHTML(alt.Bytes()))
		w.WriteString("</a>")
		return ast.WalkSkipChildren, nil
	})
}

// altText writes the plain text below n.
func altText(b *bytes.Buffer, src []byte, n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
		case *ast.String:
			b.Write(c.Value)
		default:
			altText(b, src, c)
		}
	}
}

// isMarkdown reports whether a memory's path names a Markdown file.
func isMarkdown(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".md", ".markdown", ".mdown", ".mkd":
		return true
	}
	return false
}

// renderMarkdown returns src rendered as safe HTML (see md).
func renderMarkdown(src string) (template.HTML, error) {
	var b bytes.Buffer
	if err := md.Convert([]byte(src), &b); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil //nolint:gosec // goldmark escapes text and drops raw HTML and dangerous URLs (md's contract)
}
