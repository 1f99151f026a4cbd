package core

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// validateNewStore checks a new store's name, description and metadata
// (CreateStore, ForkStore) and returns the metadata to store: a copy, never
// nil.
func (s *Service) validateNewStore(name, description string, metadata map[string]string) (map[string]string, error) {
	if err := s.validateName(name); err != nil {
		return nil, err
	}
	if err := s.validateDescription(description); err != nil {
		return nil, err
	}
	md := maps.Clone(metadata)
	if md == nil {
		md = map[string]string{}
	}
	if err := s.validateMetadata(md); err != nil {
		return nil, err
	}
	return md, nil
}

// CreateStore creates a store in the caller's workspace. It returns EINVALID
// for a bad name, description or metadata (DetailCode "invalid_metadata") or
// a workspace at MaxStoresPerWorkspace (checkStoreCount), and EFORBIDDEN for a session credential.
func (s *Service) CreateStore(ctx context.Context, p trove.CreateStoreParams) (*trove.Store, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "create memory stores"); err != nil {
		return nil, err
	}
	md, err := s.validateNewStore(p.Name, p.Description, p.Metadata)
	if err != nil {
		return nil, err
	}
	var out *trove.Store
	err = s.write(ctx, "CreateStore", func(tx storage.Tx) error {
		if err := s.checkStoreCount(ctx, tx, pr.WorkspaceID); err != nil {
			return err
		}
		now := s.now()
		st := &trove.Store{
			ID:          trove.NewID(trove.PrefixStore, now),
			WorkspaceID: pr.WorkspaceID,
			Name:        p.Name,
			Description: p.Description,
			Metadata:    md,
			CreatedAt:   now,
			UpdatedAt:   now,
		}
		if err := tx.StoreInsert(ctx, st); err != nil {
			return err
		}
		out = st
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out.Clone(), nil
}

// GetStore returns a store of the caller's workspace, archived ones too.
// ENOTFOUND if it is absent, in another workspace, or not attached to the
// caller's session.
func (s *Service) GetStore(ctx context.Context, storeID string) (*trove.Store, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	var out *trove.Store
	err = s.read(ctx, "GetStore", func(tx storage.Tx) error {
		st, err := s.readableStore(ctx, tx, pr, storeID)
		out = st
		return err
	})
	if err != nil {
		return nil, err
	}
	return normStore(out), nil
}

// UpdateStore changes name, description and metadata (a merge patch: a nil
// value removes its key). updated_at changes only when something really
// changed. EINVALID on an archived store, for a bad field, or when the merged
// metadata breaks the limits (DetailCode "invalid_metadata"); EFORBIDDEN for
// a session credential; ENOTFOUND for an unknown store.
func (s *Service) UpdateStore(ctx context.Context, storeID string, p trove.UpdateStoreParams) (*trove.Store, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "update memory stores"); err != nil {
		return nil, err
	}
	if p.Name != nil {
		if err := s.validateName(*p.Name); err != nil {
			return nil, err
		}
	}
	if p.Description != nil {
		if err := s.validateDescription(*p.Description); err != nil {
			return nil, err
		}
	}
	var out *trove.Store
	err = s.write(ctx, "UpdateStore", func(tx storage.Tx) error {
		st, err := tx.StoreLock(ctx, pr.WorkspaceID, storeID)
		if err != nil {
			return err
		}
		st = normStore(st)
		if st.ArchivedAt != nil {
			return trove.Errorf(trove.EINVALID, "memory store %s is archived; archived stores cannot be updated", storeID)
		}
		changed := false
		if p.Name != nil && *p.Name != st.Name {
			st.Name, changed = *p.Name, true
		}
		if p.Description != nil && *p.Description != st.Description {
			st.Description, changed = *p.Description, true
		}
		if len(p.Metadata) > 0 {
			md := maps.Clone(st.Metadata)
			for k, v := range p.Metadata {
				if v == nil {
					delete(md, k)
				} else {
					md[k] = *v
				}
			}
			if err := s.validateMetadata(md); err != nil {
				return err
			}
			if !maps.Equal(md, st.Metadata) {
				st.Metadata, changed = md, true
			}
		}
		if changed {
			st.UpdatedAt = s.now()
			if err := tx.StoreUpdate(ctx, st); err != nil {
				return err
			}
		}
		out = st
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out.Clone(), nil
}

// ListStores lists the workspace's stores newest first (created_at, then
// id, descending), leaving archived stores out unless IncludeArchived. A
// session credential sees only its attached stores. EINVALID for a limit
// outside 1..MaxPageSize (0 means the default) or a malformed cursor.
func (s *Service) ListStores(ctx context.Context, p trove.ListStoresParams) (*trove.Page[trove.Store], error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	limit, err := s.checkLimit(p.Limit, trove.ViewBasic)
	if err != nil {
		return nil, err
	}
	before, err := decodePosition(p.Cursor)
	if err != nil {
		return nil, err
	}
	var rows []trove.Store
	err = s.read(ctx, "ListStores", func(tx storage.Tx) error {
		if pr.Session != nil {
			rows, err = s.sessionStores(ctx, tx, pr, p, before, limit+1)
			return err
		}
		rows, err = tx.StoreList(ctx, storage.StoreListParams{
			WorkspaceID:     pr.WorkspaceID,
			IncludeArchived: p.IncludeArchived,
			CreatedAt:       p.CreatedAt,
			Before:          before,
			Limit:           limit + 1,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return positionPage(rows, limit, normStore, func(r *trove.Store) (time.Time, string) { return r.CreatedAt, r.ID }), nil
}

// sessionStores lists the stores attached to a session principal with the
// filters and position of a ListStores call, newest first, at most n.
func (s *Service) sessionStores(ctx context.Context, tx storage.Tx, pr *trove.Principal, p trove.ListStoresParams, before *storage.Position, n int) ([]trove.Store, error) {
	var rows []trove.Store
	for id := range pr.Session.Stores {
		st, err := tx.StoreGet(ctx, pr.WorkspaceID, id)
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			continue // deleted since the session began
		}
		if err != nil {
			return nil, err
		}
		if st.ArchivedAt != nil && !p.IncludeArchived {
			continue
		}
		if g := p.CreatedAt.GTE; g != nil && st.CreatedAt.Before(*g) {
			continue
		}
		if l := p.CreatedAt.LTE; l != nil && st.CreatedAt.After(*l) {
			continue
		}
		if before != nil && !positionLess(st.CreatedAt, st.ID, *before) {
			continue
		}
		rows = append(rows, *st)
	}
	slices.SortFunc(rows, func(a, b trove.Store) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	if len(rows) > n {
		rows = rows[:n]
	}
	return rows, nil
}

// positionLess reports whether (at, id) comes strictly after pos in a
// newest-first listing, i.e. sorts strictly before it ascending.
func positionLess(at time.Time, id string, pos storage.Position) bool {
	if c := at.Compare(pos.CreatedAt); c != 0 {
		return c < 0
	}
	return id < pos.ID
}

// ArchiveStore archives a store: one-way and idempotent (an archived store
// is returned unchanged). It sets archived_at and bumps updated_at.
// EFORBIDDEN for a session credential; ENOTFOUND for an unknown store.
func (s *Service) ArchiveStore(ctx context.Context, storeID string) (*trove.Store, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "archive memory stores"); err != nil {
		return nil, err
	}
	var out *trove.Store
	err = s.write(ctx, "ArchiveStore", func(tx storage.Tx) error {
		st, err := tx.StoreLock(ctx, pr.WorkspaceID, storeID)
		if err != nil {
			return err
		}
		st = normStore(st)
		if st.ArchivedAt == nil {
			now := s.now()
			st.ArchivedAt = &now
			st.UpdatedAt = now
			if err := tx.StoreUpdate(ctx, st); err != nil {
				return err
			}
		}
		out = st
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out.Clone(), nil
}

// DeleteStore deletes a store with all its memories and versions; archived
// stores too. EFORBIDDEN for a session credential; ENOTFOUND for an unknown
// store.
func (s *Service) DeleteStore(ctx context.Context, storeID string) error {
	pr, err := principal(ctx)
	if err != nil {
		return err
	}
	if err := notSession(pr, "delete memory stores"); err != nil {
		return err
	}
	return s.writeStore(ctx, "DeleteStore", storeID, func(tx storage.Tx) error {
		if _, err := tx.StoreLock(ctx, pr.WorkspaceID, storeID); err != nil {
			return err
		}
		return tx.StoreDelete(ctx, storeID)
	})
}

// readableStore returns a store the principal may read, or ENOTFOUND.
func (s *Service) readableStore(ctx context.Context, tx storage.Tx, pr *trove.Principal, storeID string) (*trove.Store, error) {
	if !pr.CanRead(storeID) {
		return nil, errStoreNotFound(storeID)
	}
	st, err := tx.StoreGet(ctx, pr.WorkspaceID, storeID)
	if err == nil {
		s.owners.add(storeID, pr.WorkspaceID)
	}
	return st, err
}

// lockWritableStore locks a store whose memories the principal may change:
// ENOTFOUND when it cannot even read it, EFORBIDDEN when its session has it
// read_only.
func (s *Service) lockWritableStore(ctx context.Context, tx storage.Tx, pr *trove.Principal, storeID string) (*trove.Store, error) {
	if err := checkWritable(pr, storeID); err != nil {
		return nil, err
	}
	return tx.StoreLock(ctx, pr.WorkspaceID, storeID)
}

func checkWritable(pr *trove.Principal, storeID string) error {
	if !pr.CanRead(storeID) {
		return errStoreNotFound(storeID)
	}
	if !pr.CanWrite(storeID) {
		return trove.Errorf(trove.EFORBIDDEN, "memory store %s is attached read_only to this session; writes are refused", storeID)
	}
	return nil
}

func errStoreNotFound(id string) error {
	return trove.Errorf(trove.ENOTFOUND, "memory store %s not found", id)
}

// normStore makes a driver's store follow the domain conventions (metadata
// never nil).
func normStore(st *trove.Store) *trove.Store {
	if st.Metadata == nil {
		st.Metadata = map[string]string{}
	}
	return st
}
