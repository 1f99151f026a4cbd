package core

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"sync"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// WorkTokenPrefix starts the session-scoped token a work item's secret
// carries; Authenticate dispatches on it.
const WorkTokenPrefix = "trove_wt_"

// workPollInterval is how often a long poll re-reads the queue for work
// that another node queued (work queued on this node wakes it at once).
const workPollInterval = 100 * time.Millisecond

// workersPollingWindow is how far back WorkStats counts polling workers.
const workersPollingWindow = 30 * time.Second

var _ trove.WorkService = (*Service)(nil)

// workHub wakes long polls when work is queued on this Service.
type workHub struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns a channel closed at the next wake.
func (h *workHub) wait() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ch == nil {
		h.ch = make(chan struct{})
	}
	return h.ch
}

func (h *workHub) wake() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ch != nil {
		close(h.ch)
		h.ch = nil
	}
}

// environmentPrincipal authenticates an environment key by secret hash.
func (s *Service) environmentPrincipal(ctx context.Context, tx storage.Tx, hash []byte) (*trove.Principal, error) {
	k, err := tx.EnvironmentKeyGetByHash(ctx, hash)
	if err != nil {
		return nil, err
	}
	if k.RevokedAt != nil {
		return nil, trove.Errorf(trove.EUNAUTHENTICATED, "environment key %s is revoked", k.ID)
	}
	return &trove.Principal{
		WorkspaceID: k.WorkspaceID,
		Session:     &trove.SessionScope{Stores: map[string]trove.Access{}},
		Environment: &trove.EnvironmentScope{EnvironmentID: k.EnvironmentID, KeyID: k.ID},
	}, nil
}

// workPrincipal authenticates a work item's token: it acts as the item's
// session (a session principal: the session's stores only) while the item
// holds that claim and the session has not ended.
func (s *Service) workPrincipal(ctx context.Context, tx storage.Tx, hash []byte) (*trove.Principal, error) {
	w, err := tx.WorkGetByTokenHash(ctx, hash)
	if err != nil {
		return nil, err
	}
	if w.State == trove.WorkStopped {
		return nil, trove.Errorf(trove.EUNAUTHENTICATED, "work %s is stopped", w.ID)
	}
	se, err := tx.SessionGet(ctx, w.WorkspaceID, w.SessionID)
	if err != nil {
		return nil, err
	}
	if se.EndedAt != nil {
		return nil, trove.Errorf(trove.EUNAUTHENTICATED, "session %s has ended", se.ID)
	}
	scope := &trove.SessionScope{SessionID: se.ID, Stores: make(map[string]trove.Access, len(se.Stores))}
	for _, a := range se.Stores {
		scope.Stores[a.StoreID] = a.Access
	}
	return &trove.Principal{
		WorkspaceID: se.WorkspaceID,
		Actor:       trove.Actor{Type: trove.ActorSession, SessionID: se.ID},
		Session:     scope,
	}, nil
}

// workRole is what a principal may do with an environment's queue.
type workRole int

const (
	roleWorkspace   workRole = iota // an API key of the workspace: everything
	roleEnvironment                 // the environment's own key: the whole queue
	roleSession                     // a session (work token): its own items' get, heartbeat, stop
)

// workAccess checks pr against environmentID and returns its role.
// sessionOK says whether the operation is open to session credentials.
func workAccess(pr *trove.Principal, environmentID string, sessionOK bool) (workRole, error) {
	switch {
	case pr.Environment != nil:
		if pr.Environment.EnvironmentID != environmentID {
			return 0, trove.Errorf(trove.EFORBIDDEN, "this environment key reaches only environment %s's work", pr.Environment.EnvironmentID)
		}
		return roleEnvironment, nil
	case pr.Session != nil:
		if !sessionOK {
			return 0, trove.Errorf(trove.EFORBIDDEN, "a session credential cannot do this; use the environment key")
		}
		return roleSession, nil
	}
	return roleWorkspace, nil
}

func workNotFound(err error, id string) error {
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return trove.Errorf(trove.ENOTFOUND, "work %s not found", id)
	}
	return err
}

