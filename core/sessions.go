package core

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// MountRoot is where attached stores appear in a session's sandbox.
const MountRoot = "/mnt/memory/"

// CreateSession creates a session with the given stores attached and returns
// it with its credential ("trove_st_" + 40 base62 characters), shown once
// and stored only as a SHA-256 hash. Each attachment snapshots the store's
// name and description and gets MountPath "/mnt/memory/<slug>", made unique
// within the session with "-2", "-3"… suffixes.
//
// EINVALID for more than MaxStoresPerSession stores, a duplicate or archived
// store, an access other than read_write or read_only ("" means read_write),
// or instructions longer than MaxInstructionsChars characters; ENOTFOUND for
// a store that is not in the caller's workspace; EFORBIDDEN for a session
// credential.
func (s *Service) CreateSession(ctx context.Context, p trove.CreateSessionParams) (*trove.Session, string, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, "", err
	}
	if err := notSession(pr, "create sessions"); err != nil {
		return nil, "", err
	}
	md, initial, err := s.checkNewSession(&p)
	if err != nil {
		return nil, "", err
	}
	if len(p.Stores) > s.limits.MaxStoresPerSession {
		return nil, "", trove.Errorf(trove.EINVALID, "a session can have at most %d memory stores attached, got %d", s.limits.MaxStoresPerSession, len(p.Stores))
	}
	seen := make(map[string]bool, len(p.Stores))
	attach := make([]trove.AttachStoreParams, len(p.Stores))
	for i, a := range p.Stores {
		if seen[a.StoreID] {
			return nil, "", trove.Errorf(trove.EINVALID, "memory store %s is attached more than once", a.StoreID)
		}
		seen[a.StoreID] = true
		switch a.Access {
		case "":
			a.Access = trove.AccessReadWrite
		case trove.AccessReadWrite, trove.AccessReadOnly:
		default:
			return nil, "", trove.Errorf(trove.EINVALID, "access must be %q or %q, got %q", trove.AccessReadWrite, trove.AccessReadOnly, a.Access)
		}
		if !utf8.ValidString(a.Instructions) {
			return nil, "", trove.Errorf(trove.EINVALID, "instructions must be valid UTF-8")
		}
		if n := utf8.RuneCountInString(a.Instructions); n > s.limits.MaxInstructionsChars {
			return nil, "", trove.Errorf(trove.EINVALID, "instructions must be at most %d characters, got %d", s.limits.MaxInstructionsChars, n)
		}
		attach[i] = a
	}
	token := newSecret(SessionTokenPrefix)
	var out *trove.Session
	err = s.write(ctx, "CreateSession", func(tx storage.Tx) error {
		now := s.now()
		se := &trove.Session{
			ID:          trove.NewID(trove.PrefixSession, now),
			WorkspaceID: pr.WorkspaceID,
			Stores:      make([]trove.SessionStore, 0, len(attach)),
			CreatedBy:   pr.Actor,
			CreatedAt:   now,
			Title:       p.Title,
			Metadata:    md,
			Status:      trove.SessionIdle,
			UpdatedAt:   now,
		}
		if p.Agent != nil {
			m, err := s.resolveManaged(ctx, tx, pr.WorkspaceID, &p)
			if err != nil {
				return err
			}
			se.Managed = m
		}
		// Lock the stores (in ID order, so concurrent sessions cannot
		// deadlock) so that none is archived or deleted mid-attach.
		locked := make(map[string]*trove.Store, len(attach))
		for _, id := range slices.Sorted(maps.Keys(seen)) {
			st, err := tx.StoreLock(ctx, pr.WorkspaceID, id)
			if trove.ErrorCode(err) == trove.ENOTFOUND {
				return trove.Errorf(trove.ENOTFOUND, "memory store %s not found", id)
			}
			if err != nil {
				return err
			}
			locked[id] = st
		}
		used := map[string]bool{}
		for _, a := range attach {
			st := locked[a.StoreID]
			if st.ArchivedAt != nil {
				return errArchived(a.StoreID, "archived stores cannot be attached to new sessions")
			}
			se.Stores = append(se.Stores, trove.SessionStore{
				StoreID:      st.ID,
				Access:       a.Access,
				Name:         st.Name,
				Description:  st.Description,
				Instructions: a.Instructions,
				MountPath:    MountRoot + uniqueSlug(trove.Slug(st.Name), used),
			})
		}
		if err := tx.SessionInsert(ctx, se, hashSecret(token)); err != nil {
			return err
		}
		if se.Managed != nil {
			// The environment's workers take the session at once (they
			// download its stores before the agent's first tool runs).
			if _, err := s.EnqueueSessionWorkTx(ctx, tx, se.WorkspaceID, se.Managed.EnvironmentID, se.ID); err != nil {
				return err
			}
		}
		if len(initial) > 0 {
			evs := s.newEvents(se.ID, 0, pr.Actor, now, initial)
			if err := tx.EventInsert(ctx, evs); err != nil {
				return err
			}
			if err := s.runHook(ctx, tx, se, evs); err != nil {
				return err
			}
		}
		out = se
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	if out.Managed != nil {
		s.events.notify(out.ID)
		s.WakeWorkPollers()
	}
	return cloneSession(out), token, nil
}

// uniqueSlug returns slug, or slug-2, slug-3… if taken, and marks it used.
func uniqueSlug(slug string, used map[string]bool) string {
	cand := slug
	for i := 2; used[cand]; i++ {
		cand = slug + "-" + strconv.Itoa(i)
	}
	used[cand] = true
	return cand
}

// GetSession returns a session of the caller's workspace. A session
// credential may read only its own session (EFORBIDDEN otherwise).
// ENOTFOUND for an unknown session.
func (s *Service) GetSession(ctx context.Context, sessionID string) (*trove.Session, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if pr.Session != nil && pr.Session.SessionID != sessionID {
		return nil, trove.Errorf(trove.EFORBIDDEN, "a session credential can only read its own session")
	}
	var out *trove.Session
	err = s.read(ctx, "GetSession", func(tx storage.Tx) error {
		se, err := tx.SessionGet(ctx, pr.WorkspaceID, sessionID)
		if err != nil {
			return err
		}
		out = se
		return s.fillAgents(ctx, tx, []trove.Session{*se})
	})
	if err != nil {
		return nil, err
	}
	return cloneSession(out), nil
}

// ListSessions lists the workspace's sessions newest first (created_at, then
// id, descending), only those with StoreID attached when it is set.
// EINVALID for a limit outside 1..MaxPageSize or a malformed cursor;
// EFORBIDDEN for a session credential.
func (s *Service) ListSessions(ctx context.Context, p trove.ListSessionsParams) (*trove.Page[trove.Session], error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "list sessions"); err != nil {
		return nil, err
	}
	limit, err := s.checkLimit(p.Limit, trove.ViewBasic)
	if err != nil {
		return nil, err
	}
	pos, err := decodePosition(p.Cursor)
	if err != nil {
		return nil, err
	}
	lp := storage.SessionListParams{
		WorkspaceID:     pr.WorkspaceID,
		StoreID:         p.StoreID,
		Limit:           limit + 1,
		AgentID:         p.AgentID,
		AgentVersion:    p.AgentVersion,
		Statuses:        p.Statuses,
		CreatedAt:       p.CreatedAt,
		CreatedAfter:    p.CreatedAfter,
		CreatedBefore:   p.CreatedBefore,
		IncludeArchived: p.IncludeArchived,
	}
	switch p.Order {
	case "", "desc":
		lp.Before = pos
	case "asc":
		lp.Asc, lp.After = true, pos
	default:
		return nil, trove.Errorf(trove.EINVALID, "order must be \"asc\" or \"desc\", got %q", p.Order)
	}
	for _, st := range p.Statuses {
		if !slices.Contains(trove.SessionStatuses, st) {
			return nil, trove.Errorf(trove.EINVALID, "statuses must be among %v, got %q", trove.SessionStatuses, st)
		}
	}
	if p.AgentVersion != 0 && p.AgentID == "" {
		return nil, trove.Errorf(trove.EINVALID, "agent_version needs agent_id")
	}
	var rows []trove.Session
	err = s.read(ctx, "ListSessions", func(tx storage.Tx) error {
		rows, err = tx.SessionList(ctx, lp)
		if err != nil {
			return err
		}
		return s.fillAgents(ctx, tx, rows)
	})
	if err != nil {
		return nil, err
	}
	return positionPage(rows, limit, cloneSession, func(r *trove.Session) (time.Time, string) { return r.CreatedAt, r.ID }), nil
}

