package core

import (
	"context"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// GetVersion returns a version of a store, redacted ones too (with path,
// content, size and hash nil). view "" means ViewFull (the API's retrieve
// default); ViewBasic leaves Content nil. ENOTFOUND for an unknown version
// or a store the caller cannot read; EINVALID for a bad view.
func (s *Service) GetVersion(ctx context.Context, storeID, versionID string, view trove.View) (*trove.MemoryVersion, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	view, err = checkView(view, trove.ViewFull)
	if err != nil {
		return nil, err
	}
	var out *trove.MemoryVersion
	err = s.read(ctx, "GetVersion", func(tx storage.Tx) error {
		if _, err := s.readableStore(ctx, tx, pr, storeID); err != nil {
			return err
		}
		v, err := tx.VersionGet(ctx, storeID, versionID, view == trove.ViewFull)
		out = v
		return err
	})
	if err != nil {
		return nil, err
	}
	return versionView(out, view), nil
}

// ListVersions lists a store's versions newest first (created_at, then id,
// descending) with the filters of p. EINVALID for a bad operation or view, a
// limit outside 1..MaxPageSize (capped at MaxFullPageSize with ViewFull) or
// a malformed cursor; ENOTFOUND for a store the caller cannot read.
func (s *Service) ListVersions(ctx context.Context, storeID string, p trove.ListVersionsParams) (*trove.Page[trove.MemoryVersion], error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	switch p.Operation {
	case "", trove.OpCreated, trove.OpModified, trove.OpDeleted:
	default:
		return nil, trove.Errorf(trove.EINVALID, "operation must be %q, %q or %q, got %q", trove.OpCreated, trove.OpModified, trove.OpDeleted, p.Operation)
	}
	view, err := checkView(p.View, trove.ViewBasic)
	if err != nil {
		return nil, err
	}
	limit, err := s.checkLimit(p.Limit, view)
	if err != nil {
		return nil, err
	}
	before, err := decodePosition(p.Cursor)
	if err != nil {
		return nil, err
	}
	var rows []trove.MemoryVersion
	err = s.read(ctx, "ListVersions", func(tx storage.Tx) error {
		if _, err := s.readableStore(ctx, tx, pr, storeID); err != nil {
			return err
		}
		rows, err = tx.VersionList(ctx, storage.VersionListParams{
			StoreID:          storeID,
			MemoryID:         p.MemoryID,
			SessionID:        p.SessionID,
			APIKeyID:         p.APIKeyID,
			ServiceAccountID: p.ServiceAccountID,
			Operation:        p.Operation,
			CreatedAt:        p.CreatedAt,
			Before:           before,
			Limit:            limit + 1,
			WithContent:      view == trove.ViewFull,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return positionPage(rows, limit, func(r *trove.MemoryVersion) *trove.MemoryVersion { return versionView(r, view) }, func(r *trove.MemoryVersion) (time.Time, string) { return r.CreatedAt, r.ID }), nil
}

// RedactVersion nulls a version's path, content, size and hash and records
// who redacted it and when, keeping operation, created_by and created_at.
// It is idempotent: an already redacted version is returned unchanged.
// Allowed on archived stores. EINVALID for the current version of a live
// memory (update or delete the memory first); EFORBIDDEN for a session
// credential; ENOTFOUND for an unknown store or version.
func (s *Service) RedactVersion(ctx context.Context, storeID, versionID string) (*trove.MemoryVersion, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "redact memory versions"); err != nil {
		return nil, err
	}
	var out *trove.MemoryVersion
	err = s.write(ctx, "RedactVersion", func(tx storage.Tx) error {
		if _, err := tx.StoreLock(ctx, pr.WorkspaceID, storeID); err != nil {
			return err
		}
		v, err := tx.VersionGet(ctx, storeID, versionID, false)
		if err != nil {
			return err
		}
		if v.RedactedAt != nil {
			out = v
			return nil
		}
		m, err := tx.MemoryGet(ctx, storeID, v.MemoryID, false)
		switch {
		case err == nil && m.VersionID == v.ID:
			return trove.Errorf(trove.EINVALID, "version %s is the current version of memory %s; update or delete the memory first, then redact this version", v.ID, m.ID)
		case err != nil && trove.ErrorCode(err) != trove.ENOTFOUND:
			return err
		}
		if err := tx.VersionRedact(ctx, storeID, versionID, s.now(), pr.Actor); err != nil {
			return err
		}
		out, err = tx.VersionGet(ctx, storeID, versionID, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	return versionView(out, trove.ViewBasic), nil
}

// versionView returns a copy of v following the domain conventions: Content
// only under ViewFull for a non-deleted, unredacted version.
func versionView(v *trove.MemoryVersion, view trove.View) *trove.MemoryVersion {
	c := *v
	if view != trove.ViewFull || v.Operation == trove.OpDeleted || v.RedactedAt != nil {
		c.Content = nil
	} else if c.Content == nil {
		empty := ""
		c.Content = &empty
	}
	if v.RedactedAt != nil {
		c.Path, c.SizeBytes, c.SHA256 = nil, nil, nil
	}
	if v.Operation == trove.OpDeleted {
		c.SizeBytes, c.SHA256 = nil, nil
	}
	return &c
}
