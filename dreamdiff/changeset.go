// Package dreamdiff is a dream's change set: what a dream changed, by
// path, read through trove.Services. It is pure (the root and the standard
// library only), so that the console and the CLI can show a dream's diff
// without linking the runner (dreamrun: core, the model API's SDK).
package dreamdiff

import (
	"context"
	"slices"
	"strings"

	"github.com/trovehq/trove"
)

// Change is one path that a dream changed: Old is the content before (nil
// when the path was added), New after (nil when it was removed).
type Change struct {
	Path string
	Old  *string
	New  *string
}

// ChangeSet returns what a dream changed, by path (ascending). For
// create_new it compares the input store with the output store. For
// update_existing it rebuilds, for every memory the dream's session wrote,
// the content before the dream's first write from the memory's versions,
// and compares it with the memory now. A dream without an output yet has
// no changes.
func ChangeSet(ctx context.Context, svc trove.Services, d *trove.Dream) ([]Change, error) {
	if d.OutputStoreID == "" {
		return nil, nil
	}
	if d.OutputBehavior == trove.OutputUpdateExisting {
		return inPlaceChanges(ctx, svc, d)
	}
	before, err := contents(ctx, svc, d.InputStoreID)
	if err != nil {
		return nil, err
	}
	after, err := contents(ctx, svc, d.OutputStoreID)
	if err != nil {
		return nil, err
	}
	return diffMaps(before, after), nil
}

// contents returns path → content of a store's live memories.
func contents(ctx context.Context, svc trove.Services, storeID string) (map[string]string, error) {
	out := map[string]string{}
	cursor := ""
	for {
		pg, err := svc.ListMemories(ctx, storeID, trove.ListMemoriesParams{View: trove.ViewFull, Limit: 20, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, it := range pg.Data {
			if it.Memory != nil && it.Memory.Content != nil {
				out[it.Memory.Path] = *it.Memory.Content
			}
		}
		if cursor = pg.NextPage; cursor == "" {
			return out, nil
		}
	}
}

func diffMaps(before, after map[string]string) []Change {
	var out []Change
	for p, o := range before {
		n, ok := after[p]
		switch {
		case !ok:
			out = append(out, Change{Path: p, Old: &o})
		case n != o:
			out = append(out, Change{Path: p, Old: &o, New: &n})
		}
	}
	for p, n := range after {
		if _, ok := before[p]; !ok {
			out = append(out, Change{Path: p, New: &n})
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// inPlaceChanges rebuilds an in-place dream's change set from versions.
func inPlaceChanges(ctx context.Context, svc trove.Services, d *trove.Dream) ([]Change, error) {
	if d.SessionID == "" {
		return nil, nil
	}
	touched := map[string]bool{}
	cursor := ""
	for {
		pg, err := svc.ListVersions(ctx, d.OutputStoreID, trove.ListVersionsParams{SessionID: d.SessionID, Limit: 100, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, v := range pg.Data {
			touched[v.MemoryID] = true
		}
		if cursor = pg.NextPage; cursor == "" {
			break
		}
	}
	before, after := map[string]string{}, map[string]string{}
	for id := range touched {
		var all []trove.MemoryVersion // newest first
		cursor := ""
		for {
			pg, err := svc.ListVersions(ctx, d.OutputStoreID, trove.ListVersionsParams{MemoryID: id, Limit: 20, View: trove.ViewFull, Cursor: cursor})
			if err != nil {
				return nil, err
			}
			all = append(all, pg.Data...)
			if cursor = pg.NextPage; cursor == "" {
				break
			}
		}
		byDream := func(v trove.MemoryVersion) bool {
			return v.CreatedBy != nil && v.CreatedBy.Type == trove.ActorSession && v.CreatedBy.SessionID == d.SessionID
		}
		oldest := -1
		for i := len(all) - 1; i >= 0; i-- {
			if byDream(all[i]) {
				oldest = i
				break
			}
		}
		if oldest >= 0 && oldest+1 < len(all) {
			if prev := all[oldest+1]; prev.Operation != trove.OpDeleted && prev.Path != nil && prev.Content != nil {
				before[*prev.Path] = *prev.Content
			}
		}
		if len(all) > 0 {
			if cur := all[0]; cur.Operation != trove.OpDeleted && cur.Path != nil && cur.Content != nil {
				after[*cur.Path] = *cur.Content
			}
		}
	}
	return diffMaps(before, after), nil
}
