package trove

import "unicode/utf8"

// msgContentNotUTF8 is the one message for memory content that is not
// valid UTF-8, wherever it is refused.
const msgContentNotUTF8 = "content must be valid UTF-8 text"

// CheckContentUTF8 returns nil when content is valid UTF-8, else the one
// EINVALID error for content that is not: core refuses such content with it,
// and every client path (httpapi.Client, sync, mount, import, apply, the
// memory tool and the MCP server) refuses it with it before sending, since
// JSON would silently replace each invalid byte with U+FFFD.
func CheckContentUTF8(content string) error {
	if utf8.ValidString(content) {
		return nil
	}
	return Errorf(EINVALID, msgContentNotUTF8)
}

// CheckContentUTF8Bytes is CheckContentUTF8 for content held as bytes.
func CheckContentUTF8Bytes(content []byte) error {
	if utf8.Valid(content) {
		return nil
	}
	return Errorf(EINVALID, msgContentNotUTF8)
}
