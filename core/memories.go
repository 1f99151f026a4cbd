package core

import (
	"context"
	"fmt"
	"strings"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// CreateMemory creates a memory and its version #1 (OpCreated). Create never
// overwrites: EPATHCONFLICT (with ConflictingPath and ConflictingMemoryID) if
// the path is used by, or is an ancestor or descendant of, another memory's
// path. EINVALID for a bad path, content that is not valid UTF-8 or is larger
// than MaxContentBytes, a bad view, an archived store, or a store already at
// MaxMemoriesPerStore or MaxVersionsPerStore or that the content would take
// past MaxStoreBytes (checkGrowth). ENOTFOUND for an unknown store; EFORBIDDEN for a
// session that has the store read_only.
func (s *Service) CreateMemory(ctx context.Context, storeID string, p trove.CreateMemoryParams) (*trove.Memory, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.validatePath(p.Path); err != nil {
		return nil, err
	}
	if err := s.validateContent(p.Content); err != nil {
		return nil, err
	}
	view, err := checkView(p.View, trove.ViewBasic)
	if err != nil {
		return nil, err
	}
	if err := checkWritable(pr, storeID); err != nil {
		return nil, err
	}
	// Hashed before the write: the function runs in the driver's single
	// committer (SQLite), where every microsecond delays the whole group.
	contentSHA := sha256Hex(p.Content)
	var out *trove.Memory
	err = s.writeStore(ctx, "CreateMemory", storeID, func(tx storage.Tx) error {
		st, err := s.lockWritableStore(ctx, tx, pr, storeID)
		if err != nil {
			return err
		}
		if st.ArchivedAt != nil {
			return errArchived(storeID, "memories cannot be created")
		}
		if err := checkOverlap(ctx, tx, storeID, p.Path, ""); err != nil {
			return err
		}
		if err := s.checkGrowth(ctx, tx, storeID, growth{memories: 1, bytes: int64(len(p.Content)), versions: 1}); err != nil {
			return err
		}
		now := s.now()
		content := p.Content
		m := &trove.Memory{
			ID:        trove.NewID(trove.PrefixMemory, now),
			StoreID:   storeID,
			Path:      p.Path,
			Content:   &content,
			SizeBytes: len(content),
			SHA256:    contentSHA,
			VersionID: trove.NewID(trove.PrefixVersion, now),
			CreatedAt: now,
			UpdatedAt: now,
		}
		if err := tx.MemoryInsert(ctx, m); err != nil {
			return err
		}
		if err := tx.VersionInsert(ctx, versionOf(m, trove.OpCreated, pr)); err != nil {
			return err
		}
		out = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	return withView(out, view), nil
}

// GetMemory returns a live memory. view "" means ViewFull (the API's
// retrieve default). ENOTFOUND for a missing or deleted memory, or a store
// the caller cannot read; EINVALID for a bad view.
func (s *Service) GetMemory(ctx context.Context, storeID, memoryID string, view trove.View) (*trove.Memory, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	view, err = checkView(view, trove.ViewFull)
	if err != nil {
		return nil, err
	}
	// Fast path, one statement (storage.Driver.MemoryGet): a store's
	// workspace never changes, and a memory row exists only while its store
	// does (StoreDelete deletes both in one transaction), so for a store
	// known to be the caller's a memory found is one the full check would
	// return too. Not found: check the store, for the right error.
	if pr.CanRead(storeID) && s.owners.owns(storeID, pr.WorkspaceID) {
		m, err := s.db.MemoryGet(ctx, storeID, memoryID, view == trove.ViewFull)
		if trove.ErrorCode(err) != trove.ENOTFOUND {
			if err != nil {
				return nil, s.mapErr(ctx, "GetMemory", err)
			}
			return setView(m, view), nil
		}
	}
	var out *trove.Memory
	err = s.read(ctx, "GetMemory", func(tx storage.Tx) error {
		if _, err := s.readableStore(ctx, tx, pr, storeID); err != nil {
			return err
		}
		m, err := tx.MemoryGet(ctx, storeID, memoryID, view == trove.ViewFull)
		out = m
		return err
	})
	if err != nil {
		return nil, err
	}
	return setView(out, view), nil
}

// UpdateMemory changes content, path (a rename keeping the ID) or both, and
// appends one OpModified version for a real change. A request whose fields
// all equal the current state is a no-op: no version, updated_at unchanged,
// the current memory returned, even when PreconditionSHA256 differs (the
// state already is what was asked for, so retries are idempotent).
//
// EINVALID when neither field is set, for a bad path, content, view or
// precondition (not 64 lowercase hex), on an archived store, or for a real
// change to a store at MaxVersionsPerStore or that growing content would take
// past MaxStoreBytes (checkGrowth); EPRECONDITION
// when PreconditionSHA256 differs from the current content hash;
// EPATHCONFLICT when the new path overlaps another memory; ENOTFOUND for an
// unknown store or memory; EFORBIDDEN for a session with the store read_only.
func (s *Service) UpdateMemory(ctx context.Context, storeID, memoryID string, p trove.UpdateMemoryParams) (*trove.Memory, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if p.Content == nil && p.Path == nil {
		return nil, trove.Errorf(trove.EINVALID, "set content, path, or both")
	}
	if p.Content != nil {
		if err := s.validateContent(*p.Content); err != nil {
			return nil, err
		}
	}
	if p.Path != nil {
		if err := s.validatePath(*p.Path); err != nil {
			return nil, err
		}
	}
	if p.PreconditionSHA256 != "" {
		if err := validateSHA("precondition content_sha256", p.PreconditionSHA256); err != nil {
			return nil, err
		}
	}
	view, err := checkView(p.View, trove.ViewBasic)
	if err != nil {
		return nil, err
	}
	if err := checkWritable(pr, storeID); err != nil {
		return nil, err
	}
	var contentSHA string // hashed outside the committer, as in CreateMemory
	if p.Content != nil {
		contentSHA = sha256Hex(*p.Content)
	}
	var out *trove.Memory
	err = s.writeStore(ctx, "UpdateMemory", storeID, func(tx storage.Tx) error {
		st, err := s.lockWritableStore(ctx, tx, pr, storeID)
		if err != nil {
			return err
		}
		if st.ArchivedAt != nil {
			return errArchived(storeID, "memories cannot be updated")
		}
		// The current content is needed only to carry it over a rename;
		// a content change is compared by hash.
		m, err := tx.MemoryGet(ctx, storeID, memoryID, p.Content == nil)
		if err != nil {
			return err
		}
		var newContent, newSHA string
		if p.Content != nil {
			newContent, newSHA = *p.Content, contentSHA
		} else if m.Content != nil {
			newContent, newSHA = *m.Content, m.SHA256
		} else {
			return fmt.Errorf("core: driver returned memory %s without the content it was asked for", m.ID)
		}
		newPath := m.Path
		if p.Path != nil {
			newPath = *p.Path
		}
		sameContent := newSHA == m.SHA256 && len(newContent) == m.SizeBytes
		if sameContent && newPath == m.Path {
			if m.Content == nil {
				m.Content = &newContent // equal to the stored content
			}
			out = m // no-op
			return nil
		}
		if p.PreconditionSHA256 != "" && p.PreconditionSHA256 != m.SHA256 {
			return trove.Errorf(trove.EPRECONDITION, "memory %s content_sha256 does not match the precondition; read the memory again and retry", memoryID)
		}
		if newPath != m.Path {
			if err := checkOverlap(ctx, tx, storeID, newPath, m.ID); err != nil {
				return err
			}
		}
		if err := s.checkGrowth(ctx, tx, storeID, growth{bytes: int64(len(newContent) - m.SizeBytes), versions: 1}); err != nil {
			return err
		}
		now := s.now()
		m.Path = newPath
		m.Content = &newContent
		m.SizeBytes = len(newContent)
		m.SHA256 = newSHA
		m.VersionID = trove.NewID(trove.PrefixVersion, now)
		m.UpdatedAt = now
		if err := tx.MemoryUpdate(ctx, m); err != nil {
			return err
		}
		if err := tx.VersionInsert(ctx, versionOf(m, trove.OpModified, pr)); err != nil {
			return err
		}
		out = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	return withView(out, view), nil
}

// DeleteMemory deletes a live memory and appends an OpDeleted version that
// keeps the path and nulls content, size and hash; the path becomes free.
// Allowed on archived stores. When expectedSHA256 is not "" it must be 64
// lowercase hex (else EINVALID) and equal the current hash (else
// EPRECONDITION, nothing deleted). ENOTFOUND for an unknown store or memory;
// EFORBIDDEN for a session with the store read_only.
func (s *Service) DeleteMemory(ctx context.Context, storeID, memoryID, expectedSHA256 string) error {
	pr, err := principal(ctx)
	if err != nil {
		return err
	}
	if expectedSHA256 != "" {
		if err := validateSHA("expected_content_sha256", expectedSHA256); err != nil {
			return err
		}
	}
	if err := checkWritable(pr, storeID); err != nil {
		return err
	}
	return s.writeStore(ctx, "DeleteMemory", storeID, func(tx storage.Tx) error {
		if _, err := s.lockWritableStore(ctx, tx, pr, storeID); err != nil {
			return err
		}
		m, err := tx.MemoryGet(ctx, storeID, memoryID, false)
		if err != nil {
			return err
		}
		if expectedSHA256 != "" && expectedSHA256 != m.SHA256 {
			return trove.Errorf(trove.EPRECONDITION, "memory %s content_sha256 does not match expected_content_sha256; nothing was deleted", memoryID)
		}
		if err := tx.MemoryDelete(ctx, storeID, memoryID); err != nil {
			return err
		}
		now := s.now()
		path := m.Path
		return tx.VersionInsert(ctx, &trove.MemoryVersion{
			ID:        trove.NewID(trove.PrefixVersion, now),
			StoreID:   storeID,
			MemoryID:  m.ID,
			Operation: trove.OpDeleted,
			Path:      &path,
			CreatedBy: actor(pr),
			CreatedAt: now,
		})
	})
}

// ListMemories lists live memories below PathPrefix in ascending bytewise
// path order. Depth 0 lists every memory below the prefix; with Depth 1,
// memories more than one segment below the prefix are folded into one
// MemoryPrefix item per direct child directory (path ending in "/");
// memories and prefixes both count toward the limit.
// EINVALID for a prefix that is not "", "/" or a valid path ending in "/",
// a depth other than 0 or 1, a limit outside 1..MaxPageSize (capped at
// MaxFullPageSize with ViewFull), a bad view or a malformed cursor.
// ENOTFOUND for a store the caller cannot read.
func (s *Service) ListMemories(ctx context.Context, storeID string, p trove.ListMemoriesParams) (*trove.Page[trove.MemoryListItem], error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := trove.ValidatePathPrefix(p.PathPrefix, s.limits.MaxPathBytes, s.limits.MaxPathSegments); err != nil {
		return nil, err
	}
	if p.Depth != 0 && p.Depth != 1 {
		return nil, trove.Errorf(trove.EINVALID, "depth must be 0 or 1, got %d", p.Depth)
	}
	view, err := checkView(p.View, trove.ViewBasic)
	if err != nil {
		return nil, err
	}
	limit, err := s.checkLimit(p.Limit, view)
	if err != nil {
		return nil, err
	}
	from, err := decodeMemoryFrom(p.Cursor)
	if err != nil {
		return nil, err
	}
	base := p.PathPrefix
	if base == "" {
		base = "/"
	}
	var items []memItem
	err = s.read(ctx, "ListMemories", func(tx storage.Tx) error {
		if _, err := s.readableStore(ctx, tx, pr, storeID); err != nil {
			return err
		}
		items, err = listFolded(ctx, tx, storeID, base, p.Depth, from, limit+1, view == trove.ViewFull)
		return err
	})
	if err != nil {
		return nil, err
	}
	page := &trove.Page[trove.MemoryListItem]{Data: make([]trove.MemoryListItem, 0, min(len(items), limit))}
	for i, it := range items {
		if i == limit {
			page.NextPage = encodeMemoryFrom(items[limit-1].next)
			break
		}
		if it.prefix != "" {
			page.Data = append(page.Data, trove.MemoryListItem{Prefix: &trove.MemoryPrefix{Path: it.prefix}})
		} else {
			page.Data = append(page.Data, trove.MemoryListItem{Memory: withView(it.mem, view)})
		}
	}
	return page, nil
}

// memItem is one listing item and the From at which the listing resumes
// after it.
type memItem struct {
	mem    *trove.Memory
	prefix string
	next   string
}

// listFolded returns up to n items of the listing of memories below base
// (which ends in "/") starting at path from, folding memories deeper than
// depth levels (depth > 0) into prefixes. It skips a folded subtree P by
// resuming at P[:len(P)-1]+"0": '0' is the byte after '/', so every path
// below P sorts before it and no other path does.
//
// Without folding one query of n rows does. With folding, rows read after a
// fold inside its subtree are wasted, so batches start small, shrink after
// a fold (the next row likely starts another folded directory) and grow
// while rows are listed as themselves.
func listFolded(ctx context.Context, tx storage.Tx, storeID, base string, depth int, from string, n int, withContent bool) ([]memItem, error) {
	prefix := base
	if prefix == "/" {
		prefix = ""
	}
	const minBatch, firstBatch = 2, 8
	grow := firstBatch
	var items []memItem
	for len(items) < n {
		batch := n - len(items)
		if depth > 0 {
			batch = min(batch+1, grow)
		}
		rows, err := tx.MemoryList(ctx, storage.MemoryListParams{
			StoreID: storeID, Prefix: prefix, From: from, Limit: batch, WithContent: withContent,
		})
		if err != nil {
			return nil, err
		}
		folded := false
		for i := range rows {
			m := &rows[i]
			if m.Path < from || !strings.HasPrefix(m.Path, base) {
				continue // inside a subtree already folded
			}
			if len(items) == n {
				return items, nil
			}
			if fold := foldedPrefix(m.Path, base, depth); fold != "" {
				skip := fold[:len(fold)-1] + "0"
				items = append(items, memItem{prefix: fold, next: skip})
				from = skip
				folded = true
				continue
			}
			next := after(m.Path)
			items = append(items, memItem{mem: m, next: next})
			from = next
		}
		if len(rows) < batch {
			break // the listing is exhausted
		}
		if last := after(rows[len(rows)-1].Path); last > from {
			from = last
		}
		if folded {
			grow = minBatch
		} else {
			grow = min(grow*4, 1<<16)
		}
	}
	return items, nil
}

// after returns the smallest inclusive lower bound that lists every valid
// path sorting after p and not p itself: p+" ". The bytes below ' ' are
// control characters, which paths never contain, so no valid path lies
// between p and p+" ". (A NUL suffix would work too, but PostgreSQL text
// cannot hold NUL.)
func after(p string) string { return p + " " }

// foldedPrefix returns the prefix item that stands for path in a listing of
// base limited to depth levels, or "" when path is listed itself.
func foldedPrefix(path, base string, depth int) string {
	if depth <= 0 {
		return ""
	}
	rel := path[len(base):]
	i, seen := 0, 0
	for j := 0; j < len(rel); j++ {
		if rel[j] == '/' {
			seen++
			if seen == depth {
				i = j
				break
			}
		}
	}
	if seen < depth {
		return ""
	}
	return base + rel[:i+1]
}

// checkOverlap returns EPATHCONFLICT when another live memory than
// excludeID uses path or an ancestor or descendant of it.
func checkOverlap(ctx context.Context, tx storage.Tx, storeID, path, excludeID string) error {
	o, err := tx.MemoryFindOverlap(ctx, storeID, path, excludeID)
	if err != nil {
		return err
	}
	if o == nil {
		return nil
	}
	var e *trove.Error
	switch {
	case o.Path == path:
		e = trove.Errorf(trove.EPATHCONFLICT, "a memory already exists at path %q", path)
	case strings.HasPrefix(path, o.Path+"/"):
		e = trove.Errorf(trove.EPATHCONFLICT, "path %q is below the existing memory %q; a path cannot be both a memory and a directory", path, o.Path)
	default:
		e = trove.Errorf(trove.EPATHCONFLICT, "path %q is a directory of the existing memory %q; a path cannot be both a memory and a directory", path, o.Path)
	}
	e.ConflictingPath = o.Path
	e.ConflictingMemoryID = o.ID
	return e
}

func errArchived(storeID, what string) error {
	return trove.Errorf(trove.EINVALID, "memory store %s is archived; %s", storeID, what)
}

// versionOf returns the version recording m's current state.
func versionOf(m *trove.Memory, op trove.Operation, pr *trove.Principal) *trove.MemoryVersion {
	path, content, size, sum := m.Path, *m.Content, m.SizeBytes, m.SHA256
	return &trove.MemoryVersion{
		ID:        m.VersionID,
		StoreID:   m.StoreID,
		MemoryID:  m.ID,
		Operation: op,
		Path:      &path,
		Content:   &content,
		SizeBytes: &size,
		SHA256:    &sum,
		CreatedBy: actor(pr),
		CreatedAt: m.UpdatedAt,
	}
}

// setView sets m's Content according to view and returns m: for a memory
// the caller owns (a driver's read returns a fresh one), where withView's
// copy would be an allocation per get for nothing.
func setView(m *trove.Memory, view trove.View) *trove.Memory {
	if view != trove.ViewFull {
		m.Content = nil
	} else if m.Content == nil {
		s := ""
		m.Content = &s
	}
	return m
}

// withView returns a copy of m with Content according to view.
func withView(m *trove.Memory, view trove.View) *trove.Memory {
	c := *m
	if view != trove.ViewFull {
		c.Content = nil
	} else if m.Content != nil {
		s := *m.Content
		c.Content = &s
	} else {
		s := ""
		c.Content = &s
	}
	return &c
}
