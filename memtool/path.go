package memtool

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/trovehq/trove/internal/pathrune"
)

// Limits enforced by [ParsePath].
const (
	// RootPath is the virtual path of the memory directory.
	RootPath = "/memories"
	// MaxPathBytes is the longest virtual path accepted, in bytes.
	MaxPathBytes = 1024
	// MaxNameBytes is the longest single path segment accepted, in bytes.
	MaxNameBytes = 255
)

// Path is a validated virtual path under /memories.
type Path struct {
	// Raw is the path exactly as the model sent it; it is what messages echo.
	Raw string
	// Rel is the slash-separated path relative to the memory root, without
	// leading or trailing slash; "" is the root itself. Every segment is a
	// valid name: non-empty, not "." or "..", at most MaxNameBytes bytes,
	// valid UTF-8 without control characters, invisible or space-like
	// characters (pathrune.Hidden), backslashes or
	// percent-encoded traversal.
	Rel string
	// TrailingSlash reports whether Raw ended in "/" (other than the root
	// spelled "/memories/"); commands accept it only where a directory is
	// meant.
	TrailingSlash bool
}

// IsRoot reports whether p names the memory root itself.
func (p Path) IsRoot() bool { return p.Rel == "" }

// Display returns the virtual path without a trailing slash ("/memories" or
// "/memories/a/b"); listings use it to build child paths.
func (p Path) Display() string {
	if p.Rel == "" {
		return RootPath
	}
	return RootPath + "/" + p.Rel
}

// PathError is returned by ParsePath. Its Error text is the complete message
// for the model (without the "Error: " prefix) and never contains a host path.
type PathError struct {
	Path   string // the raw virtual path
	Reason string
}

func (e *PathError) Error() string { return e.Reason }

// ParsePath validates a virtual path. It is a pure function. The accepted
// language is: exactly "/memories", "/memories/", or "/memories/" followed by
// one or more names separated by single slashes, optionally followed by one
// trailing slash. A name is 1..MaxNameBytes bytes of valid UTF-8, is not "."
// or "..", and contains no NUL or other C0/C1 control character, no DEL, no
// U+2028/U+2029, nothing that renders invisibly or as a plain space (the
// store's rule, pathrune.Hidden: format characters, default-ignorable code
// points, bidi controls, spaces other than U+0020), no backslash and no percent-encoded '.', '/', '\', '%' or
// control character (any hex case). The whole path is at most MaxPathBytes
// bytes. There is no decoding or normalisation: NFC and NFD spellings are
// different names.
func ParsePath(raw string) (Path, error) {
	fail := func(format string, args ...any) (Path, error) {
		return Path{}, &PathError{Path: raw, Reason: fmt.Sprintf(format, args...)}
	}
	if len(raw) > MaxPathBytes {
		return fail("Invalid path: the path is %d bytes long; the maximum is %d bytes. Use shorter directory and file names.", len(raw), MaxPathBytes)
	}
	if !utf8.ValidString(raw) {
		return fail("Invalid path %s: the path is not valid UTF-8.", strconv.QuoteToASCII(raw))
	}
	if i := strings.IndexFunc(raw, isForbiddenRune); i >= 0 {
		return fail("Invalid path %s: control characters (including newlines, tabs and U+2028/U+2029) are not allowed in paths.", strconv.QuoteToASCII(raw))
	}
	if i := strings.IndexFunc(raw, pathrune.Hidden); i >= 0 {
		r, _ := utf8.DecodeRuneInString(raw[i:])
		return fail("Invalid path %s: characters that are invisible or look like a space (here U+%04X) are not allowed in paths; use visible characters, and a plain space (U+0020) for spaces.", strconv.QuoteToASCII(raw), r)
	}
	if raw != RootPath && !strings.HasPrefix(raw, RootPath+"/") {
		return fail("Invalid path %s: memory paths must be %s or start with %s/ (for example %s/notes.md).", raw, RootPath, RootPath, RootPath)
	}
	if strings.ContainsRune(raw, '\\') {
		return fail("Invalid path %s: backslashes are not allowed; use \"/\" to separate directories.", raw)
	}
	if hasEncodedTraversal(raw) {
		return fail("Invalid path %s: percent-encoded '.', '/', '\\', '%%' or control characters (such as %%2e or %%2f) are not allowed; write names literally.", raw)
	}
	rest := strings.TrimPrefix(raw, RootPath)
	rest = strings.TrimPrefix(rest, "/")
	p := Path{Raw: raw}
	if rest == "" {
		return p, nil // "/memories" or "/memories/"
	}
	if strings.HasSuffix(rest, "/") {
		p.TrailingSlash = true
		rest = rest[:len(rest)-1]
	}
	for seg := range strings.SplitSeq(rest, "/") {
		switch {
		case seg == "":
			return fail("Invalid path %s: empty path segments (\"//\") are not allowed.", raw)
		case seg == "." || seg == "..":
			return fail("Invalid path %s: \".\" and \"..\" segments are not allowed; write the path without them, e.g. %s/notes.md.", raw, RootPath)
		case len(seg) > MaxNameBytes:
			return fail("Invalid path: the name %q... is %d bytes long; the maximum is %d bytes per name.", truncateUTF8(seg, 32), len(seg), MaxNameBytes)
		}
	}
	p.Rel = rest
	return p, nil
}

// isForbiddenRune reports C0 and C1 controls, DEL and the Unicode line and
// paragraph separators.
func isForbiddenRune(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == '\u2028' || r == '\u2029'
}

// hasEncodedTraversal reports a '%' followed by two hex digits that decode to
// '.', '/', '\\', '%', a C0 control character or DEL.
func hasEncodedTraversal(s string) bool {
	for i := 0; i+2 < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			continue
		}
		b := hi<<4 | lo
		if b == '.' || b == '/' || b == '\\' || b == '%' || b < 0x20 || b == 0x7f {
			return true
		}
	}
	return false
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// truncateUTF8 returns at most n bytes of s, cut on a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// validName reports whether a directory entry name could be addressed by a
// path accepted by ParsePath. Listings skip names that fail it.
func validName(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > MaxNameBytes || !utf8.ValidString(name) {
		return false
	}
	if strings.ContainsAny(name, "/\\") || strings.IndexFunc(name, isForbiddenRune) >= 0 || strings.IndexFunc(name, pathrune.Hidden) >= 0 || hasEncodedTraversal(name) {
		return false
	}
	return true
}
