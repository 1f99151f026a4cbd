package memtool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Block types.
const (
	BlockText  = "text"
	BlockImage = "image"
)

// Block is one content block of a tool result: text, or a base64 image.
type Block struct {
	Type      string // BlockText or BlockImage
	Text      string // for BlockText
	MediaType string // for BlockImage: "image/png" or "image/jpeg"
	Data      string // for BlockImage: standard base64 of the image bytes
}

// Result is the outcome of one memory tool call, ready to become a
// tool_result block. An error result (IsError) always holds exactly one text
// block; a success holds one text block or, for an image view, one image
// block.
type Result struct {
	Content []Block
	IsError bool
}

// Text returns the concatenated text of the text blocks ("" for an image).
func (r Result) Text() string {
	var sb strings.Builder
	for _, b := range r.Content {
		if b.Type == BlockText {
			sb.WriteString(b.Text)
		}
	}
	return sb.String()
}

// String returns Text, or a short description for image blocks, so that a
// Result can be printed or compared as a plain string.
func (r Result) String() string {
	var sb strings.Builder
	for _, b := range r.Content {
		switch b.Type {
		case BlockText:
			sb.WriteString(b.Text)
		case BlockImage:
			fmt.Fprintf(&sb, "[image %s, %d base64 characters]", b.MediaType, len(b.Data))
		}
	}
	return sb.String()
}

// MarshalJSON renders {"is_error": bool, "content": ...} where content is a
// string when the result is text only, and otherwise an array of content
// blocks in the Messages API shape ({"type":"image","source":{"type":"base64",
// "media_type":...,"data":...}}).
func (r Result) MarshalJSON() ([]byte, error) {
	type out struct {
		IsError bool `json:"is_error"`
		Content any  `json:"content"`
	}
	textOnly := true
	for _, b := range r.Content {
		if b.Type != BlockText {
			textOnly = false
		}
	}
	if textOnly {
		return marshalNoEscape(out{r.IsError, r.Text()})
	}
	blocks := make([]any, 0, len(r.Content))
	for _, b := range r.Content {
		switch b.Type {
		case BlockImage:
			blocks = append(blocks, map[string]any{
				"type":   "image",
				"source": map[string]string{"type": "base64", "media_type": b.MediaType, "data": b.Data},
			})
		default:
			blocks = append(blocks, map[string]string{"type": "text", "text": b.Text})
		}
	}
	return marshalNoEscape(out{r.IsError, blocks})
}

// marshalNoEscape marshals without escaping <, > and & (which would make the
// JSON differ from the text byte for byte when compared as strings).
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func textResult(s string) Result { return Result{Content: []Block{{Type: BlockText, Text: s}}} }

// errorText is an error result whose message is used verbatim (the seed's
// strings decide whether they carry the "Error: " prefix).
func errorText(s string) Result {
	return Result{Content: []Block{{Type: BlockText, Text: s}}, IsError: true}
}

// errorf is an error result with the "Error: " prefix.
func errorf(format string, args ...any) Result {
	return errorText("Error: " + fmt.Sprintf(format, args...))
}
