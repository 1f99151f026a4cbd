package core

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

var _ trove.DirectoryService = (*Service)(nil)

// dirListBatch is how many memories one MemoryList call of a directory
// operation reads.
const dirListBatch = 500

// RenameDirectory moves every live memory below p.From to the same relative
// path below p.To in one transaction under the store lock: each memory keeps
// its ID and content and gets one OpModified version (new path, same
// content) attributed to the caller, all with the same time. Nothing changes
// when any check fails.
//
// EINVALID for a bad From or To, To equal to or below From, a new path over
// the path limits, a bad Expect entry (empty ID, hash not 64 lowercase hex,
// an ID named twice), or an archived store; ENOTFOUND for an unknown store
// or when no live memory lies below From; EPRECONDITION when Expect is not
// nil and the memories below From are not exactly those it names with those
// hashes; EPATHCONFLICT (ConflictingPath, ConflictingMemoryID) when a new
// path equals, is below or is above a memory that is not moving;
// EFORBIDDEN for a session that has the store read_only.
func (s *Service) RenameDirectory(ctx context.Context, storeID string, p trove.RenameDirectoryParams) (*trove.DirectoryChange, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.validateDirPath("from", p.From); err != nil {
		return nil, err
	}
	if err := s.validateDirPath("to", p.To); err != nil {
		return nil, err
	}
	if p.To == p.From || strings.HasPrefix(p.To, p.From+"/") {
		return nil, trove.Errorf(trove.EINVALID, "cannot rename directory %q to %q: the destination is the directory itself or below it", p.From, p.To)
	}
	if err := validateExpect(p.Expect); err != nil {
		return nil, err
	}
	if err := checkWritable(pr, storeID); err != nil {
		return nil, err
	}
	var out []trove.Memory
	err = s.writeStore(ctx, "RenameDirectory", storeID, func(tx storage.Tx) error {
		out = nil // fn may be rerun
		st, err := s.lockWritableStore(ctx, tx, pr, storeID)
		if err != nil {
			return err
		}
		if st.ArchivedAt != nil {
			return errArchived(storeID, "memories cannot be renamed")
		}
		movers, err := listBelow(ctx, tx, storeID, p.From)
		if err != nil {
			return err
		}
		if len(movers) == 0 {
			return errEmptyDir(p.From)
		}
		if err := checkExpect(p.From, movers, p.Expect); err != nil {
			return err
		}
		moving := make(map[string]bool, len(movers))
		for _, m := range movers {
			moving[m.ID] = true
			newPath := p.To + m.Path[len(p.From):]
			if err := s.validatePath(newPath); err != nil {
				return trove.Errorf(trove.EINVALID, "cannot rename %q to %q: %s", m.Path, newPath, trove.ErrorMessage(err))
			}
		}
		if err := checkRenameOverlap(ctx, tx, storeID, p.From, p.To, movers, moving); err != nil {
			return err
		}
		if err := s.checkGrowth(ctx, tx, storeID, growth{versions: len(movers)}); err != nil {
			return err
		}
		// The unique path index is checked row by row. A new path can equal
		// the old path of another moving memory only when To is an ancestor
		// of From, and then that other memory's old path is the shorter one:
		// moving the shorter old paths first frees every path before it is
		// taken.
		order := make([]int, len(movers))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(movers[a].Path), len(movers[b].Path)) })
		now := s.now()
		out = make([]trove.Memory, len(movers))
		for _, i := range order {
			m, err := tx.MemoryGet(ctx, storeID, movers[i].ID, true)
			if err != nil {
				return err
			}
			if m.Content == nil {
				return fmt.Errorf("core: driver returned memory %s without the content it was asked for", m.ID)
			}
			m.Path = p.To + m.Path[len(p.From):]
			m.VersionID = trove.NewID(trove.PrefixVersion, now)
			m.UpdatedAt = now
			if err := tx.MemoryUpdate(ctx, m); err != nil {
				return err
			}
			if err := tx.VersionInsert(ctx, versionOf(m, trove.OpModified, pr)); err != nil {
				return err
			}
			m.Content = nil
			out[i] = *m
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &trove.DirectoryChange{Memories: out}, nil
}

