package core

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// JobSessionRun is the job kind of the session agent loop: one job per
// managed session, woken when input its agent must answer is appended.
const JobSessionRun = "session_run"

// SessionRun is a claimed run of a managed session: its ID and the wake
// sequence the claim saw (see ReleaseSessionRun).
type SessionRun struct {
	SessionID string
	WakeSeq   int64
	Attempts  int64
}

// runWakes tells this process's runners that a session run was woken. The
// event hook (inside the append's transaction) sets pending; the append's
// commit notifies the events hub, whose waitAny channel the runners wait on.
type runWakes struct{ pending atomic.Bool }

// SessionRunsWoken returns a channel closed at the next commit of an
// event append in this process; TakeSessionRunWake then says whether one
// of them woke a run. Runners wait on it besides polling (which is what
// another node's wakes need).
func (s *Service) SessionRunsWoken() <-chan struct{} {
	if s.runs.pending.Load() {
		c := make(chan struct{})
		close(c)
		return c
	}
	return s.events.waitAny()
}

// TakeSessionRunWake reports (and clears) whether a run was woken since
// the last call.
func (s *Service) TakeSessionRunWake() bool { return s.runs.pending.Swap(false) }

// WakesAgent reports whether appending events gives a managed session's
// agent something to answer: a user message, a tool result, a custom tool
// result, a confirmation or an interrupt.
func WakesAgent(events []trove.SessionEvent) bool {
	for _, e := range events {
		switch e.Type {
		case trove.EventUserMessage, trove.EventUserToolResult, trove.EventUserCustomToolResult,
			trove.EventUserInterrupt, trove.EventUserToolConfirmation:
			return true
		}
	}
	return false
}

// StartSessionRuns installs the event hook that wakes a managed session's
// run in the same transaction as the input that calls for it. trove serve
// calls it once, before serving requests.
func (s *Service) StartSessionRuns() {
	s.SetEventHook(func(ctx context.Context, tx storage.Tx, se *trove.Session, evs []trove.SessionEvent) error {
		if !WakesAgent(evs) {
			return nil
		}
		if err := tx.JobWake(ctx, JobSessionRun, se.ID, s.now()); err != nil {
			return err
		}
		s.runs.pending.Store(true)
		return nil
	})
}

// WakeSessionRun makes the session's run pending, so a runner takes its
// next turn. No authorization: runners and core itself call it.
func (s *Service) WakeSessionRun(ctx context.Context, sessionID string) error {
	err := s.write(ctx, "WakeSessionRun", func(tx storage.Tx) error { return tx.JobWake(ctx, JobSessionRun, sessionID, s.now()) })
	if err == nil {
		s.runs.pending.Store(true)
		s.events.notify(sessionID)
	}
	return err
}

// ClaimSessionRun takes, for lease, the session run woken longest ago
// whose lease is free or expired (a node that died), for the runner named
// owner; nil when there is none.
func (s *Service) ClaimSessionRun(ctx context.Context, owner string, lease time.Duration) (*SessionRun, error) {
	var run *SessionRun
	err := s.write(ctx, "ClaimSessionRun", func(tx storage.Tx) error {
		now := s.now()
		j, err := tx.JobClaim(ctx, JobSessionRun, owner, now, now.Add(lease))
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			return nil
		}
		if err != nil {
			return err
		}
		run = &SessionRun{SessionID: j.Key, WakeSeq: j.WakeSeq, Attempts: j.Attempts}
		return nil
	})
	return run, err
}

// RenewSessionRun is the runner's heartbeat: it extends owner's lease.
// ECONFLICT when owner lost it.
func (s *Service) RenewSessionRun(ctx context.Context, sessionID, owner string, lease time.Duration) error {
	return s.write(ctx, "RenewSessionRun", func(tx storage.Tx) error {
		_, err := tx.JobRenew(ctx, JobSessionRun, sessionID, owner, s.now().Add(lease))
		return err
	})
}

// ReleaseSessionRun releases owner's lease. With done, the run stops being
// pending unless it was woken after the claim that saw wakeSeq (then a
// runner claims it again). ECONFLICT when owner lost the lease.
func (s *Service) ReleaseSessionRun(ctx context.Context, sessionID, owner string, wakeSeq int64, done bool) error {
	err := s.write(ctx, "ReleaseSessionRun", func(tx storage.Tx) error {
		return tx.JobRelease(ctx, JobSessionRun, sessionID, owner, wakeSeq, done)
	})
	if err == nil && !done {
		s.runs.pending.Store(true)
		s.events.notify(sessionID)
	}
	return err
}