// EndSession ends a session: its credential stops authenticating, at once
// on this Service (a cached verification is dropped before EndSession
// returns) and at most Options.AuthCacheTTL later on other Services over the
// same database. It is
// idempotent (an ended session is returned unchanged). A session credential
// may end only its own session (EFORBIDDEN otherwise). ENOTFOUND for an
// unknown session.
func (s *Service) EndSession(ctx context.Context, sessionID string) (*trove.Session, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if pr.Session != nil && pr.Session.SessionID != sessionID {
		return nil, trove.Errorf(trove.EFORBIDDEN, "a session credential can only end its own session")
	}
	// Dropped after the write, whatever its outcome: a lookup that read the
	// session before the commit must not stay cached.
	defer s.authc.dropSession(sessionID)
	var out *trove.Session
	err = s.write(ctx, "EndSession", func(tx storage.Tx) error {
		se, err := tx.SessionLock(ctx, pr.WorkspaceID, sessionID)
		if err != nil {
			return err
		}
		if err := s.terminate(ctx, tx, se, pr.Actor, false); err != nil {
			return err
		}
		out = se
		return nil
	})
	s.events.notify(sessionID)
	if err != nil {
		return nil, err
	}
	return cloneSession(out), nil
}

// cloneSession returns a copy sharing nothing with se, Stores and Metadata
// never nil.
func cloneSession(se *trove.Session) *trove.Session {
	c := *se
	c.Stores = append(make([]trove.SessionStore, 0, len(se.Stores)), se.Stores...)
	c.EndedAt = cloneTime(se.EndedAt)
	c.ArchivedAt = cloneTime(se.ArchivedAt)
	c.Metadata = maps.Clone(se.Metadata)
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	if c.Status == "" {
		c.Status = trove.SessionIdle
	}
	if se.Managed != nil {
		m := *se.Managed
		m.RunningSince = cloneTime(m.RunningSince)
		if m.Budget != nil {
			b := *m.Budget
			m.Budget = &b
		}
		c.Managed = &m
	}
	return &c
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := *t
	return &v
}
