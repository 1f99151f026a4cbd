package syncer

import (
	"fmt"
	"strings"
)

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
