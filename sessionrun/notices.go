package sessionrun

import (
	"fmt"
	"os"
	"sync"

	"github.com/trovehq/trove/syncer"
)

// NoticesName is the file under the session root where what the agent
// should know about its writes (conflict copies, refused files, restored
// read-only files) is appended. It is outside every store directory, so it
// is never synced.
const NoticesName = "SYNC_NOTICES.md"

// Notices appends notices to one file. Appends are serialised by the value,
// so one Notices may be shared by every mount of a session; two values for
// the same file do not coordinate. Appending is best effort: a file that
// cannot be written loses the notice (the mounts also log and report).
type Notices struct {
	path string
	mu   sync.Mutex
}

// NewNotices returns the notices appended to the file at path (created at
// the first notice).
func NewNotices(path string) *Notices { return &Notices{path: path} }

// Path returns the notices file.
func (n *Notices) Path() string { return n.path }

// Pass appends the notable parts of a sync pass's report on store
// (syncer.Notices: conflict copies, files newly refused in that pass,
// restored files of a read-only store, store paths that cannot be local
// files). A nil report appends nothing.
func (n *Notices) Pass(store string, r *syncer.Report) {
	if n == nil {
		return
	}
	n.Append(syncer.Notices(store, r))
}

// Refusal appends a change a live mount of store refused (the agent's
// shell may have ignored the error of close).
func (n *Notices) Refusal(store, path, reason string) {
	if n == nil {
		return
	}
	n.Append(fmt.Sprintf("- [%s] %s is not saved to the store: %s\n", store, path, reason))
}

// Hidden appends a store path that a live mount of store cannot show as a
// local file.
func (n *Notices) Hidden(store, path, reason string) {
	if n == nil {
		return
	}
	n.Append(fmt.Sprintf("- [%s] %s is in the store but not shown here: %s\n", store, path, reason))
}

// Append appends text as it is; "" appends nothing.
func (n *Notices) Append(text string) {
	if n == nil || text == "" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	f, err := os.OpenFile(n.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.WriteString(text)
}
