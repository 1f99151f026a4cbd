// Package pathrune holds Trove's one rule for the code points a memory path
// may not contain because a person cannot see them: they render as nothing,
// or as a plain space. Without it "/notes.md", "/notes.md\u034f" and
// "/notes.md\ufe0f" would be three memories that look like one, and
// "/my notes.md" and "/my\u00a0notes.md" two. The store (trove.ValidatePath,
// so core, sync and mount) and the memory tool (memtool.ParsePath) refuse the
// same set.
package pathrune

import "unicode"

// Hidden reports whether r renders invisibly or as a plain space:
//
//   - format characters (general category Cf: zero-width spaces and joiners,
//     the soft hyphen, bidirectional marks, embeddings, overrides and
//     isolates, tag characters),
//   - the rest of Unicode's Default_Ignorable_Code_Point property (variation
//     selectors, the combining grapheme joiner U+034F, Hangul fillers, and
//     the reserved default-ignorable ranges),
//   - bidirectional controls (Bidi_Control),
//   - every white space other than U+0020 SPACE (no-break and typographic
//     spaces, the ideographic space, line and paragraph separators, and the
//     control characters that are white space).
//
// ASCII letters, digits, punctuation and U+0020 itself are never hidden.
func Hidden(r rune) bool {
	if r == ' ' {
		return false
	}
	return unicode.In(r,
		unicode.Cf,
		unicode.Variation_Selector,
		unicode.Other_Default_Ignorable_Code_Point,
		unicode.Bidi_Control,
		unicode.White_Space,
	)
}
