package trove

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/trovehq/trove/internal/pathrune"
)

// ValidatePath checks a memory path against the API's rules and returns an
// EINVALID *Error naming the first broken rule, or nil. A valid path starts
// with "/", has 1 to maxSegments non-empty segments, no "." or ".." segment,
// no trailing "/", no control (Cc) characters, nothing that renders
// invisibly or as a plain space (pathrune.Hidden: format characters, other
// default-ignorable code points, bidi controls, spaces other than U+0020), is
// valid UTF-8 already in NFC, and is at most maxBytes bytes.
func ValidatePath(p string, maxBytes, maxSegments int) error {
	if len(p) < 2 || p[0] != '/' {
		return Errorf(EINVALID, "path must start with '/' and name at least one segment, got %q", p)
	}
	if len(p) > maxBytes {
		return Errorf(EINVALID, "path is %d bytes; the limit is %d bytes", len(p), maxBytes)
	}
	if !utf8.ValidString(p) {
		return Errorf(EINVALID, "path must be valid UTF-8")
	}
	for _, r := range p {
		if unicode.Is(unicode.Cc, r) {
			return Errorf(EINVALID, "path must not contain control characters (found U+%04X)", r)
		}
		if pathrune.Hidden(r) {
			return Errorf(EINVALID, "path must not contain characters that are invisible or look like a space (found U+%04X); use visible characters and U+0020 for spaces", r)
		}
	}
	if !norm.NFC.IsNormalString(p) {
		return Errorf(EINVALID, "path must be in Unicode NFC form")
	}
	if strings.HasSuffix(p, "/") {
		return Errorf(EINVALID, "path must not end with '/'")
	}
	segs := strings.Split(p[1:], "/")
	if len(segs) > maxSegments {
		return Errorf(EINVALID, "path has %d segments; the limit is %d", len(segs), maxSegments)
	}
	for _, s := range segs {
		switch s {
		case "":
			return Errorf(EINVALID, "path must not contain empty segments ('//')")
		case ".", "..":
			return Errorf(EINVALID, "path must not contain '.' or '..' segments")
		}
	}
	return nil
}

// ValidatePathPrefix checks a list prefix: "" or "/" (the whole store), or a
// path ending in "/" whose segments follow the path rules.
func ValidatePathPrefix(prefix string, maxBytes, maxSegments int) error {
	if prefix == "" || prefix == "/" {
		return nil
	}
	if !strings.HasSuffix(prefix, "/") {
		return Errorf(EINVALID, "path_prefix must end with '/', got %q", prefix)
	}
	if err := ValidatePath(strings.TrimSuffix(prefix, "/"), maxBytes, maxSegments); err != nil {
		return Errorf(EINVALID, "invalid path_prefix: %s", ErrorMessage(err))
	}
	return nil
}

// PathsOverlap reports whether a and b are the same path or one is an
// ancestor of the other by whole segments ("/a" and "/a/b" overlap; "/a" and
// "/ab" do not).
func PathsOverlap(a, b string) bool {
	if a == b {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	return strings.HasPrefix(b, a) && b[len(a)] == '/'
}

// Slug turns a store name into a mount directory name: lowercase, every run
// of characters other than ASCII letters and digits replaced by one "-",
// leading and trailing "-" trimmed; "store" if nothing is left.
func Slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return "store"
	}
	return b.String()
}
