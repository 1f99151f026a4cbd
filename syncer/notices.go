package syncer

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// NoticesName is the name of the file sync notices are appended to (by
// AppendNotices): a Markdown list an agent or a person reads later.
const NoticesName = "SYNC_NOTICES.md"

var noticesMu sync.Mutex

// Notices returns the lines of r worth telling later, as a Markdown list
// ("- [store] …\n" each): conflict copies, files refused this pass, restored
// read-only files, and store paths that cannot be local files (each once per
// Engine). "" when there is nothing to tell.
func Notices(store string, r *Report) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range r.Conflicts {
		fmt.Fprintf(&b, "- [%s] %s changed in the store while you edited it: the store's version is at %s, yours was saved as %s\n", store, c.Path, c.Path, c.CopyPath)
	}
	if r.Counts[KindRefuse] > 0 { // newly refused this pass
		for _, p := range r.Refused {
			fmt.Fprintf(&b, "- [%s] %s is not saved to the store: %s\n", store, p.Path, p.Reason)
		}
	}
	for _, p := range r.Quarantined {
		fmt.Fprintf(&b, "- [%s] %s: %s\n", store, p.Path, p.Reason)
	}
	for _, p := range r.NewUnrepresentable {
		fmt.Fprintf(&b, "- [%s] %s is in the store but not synced here: %s\n", store, p.Path, p.Reason)
	}
	return b.String()
}

// AppendNotices appends Notices(store, r) to file, creating it if needed.
func AppendNotices(file, store string, r *Report) error {
	text := Notices(store, r)
	if text == "" {
		return nil
	}
	noticesMu.Lock()
	defer noticesMu.Unlock()
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