// lockWork reads the environment and locks the item, enforcing pr's role.
func (s *Service) lockWork(ctx context.Context, tx storage.Tx, pr *trove.Principal, role workRole, environmentID, workID string) (*trove.WorkItem, error) {
	if _, err := tx.EnvironmentGet(ctx, pr.WorkspaceID, environmentID); err != nil {
		return nil, envNotFound(err, environmentID)
	}
	w, err := tx.WorkLock(ctx, environmentID, workID)
	if err != nil {
		return nil, workNotFound(err, workID)
	}
	if role == roleSession && w.SessionID != pr.Session.SessionID {
		return nil, trove.Errorf(trove.EFORBIDDEN, "a session credential reaches only its own session's work")
	}
	return w, nil
}

// checkKeyLive re-reads an environment principal's key: a long poll stops
// as soon as its key is revoked.
func checkKeyLive(ctx context.Context, tx storage.Tx, pr *trove.Principal) error {
	if pr.Environment == nil {
		return nil
	}
	keys, err := tx.EnvironmentKeyList(ctx, pr.Environment.EnvironmentID)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.ID == pr.Environment.KeyID && k.RevokedAt == nil {
			return nil
		}
	}
	return trove.Errorf(trove.EUNAUTHENTICATED, "environment key %s is revoked", pr.Environment.KeyID)
}

