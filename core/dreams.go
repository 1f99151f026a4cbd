package core

import (
	"context"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

var _ trove.DreamService = (*Service)(nil)

// DreamSpeedStandard is the only model speed dreams accept.
const DreamSpeedStandard = "standard"

// CreateDream queues a dream (status pending, usage zero, no outputs).
//
// The request needs exactly one store and 1..MaxDreamSessions distinct
// sessions of the caller's workspace (kept sorted); a model id of
// 1..MaxDreamModelChars characters with speed "" or "standard"; at most
// MaxInstructionsChars characters of instructions; output behaviour
// create_new ("" too) or update_existing naming the input store.
//
// EFORBIDDEN for a session credential; EINVALID for a bad request or an
// archived store; ENOTFOUND for a store or session not in the workspace;
// ECONFLICT for update_existing while another update_existing dream on the
// store has not fully stopped (pending, running, or its runner still
// holding its lease after a cancel). The store is locked while checking,
// so two concurrent in-place dreams cannot both be created.
func (s *Service) CreateDream(ctx context.Context, p trove.CreateDreamParams) (*trove.Dream, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "create dreams"); err != nil {
		return nil, err
	}
	if p.StoreID == "" {
		return nil, trove.Errorf(trove.EINVALID, "a dream needs one memory_store input")
	}
	if len(p.SessionIDs) == 0 || len(p.SessionIDs) > s.limits.MaxDreamSessions {
		return nil, trove.Errorf(trove.EINVALID, "a dream needs 1 to %d session_ids, got %d", s.limits.MaxDreamSessions, len(p.SessionIDs))
	}
	sessions := slices.Sorted(slices.Values(p.SessionIDs))
	for i, id := range sessions {
		if id == "" {
			return nil, trove.Errorf(trove.EINVALID, "session_ids must not hold an empty id")
		}
		if i > 0 && sessions[i-1] == id {
			return nil, trove.Errorf(trove.EINVALID, "session %s is listed more than once", id)
		}
	}
	if n := utf8.RuneCountInString(p.Model); n == 0 || n > s.limits.MaxDreamModelChars || !utf8.ValidString(p.Model) {
		return nil, trove.Errorf(trove.EINVALID, "model must be 1 to %d characters, got %d", s.limits.MaxDreamModelChars, n)
	}
	speed := p.ModelSpeed
	if speed == "" {
		speed = DreamSpeedStandard
	}
	if speed != DreamSpeedStandard {
		return nil, trove.Errorf(trove.EINVALID, "model speed must be %q, got %q", DreamSpeedStandard, p.ModelSpeed)
	}
	if !utf8.ValidString(p.Instructions) {
		return nil, trove.Errorf(trove.EINVALID, "instructions must be valid UTF-8")
	}
	if n := utf8.RuneCountInString(p.Instructions); n > s.limits.MaxInstructionsChars {
		return nil, trove.Errorf(trove.EINVALID, "instructions must be at most %d characters, got %d", s.limits.MaxInstructionsChars, n)
	}
	behavior := p.OutputBehavior
	switch behavior {
	case "", trove.OutputCreateNew:
		behavior = trove.OutputCreateNew
		if p.OutputStoreID != "" {
			return nil, trove.Errorf(trove.EINVALID, "output_behavior create_new takes no memory_store_id")
		}
	case trove.OutputUpdateExisting:
		if p.OutputStoreID != p.StoreID {
			return nil, trove.Errorf(trove.EINVALID, "output_behavior update_existing must name the input memory store %s, got %q", p.StoreID, p.OutputStoreID)
		}
	default:
		return nil, trove.Errorf(trove.EINVALID, "output_behavior must be %q or %q, got %q", trove.OutputCreateNew, trove.OutputUpdateExisting, p.OutputBehavior)
	}
	var out *trove.Dream
	err = s.write(ctx, "CreateDream", func(tx storage.Tx) error {
		now := s.now()
		st, err := tx.StoreLock(ctx, pr.WorkspaceID, p.StoreID)
		if err != nil {
			return err
		}
		if st.ArchivedAt != nil {
			return errArchived(st.ID, "an archived memory store cannot be a dream's input")
		}
		for _, id := range sessions {
			if _, err := tx.SessionGet(ctx, pr.WorkspaceID, id); err != nil {
				return err
			}
		}
		if behavior == trove.OutputUpdateExisting {
			busy, err := tx.DreamInPlaceBusy(ctx, st.ID, now)
			if err != nil {
				return err
			}
			if busy {
				return trove.Errorf(trove.ECONFLICT, "another update_existing dream on memory store %s has not fully stopped; wait for it to end or cancel it", st.ID)
			}
		}
		d := &trove.Dream{
			ID:             trove.NewID(trove.PrefixDream, now),
			WorkspaceID:    pr.WorkspaceID,
			Status:         trove.DreamPending,
			InputStoreID:   st.ID,
			SessionIDs:     sessions,
			Model:          p.Model,
			ModelSpeed:     speed,
			Instructions:   p.Instructions,
			OutputBehavior: behavior,
			CreatedBy:      pr.Actor,
			CreatedAt:      now,
		}
		if err := tx.DreamInsert(ctx, d); err != nil {
			return err
		}
		// The runners' queue: the dream's job, in the same transaction.
		if err := tx.JobWake(ctx, storage.JobDream, d.ID, now); err != nil {
			return err
		}
		out = d
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cloneDream(out), nil
}

// GetDream returns a dream of the caller's workspace, archived ones too.
// EFORBIDDEN for a session credential; ENOTFOUND for an unknown dream.
func (s *Service) GetDream(ctx context.Context, dreamID string) (*trove.Dream, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "read dreams"); err != nil {
		return nil, err
	}
	var out *trove.Dream
	err = s.read(ctx, "GetDream", func(tx storage.Tx) error {
		out, err = tx.DreamGet(ctx, pr.WorkspaceID, dreamID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return cloneDream(out), nil
}

// ListDreams lists the workspace's dreams newest first, archived ones only
// with IncludeArchived, filtered by statuses and created_at bounds
// (exclusive). EINVALID for a bad limit, status or cursor.
func (s *Service) ListDreams(ctx context.Context, p trove.ListDreamsParams) (*trove.Page[trove.Dream], error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "list dreams"); err != nil {
		return nil, err
	}
	limit, err := s.checkLimit(p.Limit, trove.ViewBasic)
	if err != nil {
		return nil, err
	}
	for _, st := range p.Statuses {
		switch st {
		case trove.DreamPending, trove.DreamRunning, trove.DreamCompleted, trove.DreamFailed, trove.DreamCanceled:
		default:
			return nil, trove.Errorf(trove.EINVALID, "statuses must be pending, running, completed, failed or canceled, got %q", st)
		}
	}
	before, err := decodePosition(p.Cursor)
	if err != nil {
		return nil, err
	}
	var rows []trove.Dream
	err = s.read(ctx, "ListDreams", func(tx storage.Tx) error {
		rows, err = tx.DreamList(ctx, storage.DreamListParams{
			WorkspaceID: pr.WorkspaceID, Statuses: p.Statuses, CreatedAfter: p.CreatedAfter,
			CreatedBefore: p.CreatedBefore, IncludeArchived: p.IncludeArchived, Before: before, Limit: limit + 1,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return positionPage(rows, limit, cloneDream, func(d *trove.Dream) (time.Time, string) { return d.CreatedAt, d.ID }), nil
}

// CancelDream moves a pending or running dream to canceled (ended_at set);
// a canceled dream is returned unchanged. A running dream's runner notices
// at its next heartbeat and stops; the output keeps what was written.
// EINVALID for a completed or failed dream; ENOTFOUND for an unknown one.
func (s *Service) CancelDream(ctx context.Context, dreamID string) (*trove.Dream, error) {
	return s.changeDream(ctx, "CancelDream", dreamID, func(d *trove.Dream, now time.Time) error {
		switch d.Status {
		case trove.DreamCanceled:
		case trove.DreamCompleted, trove.DreamFailed:
			return trove.Errorf(trove.EINVALID, "dream %s is %s; only pending or running dreams can be canceled", d.ID, d.Status)
		default:
			d.Status, d.EndedAt = trove.DreamCanceled, &now
		}
		return nil
	})
}

// ArchiveDream sets archived_at on a completed, failed or canceled dream
// (idempotent; the first time is kept) and leaves its output store alone.
// EINVALID for a pending or running dream (cancel it first).
func (s *Service) ArchiveDream(ctx context.Context, dreamID string) (*trove.Dream, error) {
	return s.changeDream(ctx, "ArchiveDream", dreamID, func(d *trove.Dream, now time.Time) error {
		if !d.Status.Terminal() {
			return trove.Errorf(trove.EINVALID, "dream %s is %s; only completed, failed or canceled dreams can be archived (cancel it first)", d.ID, d.Status)
		}
		if d.ArchivedAt == nil {
			d.ArchivedAt = &now
		}
		return nil
	})
}

func (s *Service) changeDream(ctx context.Context, op, dreamID string, f func(d *trove.Dream, now time.Time) error) (*trove.Dream, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "change dreams"); err != nil {
		return nil, err
	}
	var out *trove.Dream
	err = s.write(ctx, op, func(tx storage.Tx) error {
		d, err := tx.DreamLock(ctx, pr.WorkspaceID, dreamID)
		if err != nil {
			return err
		}
		before := *cloneDream(d)
		if err := f(d, s.now()); err != nil {
			return err
		}
		out = d
		if d.Status == before.Status && timePtrEqual(d.ArchivedAt, before.ArchivedAt) {
			return nil
		}
		return tx.DreamUpdate(ctx, d)
	})
	if err != nil {
		return nil, err
	}
	return cloneDream(out), nil
}

// timePtrEqual reports whether a and b are both nil or the same instant.
func timePtrEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// cloneDream returns a copy sharing nothing with d.
func cloneDream(d *trove.Dream) *trove.Dream {
	c := *d
	c.SessionIDs = append(make([]string, 0, len(d.SessionIDs)), d.SessionIDs...)
	if d.Error != nil {
		e := *d.Error
		c.Error = &e
	}
	for _, p := range []**time.Time{&c.EndedAt, &c.ArchivedAt, &c.LeaseExpiresAt} {
		if *p != nil {
			t := **p
			*p = &t
		}
	}
	return &c
}

// ---- the runner's side: operator functions, no principal ----

// ClaimDream takes, for lease, the dream whose job (storage.JobDream) was
// woken longest ago and is free or whose runner's lease expired (a node
// that died), on behalf of the runner named owner, through the jobs queue
// session runs and webhook deliveries use. It returns nil, nil when there
// is none. A dream canceled before any runner started it (terminal, no
// session) has nothing left to do: its job is marked done and the next
// one is tried. The caller decides what another claimed dream that is not
// pending means (see package dreamrun).
func (s *Service) ClaimDream(ctx context.Context, owner string, lease time.Duration) (*trove.Dream, error) {
	var out *trove.Dream
	err := s.write(ctx, "ClaimDream", func(tx storage.Tx) error {
		out = nil
		now := s.now()
		for {
			j, err := tx.JobClaim(ctx, storage.JobDream, owner, now, now.Add(lease))
			if trove.ErrorCode(err) == trove.ENOTFOUND {
				return nil
			}
			if err != nil {
				return err
			}
			d, err := tx.DreamGet(ctx, "", j.Key)
			if trove.ErrorCode(err) == trove.ENOTFOUND {
				if err := tx.JobDone(ctx, storage.JobDream, j.Key, owner); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			if d.Status.Terminal() && d.SessionID == "" {
				if err := tx.JobDone(ctx, storage.JobDream, j.Key, owner); err != nil {
					return err
				}
				continue
			}
			out = d
			return nil
		}
	})
	if err != nil || out == nil {
		return nil, err
	}
	return cloneDream(out), nil
}

// DreamProgress is what a runner records about a dream it holds. Empty
// fields are left unchanged; Usage, when not nil, replaces the usage.
type DreamProgress struct {
	Running       bool // move a pending dream to running
	OutputStoreID string
	SessionID     string
	Usage         *trove.DreamUsage
}

// RecordDream is the runner's heartbeat: it renews owner's lease on the
// dream for lease and records p, and returns the dream as it now is (so
// the runner sees a cancel). A terminal dream keeps its status; only its
// usage may still change. ECONFLICT when owner no longer holds the lease
// (it expired and another runner claimed the dream).
func (s *Service) RecordDream(ctx context.Context, dreamID, owner string, lease time.Duration, p DreamProgress) (*trove.Dream, error) {
	var out *trove.Dream
	err := s.write(ctx, "RecordDream", func(tx storage.Tx) error {
		d, err := tx.DreamLock(ctx, "", dreamID)
		if err != nil {
			return err
		}
		j, err := tx.JobRenew(ctx, storage.JobDream, dreamID, owner, s.now().Add(lease))
		if err != nil {
			return dreamLeaseLost(err, dreamID, owner)
		}
		d.LeaseOwner, d.LeaseExpiresAt, d.Attempts = j.LeaseOwner, j.LeaseExpiresAt, int(j.Attempts)
		if p.Running && d.Status == trove.DreamPending {
			d.Status = trove.DreamRunning
		}
		if p.OutputStoreID != "" {
			d.OutputStoreID = p.OutputStoreID
		}
		if p.SessionID != "" {
			d.SessionID = p.SessionID
		}
		if p.Usage != nil {
			d.Usage = *p.Usage
		}
		out = d
		return tx.DreamUpdate(ctx, d)
	})
	if err != nil {
		return nil, err
	}
	return cloneDream(out), nil
}

// FinishDream ends owner's run of a dream: a dream that is not terminal yet
// becomes status (completed or failed) with ended_at and derr; a dream
// already terminal (canceled meanwhile) keeps its status. usage, when not
// nil, is recorded either way, and the dream's job is marked done
// (JobDone): no runner takes it again. ECONFLICT when owner does not hold
// the lease.
func (s *Service) FinishDream(ctx context.Context, dreamID, owner string, status trove.DreamStatus, derr *trove.DreamError, usage *trove.DreamUsage) (*trove.Dream, error) {
	if !status.Terminal() {
		return nil, trove.Errorf(trove.EINVALID, "a dream finishes completed, failed or canceled, not %q", status)
	}
	var out *trove.Dream
	err := s.write(ctx, "FinishDream", func(tx storage.Tx) error {
		d, err := tx.DreamLock(ctx, "", dreamID)
		if err != nil {
			return err
		}
		// The "mark done" of the dream's job: no runner takes it again.
		if err := tx.JobDone(ctx, storage.JobDream, dreamID, owner); err != nil {
			return dreamLeaseLost(err, dreamID, owner)
		}
		now := s.now()
		if !d.Status.Terminal() {
			d.Status, d.EndedAt = status, &now
			if status == trove.DreamFailed && derr != nil {
				e := *derr
				d.Error = &e
			}
		}
		if usage != nil {
			d.Usage = *usage
		}
		d.LeaseOwner, d.LeaseExpiresAt, d.Attempts = "", nil, 0
		out = d
		return tx.DreamUpdate(ctx, d)
	})
	if err != nil {
		return nil, err
	}
	return cloneDream(out), nil
}

// dreamLeaseLost is the error of a runner's call on a dream whose job it
// no longer holds (err from JobRenew or JobDone): ECONFLICT, also when the
// job is gone (finished by the runner that took it over).
func dreamLeaseLost(err error, dreamID, owner string) error {
	switch trove.ErrorCode(err) {
	case trove.ECONFLICT, trove.ENOTFOUND:
		return trove.Errorf(trove.ECONFLICT, "dream %s is no longer held by runner %s", dreamID, owner)
	}
	return err
}
