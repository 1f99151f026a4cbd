package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// errDryRun rolls back a dry run's transaction.
var errDryRun = errors.New("core: dry run")

// RollbackActor undoes what one session or API key wrote to a store after
// p.Since (trove.HistoryService). For each memory the actor wrote after
// the moment, the target is the version current just before the actor's
// first such write (none when the actor created the memory); the memory
// is deleted, restored (same memory ID) or reverted to it with a new
// version by the caller. A memory conflicts, and is left alone, when
// someone else wrote it after the actor did, when its target version is
// redacted, or when its target path is taken by another memory. Without
// p.Force any conflict refuses the whole change set: nothing is written
// and the result (Applied false) lists the conflicts. p.DryRun computes
// exactly what would be applied (in a transaction that is rolled back).
//
// The result lists at most p.Limit changes and conflicts (0: all), with
// the totals and, for a dry run or a refusal, NextPage: p.Cursor reads the
// next p.Limit of each, recomputing the same dry run, which is the same
// only while the store's newest version is the one the first page saw
// (ECONFLICT otherwise: preview again).
//
// EINVALID unless exactly one of SessionID and APIKeyID is set, for a
// missing or bad Since, a bad Limit or Cursor (a cursor without DryRun, or
// another actor's), or on an archived store; ENOTFOUND for a store the
// caller cannot read; EFORBIDDEN for a session with the store read_only.
func (s *Service) RollbackActor(ctx context.Context, storeID string, p trove.RollbackParams) (*trove.RollbackResult, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	var who trove.Actor
	switch {
	case p.SessionID != "" && p.APIKeyID == "":
		who = trove.NewActor(trove.ActorSession, p.SessionID)
	case p.APIKeyID != "" && p.SessionID == "":
		who = trove.NewActor(trove.ActorAPI, p.APIKeyID)
	default:
		return nil, trove.Errorf(trove.EINVALID, "name exactly one actor to roll back: a session ID or an API key ID")
	}
	if p.Limit < 0 || p.Limit > trove.MaxRollbackPageSize {
		return nil, trove.Errorf(trove.EINVALID, "limit must be between 1 and %d, got %d", trove.MaxRollbackPageSize, p.Limit)
	}
	whoID, _ := who.ID()
	var pin *rollbackPin
	if p.Cursor != "" {
		if !p.DryRun {
			return nil, trove.Errorf(trove.EINVALID, "page continues a dry run's listing: send it with dry_run true (a rollback is applied whole, never a page of it)")
		}
		if pin, err = decodeRollbackCursor(p.Cursor, whoID); err != nil {
			return nil, err
		}
	} else if p.Since.IsZero() {
		return nil, trove.Errorf(trove.EINVALID, "say since when to roll back (a time, a version ID or a version number)")
	}
	if err := checkWritable(pr, storeID); err != nil {
		return nil, err
	}
	var out *trove.RollbackResult
	var head int64
	// The transaction is run unmapped: errDryRun is how a dry run rolls
	// back, not an error, so it is neither logged nor turned into
	// EINTERNAL (mapErr), only the real failures are.
	err = s.writeRaw(ctx, func(tx storage.Tx) error {
		out = &trove.RollbackResult{Changes: []trove.RollbackChange{}, Conflicts: []trove.RollbackConflict{}}
		st, err := s.lockWritableStore(ctx, tx, pr, storeID)
		if err != nil {
			return err
		}
		if head, err = tx.StoreSeq(ctx, storeID); err != nil {
			return err
		}
		if pin != nil {
			if head != pin.head {
				return trove.Errorf(trove.ECONFLICT, "memory store %s changed since this dry run's first page (its newest version was %d, now %d): preview the rollback again from the start", storeID, pin.head, head)
			}
			out.SinceSeq = pin.since
		} else if out.SinceSeq, err = resolveMoment(ctx, tx, storeID, p.Since); err != nil {
			return err
		}
		if err := s.planRollback(ctx, tx, storeID, who, out); err != nil {
			return err
		}
		if len(out.Changes) == 0 {
			return nil
		}
		if st.ArchivedAt != nil {
			return errArchived(storeID, "nothing can be rolled back")
		}
		if err := s.applyRollback(ctx, tx, pr, storeID, out); err != nil {
			return err
		}
		if p.DryRun || (len(out.Conflicts) > 0 && !p.Force) {
			return errDryRun
		}
		out.Applied = true
		return nil
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return nil, s.mapErr(ctx, "RollbackActor", err)
	}
	out.ChangesTotal, out.ConflictsTotal = len(out.Changes), len(out.Conflicts)
	if p.Limit > 0 {
		off := 0
		if pin != nil {
			off = pin.offset
		}
		out.Changes = pageOf(out.Changes, off, p.Limit)
		out.Conflicts = pageOf(out.Conflicts, off, p.Limit)
		if !out.Applied && off+p.Limit < max(out.ChangesTotal, out.ConflictsTotal) {
			out.NextPage = encodeCursor(cursorJSON{K: kindRollback, S: fmt.Sprintf("%d:%d", out.SinceSeq, head), I: strconv.Itoa(off + p.Limit), F: whoID})
		}
	}
	return out, nil
}

// kindRollback is the cursor kind of a rollback dry run's listing:
// {"v":1,"k":"r","s":"<since seq>:<head seq>","i":"<offset>","f":"<actor id>"}.
// Unlike the other cursors it holds an offset: a dry run is recomputed
// whole for each page, and its order is fixed while the store's head is
// the pinned one (checked).
const kindRollback = "r"

// rollbackPin is what a rollback cursor pins.
type rollbackPin struct {
	since, head int64
	offset      int
}

func decodeRollbackCursor(s, actorID string) (*rollbackPin, error) {
	c, err := decodeCursor(s, kindRollback)
	if err != nil {
		return nil, err
	}
	var pin rollbackPin
	if _, err := fmt.Sscanf(c.S, "%d:%d", &pin.since, &pin.head); err != nil || pin.since < 0 || pin.head < 0 {
		return nil, errBadCursor()
	}
	if pin.offset, err = strconv.Atoi(c.I); err != nil || pin.offset < 0 {
		return nil, errBadCursor()
	}
	if c.F != actorID {
		return nil, trove.Errorf(trove.EINVALID, "this page cursor continues the dry run of another actor's rollback (%s), not %s's", c.F, actorID)
	}
	return &pin, nil
}

// pageOf returns the limit items of xs from off (a new slice, so the rest
// is not kept).
func pageOf[T any](xs []T, off, limit int) []T {
	if off >= len(xs) {
		return []T{}
	}
	return slices.Clone(xs[off:min(len(xs), off+limit)])
}

// rollbackScanPage is how many versions planRollback reads at a time.
const rollbackScanPage = 256

// planRollback fills out.Changes and out.Conflicts (the ones visible
// before applying anything) from the store's history after out.SinceSeq,
// read a page at a time: what it keeps is a copy of two versions per
// memory the actor wrote, not the history.
func (s *Service) planRollback(ctx context.Context, tx storage.Tx, storeID string, who trove.Actor, out *trove.RollbackResult) error {
	type track struct {
		first   int64                // seq of the actor's first write after the moment
		current *trove.MemoryVersion // newest version
		other   *trove.MemoryVersion // newest version by someone else after first
	}
	tracks := map[string]*track{}
	var order []string
	for after := out.SinceSeq; ; {
		history, err := tx.VersionScan(ctx, storage.VersionScanParams{StoreID: storeID, AfterSeq: after, Limit: rollbackScanPage})
		if err != nil {
			return err
		}
		for i := range history {
			v := &history[i]
			mine := v.CreatedBy != nil && *v.CreatedBy == who
			t := tracks[v.MemoryID]
			if t == nil {
				if !mine {
					continue
				}
				t = &track{first: v.Seq}
				tracks[v.MemoryID] = t
				order = append(order, v.MemoryID)
			}
			c := *v // a copy: the page is not kept
			t.current = &c
			if !mine {
				t.other = &c
			}
		}
		if len(history) < rollbackScanPage {
			break
		}
		after = history[len(history)-1].Seq
	}
	for _, id := range order {
		t := tracks[id]
		cur := versionView(t.current, trove.ViewBasic)
		if t.other != nil {
			out.Conflicts = append(out.Conflicts, trove.RollbackConflict{
				MemoryID: id, Path: pathOf(t.current), Version: versionView(t.other, trove.ViewBasic),
				Reason: fmt.Sprintf("changed by %s after the rolled-back writes", describeActor(t.other.CreatedBy)),
			})
			continue
		}
		prior, err := tx.VersionAsOf(ctx, storage.VersionAsOfParams{StoreID: storeID, Seq: t.first - 1, MemoryID: id})
		if err != nil {
			return err
		}
		live := t.current.Operation != trove.OpDeleted
		switch {
		case len(prior) == 0 && !live:
			continue // created and deleted again by the actor
		case len(prior) == 0:
			out.Changes = append(out.Changes, trove.RollbackChange{Action: trove.RollbackDelete, MemoryID: id, Current: cur})
			continue
		}
		target := &prior[0]
		if target.RedactedAt != nil {
			out.Conflicts = append(out.Conflicts, trove.RollbackConflict{
				MemoryID: id, Path: pathOf(t.current), Version: versionView(target, trove.ViewBasic),
				Reason: "the version to go back to is redacted; its content is gone",
			})
			continue
		}
		action := trove.RollbackRevert
		if !live {
			action = trove.RollbackRestore
		} else if ptrEqual(t.current.Path, target.Path) && ptrEqual(t.current.SHA256, target.SHA256) {
			continue // already as it was
		}
		out.Changes = append(out.Changes, trove.RollbackChange{Action: action, MemoryID: id, Current: cur, Target: versionView(target, trove.ViewBasic)})
	}
	return nil
}

// applyRollback writes out.Changes (deletes first, so that paths they free
// can be reused), moving a change whose target path is taken to
// out.Conflicts.
func (s *Service) applyRollback(ctx context.Context, tx storage.Tx, pr *trove.Principal, storeID string, out *trove.RollbackResult) error {
	now := s.now()
	slices.SortStableFunc(out.Changes, func(a, b trove.RollbackChange) int {
		return boolInt(a.Action != trove.RollbackDelete) - boolInt(b.Action != trove.RollbackDelete)
	})
	kept := out.Changes[:0:0]
	for _, c := range out.Changes {
		switch c.Action {
		case trove.RollbackDelete:
			if err := tx.MemoryDelete(ctx, storeID, c.MemoryID); err != nil {
				return err
			}
			path := *c.Current.Path
			if err := tx.VersionInsert(ctx, &trove.MemoryVersion{
				ID: trove.NewID(trove.PrefixVersion, now), StoreID: storeID, MemoryID: c.MemoryID,
				Operation: trove.OpDeleted, Path: &path, CreatedBy: actor(pr), CreatedAt: now,
			}); err != nil {
				return err
			}
		default:
			full, err := tx.VersionGet(ctx, storeID, c.Target.ID, true)
			if err != nil {
				return err
			}
			if err := checkOverlap(ctx, tx, storeID, *full.Path, c.MemoryID); err != nil {
				if trove.ErrorCode(err) != trove.EPATHCONFLICT {
					return err
				}
				out.Conflicts = append(out.Conflicts, trove.RollbackConflict{
					MemoryID: c.MemoryID, Path: *full.Path, Version: c.Current,
					Reason: err.Error(),
				})
				continue
			}
			content := *full.Content
			m := &trove.Memory{
				ID: c.MemoryID, StoreID: storeID, Path: *full.Path, Content: &content, SizeBytes: len(content),
				SHA256: *full.SHA256, VersionID: trove.NewID(trove.PrefixVersion, now), CreatedAt: now, UpdatedAt: now,
			}
			op := trove.OpModified
			if c.Action == trove.RollbackRestore {
				op = trove.OpCreated
				if err := s.checkGrowth(ctx, tx, storeID, growth{memories: 1, bytes: int64(len(content)), versions: 1}); err != nil {
					return trove.Errorf(trove.EINVALID, "restoring %s: %s", c.MemoryID, trove.ErrorMessage(err))
				}
				if err := tx.MemoryInsert(ctx, m); err != nil {
					return err
				}
			} else {
				old, err := tx.MemoryGet(ctx, storeID, c.MemoryID, false)
				if err != nil {
					return err
				}
				if err := s.checkGrowth(ctx, tx, storeID, growth{bytes: int64(len(content) - old.SizeBytes), versions: 1}); err != nil {
					return trove.Errorf(trove.EINVALID, "reverting %s: %s", c.MemoryID, trove.ErrorMessage(err))
				}
				m.CreatedAt = old.CreatedAt
				if err := tx.MemoryUpdate(ctx, m); err != nil {
					return err
				}
			}
			if err := tx.VersionInsert(ctx, versionOf(m, op, pr)); err != nil {
				return err
			}
		}
		kept = append(kept, c)
	}
	out.Changes = kept
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func pathOf(v *trove.MemoryVersion) string {
	if v.Path == nil {
		return ""
	}
	return *v.Path
}

func describeActor(a *trove.Actor) string {
	if a == nil {
		return "an unrecorded actor"
	}
	id, _ := a.ID()
	return id
}
