package core

import (
	"context"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// forkPage is how many source memories a fork reads at a time, and
// forkPageBytes bounds their contents (a page of 2,000 memories at the
// content limit would be 200 MiB): a page ends after the memory whose
// content passes it.
const (
	forkPage      = 2000
	forkPageBytes = 16 << 20
)

// ForkStore creates a store holding the source store's memories as of
// p.AsOf (trove.HistoryService), in one transaction: the new store and,
// for each memory, a new memory (new ID, same path and content) whose
// first version (OpCreated, by the caller) has Origin naming the source
// store and version. Memories whose version at the moment is redacted are
// skipped and listed. Later writes to either store do not affect the other.
// EFORBIDDEN for a session credential (it cannot create stores); EINVALID
// for a bad name, description, metadata or moment, a workspace at
// MaxStoresPerWorkspace, or more memories or content than a store may hold
// (MaxMemoriesPerStore, MaxVersionsPerStore, MaxStoreBytes); ENOTFOUND for an unknown source store or version.
func (s *Service) ForkStore(ctx context.Context, storeID string, p trove.ForkStoreParams) (*trove.ForkResult, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "fork memory stores"); err != nil {
		return nil, err
	}
	md, err := s.validateNewStore(p.Name, p.Description, p.Metadata)
	if err != nil {
		return nil, err
	}
	var out *trove.ForkResult
	err = s.write(ctx, "ForkStore", func(tx storage.Tx) error {
		out = &trove.ForkResult{Skipped: []string{}}
		if _, err := s.readableStore(ctx, tx, pr, storeID); err != nil {
			return err
		}
		seq, err := resolveMoment(ctx, tx, storeID, p.AsOf)
		if err != nil {
			return err
		}
		out.Seq = seq
		if err := s.checkStoreCount(ctx, tx, pr.WorkspaceID); err != nil {
			return err
		}
		now := s.now()
		var bytes int64
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
		out.Store = st
		var after *storage.AsOfPosition
		for {
			page, err := tx.VersionAsOf(ctx, storage.VersionAsOfParams{StoreID: storeID, Seq: seq, After: after, Limit: forkPage, WithContent: true, MaxBytes: forkPageBytes})
			if err != nil {
				return err
			}
			var ms []*trove.Memory
			var vs []*trove.MemoryVersion
			read := 0 // content bytes of the page: past forkPageBytes, it was cut there
			for i := range page {
				v := &page[i]
				if v.Content != nil {
					read += len(*v.Content)
				}
				if v.RedactedAt != nil || v.Path == nil || v.Content == nil {
					out.Skipped = append(out.Skipped, v.MemoryID)
					continue
				}
				if out.Copied >= s.limits.MaxMemoriesPerStore {
					return trove.Errorf(trove.EINVALID, "memory store %s held more than the limit of %d memories at version %d; it cannot be forked", storeID, s.limits.MaxMemoriesPerStore, seq)
				}
				if out.Copied >= s.limits.MaxVersionsPerStore {
					return trove.Errorf(trove.EINVALID, "memory store %s held more memories at version %d than the limit of %d versions of the fork; it cannot be forked", storeID, seq, s.limits.MaxVersionsPerStore)
				}
				content := *v.Content
				if bytes += int64(len(content)); bytes > int64(s.limits.MaxStoreBytes) {
					return trove.Errorf(trove.EINVALID, "memory store %s held more than the limit of %d bytes of memory content at version %d; it cannot be forked", storeID, s.limits.MaxStoreBytes, seq)
				}
				m := &trove.Memory{
					ID: trove.NewID(trove.PrefixMemory, now), StoreID: st.ID, Path: *v.Path, Content: &content,
					SizeBytes: len(content), SHA256: *v.SHA256, VersionID: trove.NewID(trove.PrefixVersion, now),
					CreatedAt: now, UpdatedAt: now,
				}
				ver := versionOf(m, trove.OpCreated, pr)
				ver.Origin = &trove.VersionOrigin{StoreID: storeID, VersionID: v.ID}
				ms, vs = append(ms, m), append(vs, ver)
				out.Copied++
			}
			if err := tx.MemoryInsertBatch(ctx, ms, vs); err != nil {
				return err
			}
			if len(page) == 0 || (len(page) < forkPage && read <= forkPageBytes) {
				return nil
			}
			last := page[len(page)-1]
			after = &storage.AsOfPosition{MemoryID: last.MemoryID}
			if last.Path != nil {
				after.Path = *last.Path
			}
		}
	})
	if err != nil {
		return nil, err
	}
	out.Store = out.Store.Clone()
	return out, nil
}