// SessionRunState is what a runner reads of its session: the session, the
// agent version it runs, and (when asked for) its whole transcript.
type SessionRunState struct {
	Session *trove.Session
	Agent   *trove.Agent
	Events  []trove.SessionEvent
	// CreatorRevoked: the API key that created the session was revoked;
	// nothing more runs for it.
	CreatorRevoked bool
}

// LoadSessionRun reads a managed session for its runner, in one snapshot:
// no principal (an operator function, like ClaimDream). With eventsAfter
// >= 0 it also reads the transcript's events after that seq, oldest first
// (0: the whole transcript; a runner that holds the transcript up to some
// seq reads only what was appended since); with eventsAfter < 0, none.
// ENOTFOUND for an unknown or agent-less session.
func (s *Service) LoadSessionRun(ctx context.Context, sessionID string, eventsAfter int64) (*SessionRunState, error) {
	var st SessionRunState
	err := s.read(ctx, "LoadSessionRun", func(tx storage.Tx) error {
		se, err := tx.SessionGet(ctx, "", sessionID)
		if err != nil {
			return err
		}
		if se.Managed == nil {
			return trove.Errorf(trove.ENOTFOUND, "session %s has no agent", sessionID)
		}
		st.Session = se
		if st.Agent, err = tx.AgentGet(ctx, se.WorkspaceID, se.Managed.AgentID, se.Managed.AgentVersion); err != nil {
			return err
		}
		if id := se.CreatedBy.APIKeyID; id != "" {
			keys, err := tx.KeyList(ctx, se.WorkspaceID)
			if err != nil {
				return err
			}
			i := slices.IndexFunc(keys, func(k trove.APIKey) bool { return k.ID == id })
			st.CreatorRevoked = i < 0 || keys[i].RevokedAt != nil
		}
		if eventsAfter < 0 {
			return nil
		}
		st.Events = st.Events[:0]
		for after := eventsAfter; ; {
			page, err := tx.EventList(ctx, storage.EventListParams{SessionID: sessionID, AfterSeq: after, Limit: 1000})
			if err != nil {
				return err
			}
			st.Events = append(st.Events, page...)
			if len(page) < 1000 {
				return nil
			}
			after = page[len(page)-1].Seq
		}
	})
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// AppendSessionRunEvents appends the runner's events (AppendAgentEvents)
// only while owner holds the session's run (renewing the lease) and the
// transcript's newest seq is afterSeq: ECONFLICT otherwise, and nothing
// is appended. This is what makes a model's answer stored at most once per
// turn: a runner that lost its lease, or whose transcript moved on (new
// input), stores nothing.
//
// wakeSeq is the run's wake sequence read in the same transaction. Input
// wakes the run in the transaction that appends it, so every wake it
// counts was for input at or before afterSeq: a runner that has read the
// transcript up to afterSeq and acts on it may release the run with this
// wakeSeq (ReleaseSessionRun), and the run then stays pending only for
// input appended later.
func (s *Service) AppendSessionRunEvents(ctx context.Context, sessionID, owner string, lease time.Duration, afterSeq int64, events []trove.NewSessionEvent) (out []trove.SessionEvent, wakeSeq int64, err error) {
	out, err = s.AppendAgentEvents(ctx, sessionID, events, AgentEventsOptions{Guard: func(ctx context.Context, tx storage.Tx, se *trove.Session) error {
		j, err := tx.JobRenew(ctx, JobSessionRun, sessionID, owner, s.now().Add(lease))
		if err != nil {
			if trove.ErrorCode(err) == trove.ENOTFOUND {
				return trove.Errorf(trove.ECONFLICT, "the run of session %s is not held by this runner", sessionID)
			}
			return err
		}
		n, _, err := tx.EventStats(ctx, sessionID)
		if err != nil {
			return err
		}
		if int64(n) != afterSeq {
			return trove.Errorf(trove.ECONFLICT, "session %s's transcript has %d events, not %d: new input arrived", sessionID, n, afterSeq)
		}
		wakeSeq = j.WakeSeq
		return nil
	}})
	if err != nil {
		return nil, 0, err
	}
	return out, wakeSeq, nil
}

// SessionEventsChanged returns a channel closed at the next commit that
// this Service makes, or that the driver reports (storage.EventNotifier),
// on the session's transcript or row: a runner waiting for a worker's
// tool results takes it before reading the transcript, so a result
// committed between the read and the wait still wakes it.
func (s *Service) SessionEventsChanged(sessionID string) <-chan struct{} {
	return s.events.wait(sessionID)
}
