package memtool_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove/memtool"
)

// TestExecuteRefusesInvalidUTF8: a tool call whose raw input holds bytes
// that are not UTF-8 is an error and writes nothing (JSON decoding would
// have replaced each with U+FFFD).
func TestExecuteRefusesInvalidUTF8(t *testing.T) {
	t.Parallel()
	for name, text := range map[string]string{"latin-1": "caf\xe9", "random bytes": "\xff\xfe\x81abc\xc3"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fsys := memtool.NewMemFS(time.Now)
			tool := memtool.New(fsys, memtool.Options{})
			ctx := context.Background()
			res := tool.Execute(ctx, []byte(`{"command":"create","path":"/memories/x.md","file_text":"`+text+`"}`))
			if !res.IsError || !strings.Contains(res.Text(), "content must be valid UTF-8 text") {
				t.Errorf("create = %+v, want an error saying the content must be valid UTF-8 text", res)
			}
			view := tool.Execute(ctx, []byte(`{"command":"view","path":"/memories/x.md"}`))
			if !view.IsError {
				t.Errorf("the refused create wrote the file: %s", view.Text())
			}
		})
	}
}
