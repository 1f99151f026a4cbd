package sqlite

import (
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"

	"modernc.org/sqlite"

	"github.com/trovehq/trove"
)

// What memories_search indexes (migration 0019): the words of a memory's
// path and content as trove.SearchWords gives them (the rule a query's
// words follow, so a document and a query are split and folded by the same
// code), in path and content; and the same words each prefixed with the
// store's tag, in spath and scontent, so that the words of one store are
// FTS5 terms of their own. A search of named stores asks for those terms
// (ftsQuery): FTS5 reads, and bm25 counts, only those stores' entries.

// scopeTag is what precedes every word of a store's scoped terms: U+E000
// (a private-use character, which the tokenizer keeps in a token and text
// seldom holds, so that a plain word is almost never also a scoped term),
// the store's key (store_search_keys) in decimal, and 'x', which ends the
// key (a word may start with a digit).
func scopeTag(key int64) string {
	return "\ue000" + strconv.FormatInt(key, 10) + "x"
}

// indexText returns the text memories_search indexes for text: its words
// (trove.SearchWords), each prefixed with tag, separated by spaces. The
// tokenizer ('ascii': a token is a run of ASCII letters and digits and
// non-ASCII characters) reads each as one token, as it does a query's: a
// word holds no other ASCII character (trove.IsSearchWordRune), and a tag
// is U+E000, digits and 'x'.
func indexText(tag, text string) string {
	words := trove.SearchWords(text)
	if len(words) == 0 {
		return ""
	}
	return tag + strings.Join(words, " "+tag)
}

// wordsFunc is SQL's trove_words(text BLOB, key INTEGER or NULL):
// indexText of text, under scopeTag(key) when key is not NULL. The text
// comes as a BLOB (CAST(... AS BLOB)) so that a NUL byte does not end it;
// invalid UTF-8 separates words, as in trove.SearchWordSpans.
func wordsFunc(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	var text string
	switch v := args[0].(type) {
	case nil:
		return nil, nil
	case []byte:
		text = string(v)
	case string:
		text = v
	default:
		return nil, fmt.Errorf("trove_words: text must be a blob, got %T", args[0])
	}
	tag := ""
	if args[1] != nil {
		key, ok := args[1].(int64)
		if !ok {
			return nil, fmt.Errorf("trove_words: key must be an integer or NULL, got %T", args[1])
		}
		tag = scopeTag(key)
	}
	return indexText(tag, text), nil
}
