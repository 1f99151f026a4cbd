package core

import (
	"context"
	"sync"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// JobSessionRun is the job kind of the session agent loop: one job per
// agent session, woken when input the agent must answer is appended.
const JobSessionRun = "session_run"

// SessionRun is a claimed turn of an agent session: the session's ID and
// the wake sequence the claim saw (see ReleaseSessionRun).
type SessionRun struct {
	SessionID string
	WakeSeq   int64
	Attempts  int64
}

// signal is a broadcast: Wait returns a channel closed at the next Notify.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (s *signal) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *signal) Notify() {
	s.mu.Lock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	s.mu.Unlock()
}

// SessionRunsWoken returns a channel closed the next time this process
// wakes a session run (an append of input for an agent, or WakeSessionRun).
// Runners wait on it besides polling, which is what another node's wakes
// need.
func (s *Service) SessionRunsWoken() <-chan struct{} { return s.runs.Wait() }

// wakeSessionRun marks sessionID's run pending in tx; the caller notifies
// s.runs after the commit.
func (s *Service) wakeSessionRun(ctx context.Context, tx storage.Tx, sessionID string) error {
	return tx.JobWake(ctx, JobSessionRun, sessionID, s.now())
}

// WakeSessionRun makes the session's run pending, so a runner takes its
// next turn. No authorization: runners and core itself call it.
func (s *Service) WakeSessionRun(ctx context.Context, sessionID string) error {
	err := s.write(ctx, "WakeSessionRun", func(tx storage.Tx) error { return s.wakeSessionRun(ctx, tx, sessionID) })
	if err == nil {
		s.runs.Notify()
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
		s.runs.Notify()
	}
	return err
}

// WakesAgent reports whether appending events gives the session's agent
// something to answer: a user message, a tool result, a custom tool
// result or an interrupt. Core wakes the session's run in the same
// transaction as such an append.
func WakesAgent(events []trove.SessionEvent) bool {
	for _, e := range events {
		switch e.Type {
		case "user.message", "user.tool_result", "user.custom_tool_result", "user.interrupt", "user.tool_confirmation":
			return true
		}
	}
	return false
}