// PollWork implements trove.WorkService.
func (s *Service) PollWork(ctx context.Context, environmentID string, p trove.PollWorkParams) (*trove.WorkItem, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := workAccess(pr, environmentID, false); err != nil {
		return nil, err
	}
	if p.Block < 0 || p.Block > trove.MaxPollBlock {
		return nil, invalidField("block_ms", "must be 1 to %d", trove.MaxPollBlock.Milliseconds())
	}
	if p.ReclaimAfter < 0 {
		return nil, invalidField("reclaim_older_than_ms", "must be at least 1")
	}
	if p.ReclaimAfter == 0 {
		p.ReclaimAfter = trove.DefaultReclaimAfter
	}
	if err := checkText("Anthropic-Worker-ID", p.WorkerID, 0, 256, false); err != nil {
		return nil, err
	}
	deadline := s.clock().Add(p.Block)
	first := true
	for {
		wake := s.work.wait()
		item, secret, err := s.claimWork(ctx, pr, environmentID, p, first)
		if err != nil {
			return nil, err
		}
		first = false
		if item != nil {
			item.Secret = secret
			return item, nil
		}
		left := deadline.Sub(s.clock())
		if left <= 0 {
			return nil, nil
		}
		t := time.NewTimer(min(left, workPollInterval))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// claimWork runs one claim attempt; it returns the claimed item with its
// new secret, or nil when none is claimable.
func (s *Service) claimWork(ctx context.Context, pr *trove.Principal, environmentID string, p trove.PollWorkParams, recordPoller bool) (*trove.WorkItem, string, error) {
	var out *trove.WorkItem
	var secret string
	var dropped []string
	err := s.write(ctx, "PollWork", func(tx storage.Tx) error {
		out, secret, dropped = nil, "", nil
		e, err := tx.EnvironmentGet(ctx, pr.WorkspaceID, environmentID)
		if err != nil {
			return envNotFound(err, environmentID)
		}
		if err := checkKeyLive(ctx, tx, pr); err != nil {
			return err
		}
		if e.ArchivedAt != nil {
			return trove.Errorf(trove.EINVALID, "environment %s is archived", environmentID)
		}
		now := s.now()
		if recordPoller && p.WorkerID != "" {
			if err := tx.WorkPollerSeen(ctx, environmentID, p.WorkerID, now); err != nil {
				return err
			}
		}
		for {
			w, err := tx.WorkClaim(ctx, environmentID, now, now.Add(-p.ReclaimAfter))
			if trove.ErrorCode(err) == trove.ENOTFOUND {
				return nil
			}
			if err != nil {
				return err
			}
			dropped = append(dropped, w.SessionID)
			se, err := tx.SessionGet(ctx, w.WorkspaceID, w.SessionID)
			if err != nil && trove.ErrorCode(err) != trove.ENOTFOUND {
				return err
			}
			if err != nil || se.EndedAt != nil {
				// The session is gone or ended: its work is over.
				stopNow(w, now)
				if err := tx.WorkUpdate(ctx, w); err != nil {
					return err
				}
				if err := tx.WorkSetToken(ctx, w.ID, nil); err != nil {
					return err
				}
				continue
			}
			token := newSecret(WorkTokenPrefix)
			w.State, w.PolledAt, w.AcknowledgedAt, w.StartedAt = trove.WorkQueued, &now, nil, nil
			w.LastHeartbeat, w.LatestHeartbeatAt, w.LeaseExpiresAt, w.LeaseTTL = "", nil, nil, 0
			w.WorkerID, w.Claims = p.WorkerID, w.Claims+1
			if err := tx.WorkUpdate(ctx, w); err != nil {
				return err
			}
			if err := tx.WorkSetToken(ctx, w.ID, hashSecret(token)); err != nil {
				return err
			}
			payload, _ := json.Marshal(map[string]string{"sessions_token": token})
			out, secret = w, base64.RawURLEncoding.EncodeToString(payload)
			return nil
		}
	})
	for _, id := range dropped {
		s.authc.dropSession(id) // the previous claim's token is dead
	}
	if err != nil {
		return nil, "", err
	}
	return out, secret, nil
}

// stopNow moves w to stopped at now and clears its lease.
func stopNow(w *trove.WorkItem, now time.Time) {
	w.State = trove.WorkStopped
	if w.StopRequestedAt == nil {
		w.StopRequestedAt = &now
	}
	w.StoppedAt, w.LeaseExpiresAt = &now, nil
}

// AckWork implements trove.WorkService.
func (s *Service) AckWork(ctx context.Context, environmentID, workID string) (*trove.WorkItem, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	role, err := workAccess(pr, environmentID, false)
	if err != nil {
		return nil, err
	}
	var out *trove.WorkItem
	err = s.write(ctx, "AckWork", func(tx storage.Tx) error {
		w, err := s.lockWork(ctx, tx, pr, role, environmentID, workID)
		if err != nil {
			return err
		}
		switch {
		case w.State == trove.WorkStarting:
			// acknowledged already: idempotent
		case w.State == trove.WorkQueued && w.PolledAt != nil:
			now := s.now()
			exp := now.Add(trove.DefaultLeaseTTL)
			w.State, w.AcknowledgedAt, w.LeaseTTL, w.LeaseExpiresAt = trove.WorkStarting, &now, trove.DefaultLeaseTTL, &exp
			if err := tx.WorkUpdate(ctx, w); err != nil {
				return err
			}
		default:
			return trove.Errorf(trove.ECONFLICT, "work %s is %s; only polled work can be acknowledged", workID, describeState(w))
		}
		out = w
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func describeState(w *trove.WorkItem) string {
	if w.State == trove.WorkQueued && w.PolledAt == nil {
		return "queued and not polled"
	}
	return string(w.State)
}

// GetWork implements trove.WorkService.
func (s *Service) GetWork(ctx context.Context, environmentID, workID string) (*trove.WorkItem, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	role, err := workAccess(pr, environmentID, true)
	if err != nil {
		return nil, err
	}
	var out *trove.WorkItem
	err = s.read(ctx, "GetWork", func(tx storage.Tx) error {
		if _, err := tx.EnvironmentGet(ctx, pr.WorkspaceID, environmentID); err != nil {
			return envNotFound(err, environmentID)
		}
		w, err := tx.WorkGet(ctx, environmentID, workID)
		if err != nil {
			return workNotFound(err, workID)
		}
		if role == roleSession && w.SessionID != pr.Session.SessionID {
			return trove.Errorf(trove.EFORBIDDEN, "a session credential reaches only its own session's work")
		}
		out = w
		return nil
	})
	return out, err
}

// lease returns w's lease as the server holds it.
func lease(w *trove.WorkItem, extended bool) *trove.WorkLease {
	ttl := w.LeaseTTL
	if ttl == 0 {
		ttl = trove.DefaultLeaseTTL
	}
	return &trove.WorkLease{LastHeartbeat: w.LastHeartbeat, LeaseExtended: extended, State: w.State, TTL: ttl}
}

// errLeaseLost is ELEASELOST carrying the server's lease.
func errLeaseLost(l *trove.WorkLease, format string, args ...any) error {
	e := trove.Errorf(trove.ELEASELOST, format, args...)
	e.Lease = l
	return e
}

// HeartbeatWork implements trove.WorkService.
func (s *Service) HeartbeatWork(ctx context.Context, environmentID, workID string, p trove.HeartbeatParams) (*trove.WorkLease, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	role, err := workAccess(pr, environmentID, true)
	if err != nil {
		return nil, err
	}
	ttl := p.DesiredTTL
	if ttl == 0 {
		ttl = trove.DefaultLeaseTTL
	}
	ttl = max(trove.MinLeaseTTL, min(trove.MaxLeaseTTL, ttl))
	var out *trove.WorkLease
	var lost error
	var requeued string
	err = s.write(ctx, "HeartbeatWork", func(tx storage.Tx) error {
		out, lost, requeued = nil, nil, ""
		w, err := s.lockWork(ctx, tx, pr, role, environmentID, workID)
		if err != nil {
			return err
		}
		now := s.now()
		switch w.State {
		case trove.WorkStopping, trove.WorkStopped:
			out = lease(w, false)
			return nil
		case trove.WorkQueued:
			lost = errLeaseLost(lease(w, false), "work %s is queued: its lease was released or reclaimed", workID)
			return nil
		}
		if w.LeaseExpiresAt != nil && !now.Before(*w.LeaseExpiresAt) {
			// The lease lapsed: the item goes back to the queue.
			w.State, w.PolledAt, w.AcknowledgedAt, w.StartedAt = trove.WorkQueued, nil, nil, nil
			w.LastHeartbeat, w.LeaseExpiresAt, w.WorkerID = "", nil, ""
			if err := tx.WorkUpdate(ctx, w); err != nil {
				return err
			}
			if err := tx.WorkSetToken(ctx, w.ID, nil); err != nil {
				return err
			}
			requeued = w.SessionID
			lost = errLeaseLost(lease(w, false), "work %s's lease expired; it was returned to the queue", workID)
			return nil
		}
		want := w.LastHeartbeat
		if want == "" {
			want = trove.NoHeartbeat
		}
		if p.ExpectedLastHeartbeat != want {
			lost = errLeaseLost(lease(w, false), "expected_last_heartbeat does not match: another worker holds work %s's lease", workID)
			return nil
		}
		beat := now.Format(time.RFC3339Nano)
		if beat == w.LastHeartbeat { // two beats in one microsecond: keep the token changing
			now = now.Add(time.Microsecond)
			beat = now.Format(time.RFC3339Nano)
		}
		exp := now.Add(ttl)
		if w.StartedAt == nil {
			w.StartedAt = &now
		}
		w.State, w.LastHeartbeat, w.LatestHeartbeatAt, w.LeaseTTL, w.LeaseExpiresAt = trove.WorkActive, beat, &now, ttl, &exp
		if err := tx.WorkUpdate(ctx, w); err != nil {
			return err
		}
		out = lease(w, true)
		return nil
	})
	if requeued != "" {
		s.authc.dropSession(requeued)
		s.work.wake()
	}
	if err != nil {
		return nil, err
	}
	if lost != nil {
		return nil, lost
	}
	return out, nil
}

// StopWork implements trove.WorkService.
func (s *Service) StopWork(ctx context.Context, environmentID, workID string, force bool) (*trove.WorkItem, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	role, err := workAccess(pr, environmentID, true)
	if err != nil {
		return nil, err
	}
	var out *trove.WorkItem
	err = s.write(ctx, "StopWork", func(tx storage.Tx) error {
		w, err := s.lockWork(ctx, tx, pr, role, environmentID, workID)
		if err != nil {
			return err
		}
		if w.State == trove.WorkStopped {
			return trove.Errorf(trove.ECONFLICT, "work %s is already stopped", workID)
		}
		now := s.now()
		// The worker's own stop (its environment key or the item's token)
		// ends the item; a workspace key's graceful stop asks the worker to
		// stop (it sees stopping on its next heartbeat).
		byWorker := role != roleWorkspace
		if force || byWorker || w.State == trove.WorkQueued {
			stopNow(w, now)
			if err := tx.WorkSetToken(ctx, w.ID, nil); err != nil {
				return err
			}
		} else if w.State != trove.WorkStopping {
			w.State, w.StopRequestedAt = trove.WorkStopping, &now
		}
		if err := tx.WorkUpdate(ctx, w); err != nil {
			return err
		}
		out = w
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out.State == trove.WorkStopped {
		s.authc.dropSession(out.SessionID)
	}
	return out, nil
}

// UpdateWork implements trove.WorkService.
func (s *Service) UpdateWork(ctx context.Context, environmentID, workID string, metadata map[string]*string) (*trove.WorkItem, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	role, err := workAccess(pr, environmentID, false)
	if err != nil {
		return nil, err
	}
	var out *trove.WorkItem
	err = s.write(ctx, "UpdateWork", func(tx storage.Tx) error {
		w, err := s.lockWork(ctx, tx, pr, role, environmentID, workID)
		if err != nil {
			return err
		}
		md := maps.Clone(w.Metadata)
		for k, v := range metadata {
			if v == nil {
				delete(md, k)
			} else {
				md[k] = *v
			}
		}
		if err := s.validateMetadata(md); err != nil {
			return err
		}
		if !maps.Equal(md, w.Metadata) {
			w.Metadata = md
			if err := tx.WorkUpdate(ctx, w); err != nil {
				return err
			}
		}
		out = w
		return nil
	})
	return out, err
}

// ListWork implements trove.WorkService.
func (s *Service) ListWork(ctx context.Context, environmentID string, p trove.ListWorkParams) (*trove.Page[trove.WorkItem], error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := workAccess(pr, environmentID, false); err != nil {
		return nil, err
	}
	limit, err := checkBigLimit(p.Limit, s.limits.DefaultPageSize)
	if err != nil {
		return nil, err
	}
	before, err := decodePosition(p.Cursor)
	if err != nil {
		return nil, err
	}
	var rows []trove.WorkItem
	err = s.read(ctx, "ListWork", func(tx storage.Tx) error {
		if _, err := tx.EnvironmentGet(ctx, pr.WorkspaceID, environmentID); err != nil {
			return envNotFound(err, environmentID)
		}
		rows, err = tx.WorkList(ctx, environmentID, before, limit+1)
		return err
	})
	if err != nil {
		return nil, err
	}
	return positionPage(rows, limit, func(w *trove.WorkItem) *trove.WorkItem { return w },
		func(w *trove.WorkItem) (time.Time, string) { return w.CreatedAt, w.ID }), nil
}

// WorkStats implements trove.WorkService.
func (s *Service) WorkStats(ctx context.Context, environmentID string) (*trove.WorkQueueStats, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := workAccess(pr, environmentID, false); err != nil {
		return nil, err
	}
	var out trove.WorkQueueStats
	err = s.read(ctx, "WorkStats", func(tx storage.Tx) error {
		if _, err := tx.EnvironmentGet(ctx, pr.WorkspaceID, environmentID); err != nil {
			return envNotFound(err, environmentID)
		}
		out, err = tx.WorkStats(ctx, environmentID, s.now().Add(-workersPollingWindow))
		return err
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// EnqueueSessionWork queues work for session sessionID in the self-hosted
// environment environmentID (both of workspaceID) so that a worker serves
// it, unless the session already has work that is not stopped, which it
// returns instead. It needs no principal: the sessions code calls it when a
// session in a self-hosted environment is created, and when a user event
// arrives while the session has no live work. EINVALID for an archived
// environment; ENOTFOUND for an unknown one. Pollers on this Service wake
// at once; pollers on other nodes within their poll interval (100 ms).
func (s *Service) EnqueueSessionWork(ctx context.Context, workspaceID, environmentID, sessionID string) (*trove.WorkItem, error) {
	var out *trove.WorkItem
	var err error
	for range 2 { // a concurrent enqueue of the same session (another node) is ECONFLICT once: read its item
		err = s.write(ctx, "EnqueueSessionWork", func(tx storage.Tx) error {
			var err error
			out, err = s.EnqueueSessionWorkTx(ctx, tx, workspaceID, environmentID, sessionID)
			return err
		})
		if trove.ErrorCode(err) != trove.ECONFLICT {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	s.work.wake()
	return out, nil
}

// EnqueueSessionWorkTx is EnqueueSessionWork inside the caller's write
// transaction, so that a session and its first work item commit together.
// The caller should call WakeWorkPollers after the commit.
func (s *Service) EnqueueSessionWorkTx(ctx context.Context, tx storage.Tx, workspaceID, environmentID, sessionID string) (*trove.WorkItem, error) {
	e, err := tx.EnvironmentGet(ctx, workspaceID, environmentID)
	if err != nil {
		return nil, envNotFound(err, environmentID)
	}
	if e.ArchivedAt != nil {
		return nil, trove.Errorf(trove.EINVALID, "environment %s is archived", environmentID)
	}
	w, err := tx.WorkLiveForSession(ctx, sessionID)
	if err == nil {
		return w, nil
	}
	if trove.ErrorCode(err) != trove.ENOTFOUND {
		return nil, err
	}
	now := s.now()
	w = &trove.WorkItem{ID: trove.NewID(trove.PrefixWork, now), WorkspaceID: workspaceID, EnvironmentID: environmentID,
		SessionID: sessionID, State: trove.WorkQueued, Metadata: map[string]string{}, CreatedAt: now}
	if err := tx.WorkInsert(ctx, w); err != nil {
		return nil, err
	}
	return w, nil
}

// WakeWorkPollers wakes this Service's long polls (after a commit made with
// EnqueueSessionWorkTx).
func (s *Service) WakeWorkPollers() { s.work.wake() }

// LiveSessionWork returns the session's work item that is not stopped, or
// nil when there is none (no principal: for the sessions and runtime code).
func (s *Service) LiveSessionWork(ctx context.Context, sessionID string) (*trove.WorkItem, error) {
	var out *trove.WorkItem
	err := s.read(ctx, "LiveSessionWork", func(tx storage.Tx) error {
		w, err := tx.WorkLiveForSession(ctx, sessionID)
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			return nil
		}
		out = w
		return err
	})
	return out, err
}

// StopSessionWork stops the session's live work at once (the session ended,
// was archived or deleted): its worker's heartbeat then answers stopped and
// its work token dies. A session with no live work is not an error.
func (s *Service) StopSessionWork(ctx context.Context, sessionID string) error {
	err := s.write(ctx, "StopSessionWork", func(tx storage.Tx) error { return s.StopSessionWorkTx(ctx, tx, sessionID) })
	s.authc.dropSession(sessionID)
	return err
}

// StopSessionWorkTx is StopSessionWork inside the caller's write
// transaction.
func (s *Service) StopSessionWorkTx(ctx context.Context, tx storage.Tx, sessionID string) error {
	w, err := tx.WorkLiveForSession(ctx, sessionID)
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return nil
	}
	if err != nil {
		return err
	}
	if w, err = tx.WorkLock(ctx, w.EnvironmentID, w.ID); err != nil {
		return err
	}
	if w.State == trove.WorkStopped {
		return nil
	}
	stopNow(w, s.now())
	if err := tx.WorkUpdate(ctx, w); err != nil {
		return err
	}
	return tx.WorkSetToken(ctx, w.ID, nil)
}
