package storetree

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxNameBytes is the longest file name (one path segment) a local file
// system holds: NAME_MAX on Linux and macOS, in bytes.
const MaxNameBytes = 255

// MemPath turns a relative name ("a/b.md"; "" for the root) into a memory
// path ("/a/b.md"; "/" for the root).
func MemPath(rel string) string { return "/" + rel }

// Rel turns a memory path into a relative name: "/a/b.md" → "a/b.md",
// "/" → "".
func Rel(p string) string { return strings.TrimPrefix(p, "/") }

// Parent returns the directory holding p: "/a/b" → "/a", "/a" → "/".
// It works alike on relative names: "a/b" → "a", "a" → "".
func Parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	switch {
	case i < 0:
		return ""
	case i == 0:
		return "/"
	}
	return p[:i]
}

// Base returns the last segment of p ("/a/b.md" → "b.md", "a" → "a").
func Base(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// Join returns the path of name inside directory dir ("/" or "/a").
func Join(dir, name string) string {
	if dir == "/" || dir == "" {
		return "/" + name
	}
	return dir + "/" + name
}

// Prefix returns the list prefix of directory dir: "/" for the root ("/"
// or ""), "/a/b/" for "/a/b".
func Prefix(dir string) string {
	if dir == "/" || dir == "" {
		return "/"
	}
	return dir + "/"
}

// IsBelow reports whether p lies strictly below directory dir, by whole
// segments ("/a/b" is below "/a"; "/ab" is not; everything but "/" is
// below "/").
func IsBelow(p, dir string) bool {
	if dir == "/" || dir == "" {
		return p != dir && p != "/"
	}
	return len(p) > len(dir) && strings.HasPrefix(p, dir) && p[len(dir)] == '/'
}

// Ancestors calls fn for every directory above p, nearest first, the root
// excluded.
func Ancestors(p string, fn func(dir string)) {
	for d := Parent(p); d != "/" && d != ""; d = Parent(d) {
		fn(d)
	}
}

// Moved returns where p goes when directory from is renamed to to (p is
// from itself or below it).
func Moved(p, from, to string) string { return to + strings.TrimPrefix(p, from) }

// LocalProblem says why the memory path p cannot be a local file path
// (a segment longer than MaxNameBytes bytes), or "" when it can. Every other
// valid memory path is a valid relative path on Linux and macOS.
func LocalProblem(p string) string {
	for seg := range strings.SplitSeq(strings.TrimPrefix(p, "/"), "/") {
		if len(seg) > MaxNameBytes {
			return fmt.Sprintf("the name %q is %d bytes; local file names hold at most %d bytes, so it cannot be a local file", shorten(seg), len(seg), MaxNameBytes)
		}
	}
	return ""
}

// shorten cuts a name for a message.
func shorten(s string) string {
	if len(s) <= 40 {
		return s
	}
	return cutUTF8(s, 32) + "…"
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// conflictMark separates a conflict copy's stem from its tag.
const conflictMark = ".conflict-"

// ConflictName returns the name of a conflict copy of the memory path p,
// next to it:
//
//	<dir>/<stem>.conflict-<tag>-<yyyymmddThhmmssZ><ext>
//
// with "-2", "-3"… before the extension while taken reports the name as
// used. The last segment always fits MaxNameBytes: when it would not, the
// stem is cut (at a character boundary) and followed by "~" and 8 hex digits
// of the SHA-256 of the original name, so copies of different long names
// stay distinct and IsConflictCopyOf still recognises them. An extension
// longer than 16 bytes is treated as part of the stem. A tag over 8 bytes
// is cut to its first 8.
func ConflictName(p, tag string, now time.Time, taken func(string) bool) string {
	tag = cutUTF8(tag, 8)
	dir, base := path.Split(p)
	stem, ext := splitExt(base)
	stamp := now.UTC().Format("20060102T150405Z")
	for i := 1; ; i++ {
		suffix := conflictMark + tag + "-" + stamp
		if i > 1 {
			suffix += "-" + strconv.Itoa(i)
		}
		name := dir + conflictStem(stem, ext, base, len(suffix)) + suffix + ext
		if taken == nil || !taken(name) {
			return name
		}
	}
}

// conflictStem is the stem a conflict copy of base starts with when the
// rest of its name takes tail+len(ext) bytes.
func conflictStem(stem, ext, base string, tail int) string {
	// Leave room for the longest tail: a counter of up to 4 digits.
	room := MaxNameBytes - len(ext) - max(tail, conflictTail)
	if len(stem) <= room {
		return stem
	}
	sum := sha256.Sum256([]byte(base))
	return cutUTF8(stem, room-9) + "~" + hex.EncodeToString(sum[:4])
}

// conflictTail is the longest suffix ConflictName appends with a tag of 8
// characters: ".conflict-" + tag + "-" + stamp + "-NNNN".
const conflictTail = len(conflictMark) + 8 + 1 + len("20060102T150405Z") + 5

// splitExt splits a file name into stem and extension; a name that is all
// extension (".env") is all stem, and so is an extension over 16 bytes.
func splitExt(base string) (stem, ext string) {
	ext = path.Ext(base)
	stem = strings.TrimSuffix(base, ext)
	if stem == "" || len(ext) > 16 {
		return base, ""
	}
	return stem, ext
}

// IsConflictCopyOf reports whether q is named as a conflict copy of p (by
// ConflictName, with any tag and time).
func IsConflictCopyOf(p, q string) bool {
	dir, base := path.Split(p)
	qdir, qbase := path.Split(q)
	if dir != qdir {
		return false
	}
	stem, ext := splitExt(base)
	head := conflictStem(stem, ext, base, 0) + conflictMark
	return strings.HasPrefix(qbase, head) && strings.HasSuffix(qbase, ext) && len(qbase) >= len(head)+len(ext)
}
