package console

import (
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"
)

// funcs are the templates' helpers. They return plain strings: escaping is
// html/template's, by context.
var funcs = template.FuncMap{
	"storeURL":   storeURL,
	"statsURL":   func(id string) string { return storeURL(id) + "/stats" },
	"memoryURL":  memoryURL,
	"versionURL": versionURL,
	"historyURL": func(sid, mid string) string { return memoryURL(sid, mid) + "/history" },
	"diffURL": func(sid, mid, a, b string) string {
		return memoryURL(sid, mid) + "/diff?" + url.Values{"a": {a}, "b": {b}}.Encode()
	},
	"treeURL": func(sid, dir, cursor string) string {
		q := url.Values{"dir": {dir}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		return storeURL(sid) + "/tree?" + q.Encode()
	},
	"dirURL": func(sid, dir, cursor string) string {
		q := url.Values{"dir": {dir}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		return storeURL(sid) + "?" + q.Encode() + "#tree"
	},
	"newURL":          func(sid, dir string) string { return storeURL(sid) + "/new?" + url.Values{"dir": {dir}}.Encode() },
	"sessionURL":      func(id string) string { return Prefix + "sessions/" + url.PathEscape(id) },
	"dreamURL":        dreamURL,
	"envURL":          envURL,
	"webhookURL":      webhookURL,
	"envKeyRevokeURL": envKeyRevokeURL,
	"olderURL": func(id, cursor string) string {
		return Prefix + "sessions/" + url.PathEscape(id) + "?" + url.Values{"older": {cursor}}.Encode()
	},
	"pageURL": func(base, cursor string) string {
		sep := "?"
		if strings.Contains(base, "?") {
			sep = "&"
		}
		return base + sep + url.Values{"cursor": {cursor}}.Encode()
	},
	"searchURL": func(q, store, prefix, cursor string) string {
		v := url.Values{"q": {q}}
		if store != "" {
			v.Set("store", store)
		}
		if prefix != "" {
			v.Set("prefix", prefix)
		}
		if cursor != "" {
			v.Set("cursor", cursor)
		}
		return Prefix + "search?" + v.Encode()
	},
	"asOfURL": asOfURL,
	// dirOf is the directory of a memory path, with its trailing "/".
	"dirOf": func(p string) string { return p[:strings.LastIndexByte(p, '/')+1] },
	"asOfMemoryURL": func(sid, mid, at string) string {
		return storeURL(sid) + "/asof/" + url.PathEscape(mid) + "?" + url.Values{"at": {at}}.Encode()
	},
	// time and timep (relative, exact UTC on hover: when.go) are added by
	// parsePages with the handler's clock.
	"iso":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"bytes": humanBytes,
	"intp": func(n *int) string {
		if n == nil {
			return "–"
		}
		return humanBytes(*n)
	},
	"strp": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12]
		}
		return s
	},
	"shortp": func(s *string) string {
		if s == nil {
			return "–"
		}
		if len(*s) > 12 {
			return (*s)[:12]
		}
		return *s
	},
	// base is the last segment of a memory path or folded prefix.
	"base": func(p string) string {
		p = strings.TrimSuffix(p, "/")
		return p[strings.LastIndexByte(p, '/')+1:]
	},
	// trimSlash writes a tree directory ("/a/b/") as a directory path ("/a/b").
	"trimSlash": func(dir string) string { return strings.TrimSuffix(dir, "/") },
	// crumbs are the directories above and including dir, for a breadcrumb.
	"crumbs": func(dir string) []crumb {
		out := []crumb{{Name: "/", Dir: "/"}}
		acc := "/"
		for _, seg := range strings.Split(strings.Trim(dir, "/"), "/") {
			if seg == "" {
				continue
			}
			acc += seg + "/"
			out = append(out, crumb{Name: seg, Dir: acc})
		}
		return out
	},
	// nl is a newline, written right after <textarea> so that a content
	// starting with a newline keeps it (HTML drops the first one).
	"nl": func() string { return "\n" },
}

type crumb struct{ Name, Dir string }

func humanBytes(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1024*1024))
}

// envURL is an environment's console page.
func envURL(id string) string { return Prefix + "environments/" + url.PathEscape(id) }