// DeleteDirectory deletes every live memory below p.Path in one transaction
// under the store lock, each with one OpDeleted version (path kept; content,
// size and hash null) attributed to the caller, all with the same time.
// Allowed on archived stores, as DeleteMemory is. Nothing changes when any
// check fails.
//
// EINVALID for a bad Path or Expect entry; ENOTFOUND for an unknown store or
// when no live memory lies below Path; EPRECONDITION as in RenameDirectory;
// EFORBIDDEN for a session that has the store read_only.
func (s *Service) DeleteDirectory(ctx context.Context, storeID string, p trove.DeleteDirectoryParams) (*trove.DirectoryChange, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.validateDirPath("path", p.Path); err != nil {
		return nil, err
	}
	if err := validateExpect(p.Expect); err != nil {
		return nil, err
	}
	if err := checkWritable(pr, storeID); err != nil {
		return nil, err
	}
	var out []trove.Memory
	err = s.writeStore(ctx, "DeleteDirectory", storeID, func(tx storage.Tx) error {
		out = nil // fn may be rerun
		if _, err := s.lockWritableStore(ctx, tx, pr, storeID); err != nil {
			return err
		}
		victims, err := listBelow(ctx, tx, storeID, p.Path)
		if err != nil {
			return err
		}
		if len(victims) == 0 {
			return errEmptyDir(p.Path)
		}
		if err := checkExpect(p.Path, victims, p.Expect); err != nil {
			return err
		}
		now := s.now()
		for i := range victims {
			m := &victims[i]
			if err := tx.MemoryDelete(ctx, storeID, m.ID); err != nil {
				return err
			}
			path := m.Path
			if err := tx.VersionInsert(ctx, &trove.MemoryVersion{
				ID:        trove.NewID(trove.PrefixVersion, now),
				StoreID:   storeID,
				MemoryID:  m.ID,
				Operation: trove.OpDeleted,
				Path:      &path,
				CreatedBy: actor(pr),
				CreatedAt: now,
			}); err != nil {
				return err
			}
		}
		out = victims
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &trove.DirectoryChange{Memories: out}, nil
}

// validateDirPath checks a directory path: written like a memory path
// (no trailing "/"), within the path limits.
func (s *Service) validateDirPath(field, p string) error {
	if err := s.validatePath(p); err != nil {
		return trove.Errorf(trove.EINVALID, "invalid %s: %s", field, trove.ErrorMessage(err))
	}
	return nil
}

// validateExpect checks the shape of a precondition list: non-empty IDs,
// each named once, hashes of 64 lowercase hex digits.
func validateExpect(expect []trove.MemoryPrecondition) error {
	seen := make(map[string]bool, len(expect))
	for i, e := range expect {
		if e.MemoryID == "" {
			return trove.Errorf(trove.EINVALID, "expect[%d]: memory_id is required", i)
		}
		if seen[e.MemoryID] {
			return trove.Errorf(trove.EINVALID, "expect[%d]: memory %s is named more than once", i, e.MemoryID)
		}
		seen[e.MemoryID] = true
		if err := validateSHA(fmt.Sprintf("expect[%d].content_sha256", i), e.SHA256); err != nil {
			return err
		}
	}
	return nil
}

// listBelow returns every live memory below dir (without content) in
// ascending path order, paging within the transaction.
func listBelow(ctx context.Context, tx storage.Tx, storeID, dir string) ([]trove.Memory, error) {
	var out []trove.Memory
	from := ""
	for {
		rows, err := tx.MemoryList(ctx, storage.MemoryListParams{StoreID: storeID, Prefix: dir + "/", From: from, Limit: dirListBatch})
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
		if len(rows) < dirListBatch {
			return out, nil
		}
		from = after(rows[len(rows)-1].Path)
	}
}

func errEmptyDir(dir string) error {
	return trove.Errorf(trove.ENOTFOUND, "no memory lies below directory %q", dir)
}

// checkExpect returns nil when expect is nil, or when the memories found
// below dir are exactly those expect names with the hashes it gives; else
// EPRECONDITION naming the first difference (in path order of the found
// memories, then in the order of expect).
func checkExpect(dir string, found []trove.Memory, expect []trove.MemoryPrecondition) error {
	if expect == nil {
		return nil
	}
	want := make(map[string]string, len(expect))
	for _, e := range expect {
		want[e.MemoryID] = e.SHA256
	}
	seen := make(map[string]bool, len(found))
	for _, m := range found {
		seen[m.ID] = true
		sha, ok := want[m.ID]
		switch {
		case !ok:
			return trove.Errorf(trove.EPRECONDITION, "memory %s at %q lies below %q but is not in expect; list the directory again and retry", m.ID, m.Path, dir)
		case sha != m.SHA256:
			return trove.Errorf(trove.EPRECONDITION, "memory %s at %q has content_sha256 %s, not the expected %s; read it again and retry", m.ID, m.Path, m.SHA256, sha)
		}
	}
	for _, e := range expect {
		if !seen[e.MemoryID] {
			return trove.Errorf(trove.EPRECONDITION, "memory %s is in expect but no longer lies below %q; list the directory again and retry", e.MemoryID, dir)
		}
	}
	return nil
}

// checkRenameOverlap returns EPATHCONFLICT when a path the rename of from
// to to creates equals, lies below or lies above a live memory that is not
// moving. A memory overlapping a new path overlaps to: it is to, an
// ancestor of to, or lies below to. The store holds no overlapping paths,
// so when MemoryFindOverlap(to) finds a memory below to, nothing is at or
// above to, and the memories below to that do not move are compared with
// the new paths by their paths relative to to.
func checkRenameOverlap(ctx context.Context, tx storage.Tx, storeID, from, to string, movers []trove.Memory, moving map[string]bool) error {
	o, err := tx.MemoryFindOverlap(ctx, storeID, to, "")
	if err != nil || o == nil {
		return err
	}
	if !strings.HasPrefix(o.Path, to+"/") {
		e := trove.Errorf(trove.EPATHCONFLICT, "cannot rename directory %q to %q: the memory %q is at or above the destination; a path cannot be both a memory and a directory", from, to, o.Path)
		e.ConflictingPath, e.ConflictingMemoryID = o.Path, o.ID
		return e
	}
	// rels: the new paths relative to to; dirs: their ancestor directories.
	rels := make(map[string]bool, len(movers))
	dirs := map[string]bool{}
	for _, m := range movers {
		rel := m.Path[len(from):]
		rels[rel] = true
		for i := 1; i < len(rel); i++ {
			if rel[i] == '/' {
				dirs[rel[:i]] = true
			}
		}
	}
	others, err := listBelow(ctx, tx, storeID, to)
	if err != nil {
		return err
	}
	for _, m := range others {
		if moving[m.ID] {
			continue
		}
		rel := m.Path[len(to):]
		why := ""
		switch {
		case rels[rel]:
			why = "a memory already exists at the new path " + strconv.Quote(m.Path)
		case dirs[rel]:
			why = "renamed memories would lie below the existing memory " + strconv.Quote(m.Path) + "; a path cannot be both a memory and a directory"
		default:
			for i := 1; i < len(rel) && why == ""; i++ {
				if rel[i] == '/' && rels[rel[:i]] {
					why = "the existing memory " + strconv.Quote(m.Path) + " would lie below the renamed memory " + strconv.Quote(to+rel[:i]) + "; a path cannot be both a memory and a directory"
				}
			}
		}
		if why != "" {
			e := trove.Errorf(trove.EPATHCONFLICT, "cannot rename directory %q to %q: %s", from, to, why)
			e.ConflictingPath, e.ConflictingMemoryID = m.Path, m.ID
			return e
		}
	}
	return nil
}
