package memtool_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove/memtool"
)

// refusingFS refuses every change with err, as a read-only or archived store
// would; reads go to a MemFS.
type refusingFS struct {
	memtool.FS
	err error
}

func (r *refusingFS) WriteFile(context.Context, string, []byte, memtool.Version) (memtool.Version, error) {
	return "", r.err
}
func (r *refusingFS) Remove(context.Context, string) error         { return r.err }
func (r *refusingFS) Rename(context.Context, string, string) error { return r.err }

// TestRefusal checks that a backend's *memtool.Refusal, even wrapped,
// reaches the model as its message for every command, while any other
// backend error stays a generic message reported to OnInternalError.
func TestRefusal(t *testing.T) {
	cause := errors.New("internal detail /srv/host/path")
	readOnly := &memtool.Refusal{By: "memory store", Message: "this session has read-only access to the store.", Err: cause}
	tests := []struct {
		name     string
		err      error
		input    string
		want     string
		internal bool // OnInternalError must be called
	}{
		{"create", readOnly, `{"command":"create","path":"/memories/n.md","file_text":"x"}`,
			"Error: The memory store refused the create of /memories/n.md: this session has read-only access to the store. Nothing was written.", false},
		{"str_replace-wrapped", fmt.Errorf("backend: %w", readOnly), `{"command":"str_replace","path":"/memories/f.md","old_str":"a","new_str":"b"}`,
			"Error: The memory store refused the str_replace of /memories/f.md: this session has read-only access to the store. Nothing was written.", false},
		{"insert-default-name", &memtool.Refusal{Message: "quota exceeded"}, `{"command":"insert","path":"/memories/f.md","insert_line":0,"insert_text":"x"}`,
			"Error: The storage refused the insert of /memories/f.md: quota exceeded. Nothing was written.", false},
		{"delete", readOnly, `{"command":"delete","path":"/memories/f.md"}`,
			"Error: The memory store refused the delete of /memories/f.md: this session has read-only access to the store.", false},
		{"rename", readOnly, `{"command":"rename","old_path":"/memories/f.md","new_path":"/memories/g.md"}`,
			"Error: The memory store refused the rename of /memories/f.md: this session has read-only access to the store.", false},
		{"other-error", cause, `{"command":"create","path":"/memories/n.md","file_text":"x"}`,
			"Error: The create of /memories/n.md failed because of a storage error; nothing was changed. Try again later.", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memtool.NewMemFS(nil)
			if _, err := mem.WriteFile(context.Background(), "f.md", []byte("a\n"), ""); err != nil {
				t.Fatal(err)
			}
			var internal []error
			tool := memtool.New(&refusingFS{FS: mem, err: tt.err}, memtool.Options{
				OnInternalError: func(_ string, err error) { internal = append(internal, err) },
			})
			r := tool.Execute(context.Background(), []byte(tt.input))
			if diff := cmp.Diff(tt.want, r.String()); diff != "" || !r.IsError {
				t.Errorf("IsError=%v (-want +got):\n%s", r.IsError, diff)
			}
			if got := len(internal) > 0; got != tt.internal {
				t.Errorf("OnInternalError called: %v, want %v (%v)", got, tt.internal, internal)
			}
		})
	}
}
